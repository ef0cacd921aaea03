from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Background jobs: a record per job, run through django.tasks on any backend."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "jobs"
