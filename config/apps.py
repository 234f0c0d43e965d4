from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """The project itself as an app, for what belongs to neither Biblioteca nor Oráculo (ensure_superuser)."""

    name = "config"
    verbose_name = "Project"
