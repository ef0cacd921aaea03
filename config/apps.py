"""The project as an app, so that Django starts what the project layer owns."""

from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """Registers the request user's statement, fills every registered statement (a renamed
    field stops the start) and registers the system checks, when Django starts."""

    name = "config"
    label = "firepool"
    verbose_name = "firepool"

    def ready(self) -> None:
        from config import checks, permission_cache, raw_sql  # noqa: F401 - checks registers

        permission_cache.user_statement()  # registered once the user model is known
        # Last of the apps: every app has registered its statements by now.
        raw_sql.check_registry()
