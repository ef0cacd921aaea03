from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    """Campaigns, pooling, assignment, judgements, agreement and exports."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from annotation.judging.media_access import judging_video
        from retrieval.media.access import register_grant

        post_migrate.connect(create_role_groups, sender=self)
        register_grant(judging_video)
        from annotation import jobs  # noqa: F401 - registers the app's job kinds
        from annotation.simulation.replay_service import stored_comparison
        from retrieval.label_sets.figures import WARMERS

        # A new label set's judging-orders comparison is computed with its other figures.
        WARMERS["judging orders"] = lambda dataset, label_set: stored_comparison(dataset, label_set)
        # Every module with statements, so that config's ready fills and checks them all.
        from annotation.campaign_read import export_rows, labels  # noqa: F401
        from annotation.gold import statements as gold_statements  # noqa: F401
        from annotation.judging import statements  # noqa: F401


def create_role_groups(**kwargs) -> None:
    """Keep the role groups and their permissions in place after every migrate."""
    from config import roles

    roles.ensure_groups()
