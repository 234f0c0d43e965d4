from django.apps import AppConfig


class OraculoConfig(AppConfig):
    name = "oraculo"
    verbose_name = "Oráculo"

    def ready(self) -> None:
        from oraculo import cors  # noqa: F401  (connects the CORS origin check)
