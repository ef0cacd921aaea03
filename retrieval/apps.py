from django.apps import AppConfig
from django.conf import settings
from django.urls import register_converter

from retrieval.datasets.names import NameConverter
from retrieval.formats import records


class RetrievalConfig(AppConfig):
    """Benchmarks, models, runs, label sets and scoring."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "retrieval"
    verbose_name = "Retrieval"

    def ready(self) -> None:
        from retrieval.proxies import wordnet

        wordnet.register_nltk_path()
        # Each concept's job kinds, registered as their modules load.
        from retrieval.datasets import jobs as _datasets  # noqa: F401
        from retrieval.encoders import jobs as _encoders  # noqa: F401
        from retrieval.label_sets import jobs as _label_sets  # noqa: F401
        from retrieval.media import jobs as _media  # noqa: F401
        from retrieval.proxies import jobs as _proxies  # noqa: F401
        from retrieval.scoring import jobs as _scoring  # noqa: F401
        from retrieval.search import jobs as _search  # noqa: F401

        # ``<name:...>`` in the URL patterns: any stored name, as one path segment.
        register_converter(NameConverter, "name")
        records.read_upload_limit_from(upload_limit_setting)


def upload_limit_setting() -> int:
    """``settings.FIREPOOL_MAX_UPLOAD_BYTES`` read at each call (tests change it), else the
    environment's."""
    limit = getattr(settings, "FIREPOOL_MAX_UPLOAD_BYTES", None)
    return records.environment_upload_limit() if limit is None else int(limit)
