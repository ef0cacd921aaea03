from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    """Benchmarks, models, runs, label sets and scoring."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "retrieval"
    verbose_name = "Retrieval"

    def ready(self) -> None:
        from retrieval import wordnet

        wordnet.register_nltk_path()
        from retrieval import jobs  # noqa: F401 - registers the app's job kinds

        _register_converters()


def _register_converters() -> None:
    """``<name:...>`` in the URL patterns: any stored name, as one path segment."""
    from django.urls import register_converter

    from retrieval.names import NameConverter

    register_converter(NameConverter, "name")
