"""The project as an app, so that Django starts what the project layer owns."""

from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """Connects the permission cache's receivers when Django starts (not when the backend is
        first imported, which a command or a worker may never do), and fills every registered
        statement, so a field renamed under one stops the start; registers the project's system
    checks (:mod:`config.checks`)."""

    name = "config"
    label = "firepool"
    verbose_name = "firepool"

    def ready(self) -> None:
        from config import checks, permission_cache, raw_sql  # noqa: F401 - checks registers

        permission_cache.connect()
        # Last of the apps: every app has registered its statements by now.
        raw_sql.check_registry()
