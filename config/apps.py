"""The project as an app, so that Django starts what the project layer owns."""

from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """Connects the permission cache's receivers when Django starts (not when the backend is
    first imported, which a command or a worker may never do)."""

    name = "config"
    label = "firepool"
    verbose_name = "firepool"

    def ready(self) -> None:
        from config import permission_cache

        permission_cache.connect()
