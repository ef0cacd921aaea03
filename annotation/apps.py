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
        # Each concept's job kinds, registered as their modules load.
        from annotation.active import jobs as _active  # noqa: F401
        from annotation.campaign_read import jobs as _read  # noqa: F401
        from annotation.campaigns import jobs as _campaigns  # noqa: F401
        from annotation.gold import jobs as _gold  # noqa: F401
        from annotation.policy import jobs as _policy  # noqa: F401
        from annotation.prediction import jobs as _prediction  # noqa: F401
        from annotation.simulation import jobs as _simulation  # noqa: F401
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
