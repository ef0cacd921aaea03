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
        from retrieval import jobs  # noqa: F401 - registers the app's job kinds

        # ``<name:...>`` in the URL patterns: any stored name, as one path segment.
        register_converter(NameConverter, "name")
        records.read_upload_limit_from(upload_limit_setting)


def upload_limit_setting() -> int:
    """``settings.FIREPOOL_MAX_UPLOAD_BYTES`` read at each call (tests change it), else the
    environment's."""
    limit = getattr(settings, "FIREPOOL_MAX_UPLOAD_BYTES", None)
    return records.environment_upload_limit() if limit is None else int(limit)
