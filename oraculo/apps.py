from django.apps import AppConfig


class OraculoConfig(AppConfig):
    name = "oraculo"
    verbose_name = "Oráculo"
