from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    """Campaigns, pooling, assignment, judgements, agreement and exports."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"
    verbose_name = "Annotation"
