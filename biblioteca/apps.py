from django.apps import AppConfig


class BibliotecaConfig(AppConfig):
    name = "biblioteca"
    verbose_name = "Biblioteca"

    def ready(self) -> None:
        from biblioteca import checks  # noqa: F401  (registers the system checks)
        from config.replicas import connect_signals

        connect_signals()
