from django.apps import AppConfig


class OraculoConfig(AppConfig):
    name = "oraculo"
    verbose_name = "Oráculo"

    def ready(self) -> None:
        from oraculo import checks, cors  # noqa: F401  (registers the system checks, connects the CORS check)
