"""Shared pytest setup: every test gets its own media root and NLTK data stays offline."""

import os

import pytest
from django.test import testcases

# The stored figures' jobs stay off in the servers and workers tests start too (their own
# tests turn them on): a job they queued would be one more for the job tests to count.
os.environ["FIREPOOL_WARM_FIGURES"] = "0"


def _app_serves_media(application):
    """Django's live server answers ``MEDIA_URL`` itself (``_MediaFilesHandler``: no login, no
    Range, no types of ours); the browser tests get the app's own media view instead, as a
    deployment does, so they see its authorisation, ranges and seeking."""
    return application


testcases._MediaFilesHandler = _app_serves_media


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """On SQLite, test in a database file as ``make run`` serves one, not Django's shared-cache
    memory database: there a write beside a job thread's open transaction failed at once with
    "database table is locked" (a table lock ignores the busy timeout), where a file's
    writers queue for up to the configured timeout."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        folder = tmp_path_factory.mktemp("database")
        database.setdefault("TEST", {})["NAME"] = str(folder / "test.sqlite3")


@pytest.fixture(autouse=True, scope="session")
def _quick_password_hashes():
    """Passwords hashed at one iteration in the tests (:mod:`tests.hashers`)."""
    from django.conf import settings
    from django.test.utils import override_settings

    quick = override_settings(
        PASSWORD_HASHERS=[
            "tests.hashers.OneIterationPBKDF2PasswordHasher",
            *settings.PASSWORD_HASHERS,
        ]
    )
    quick.enable()
    yield
    quick.disable()


@pytest.fixture(autouse=True, scope="session")
def _demo_scenes_rendered_once(tmp_path_factory):
    """Demo datasets copy each scene's clip from the session's first render of it
    (:mod:`tests.demo_renders`)."""
    from retrieval.datasets.demo import service
    from tests import demo_renders

    os.environ[demo_renders.STORE] = str(tmp_path_factory.mktemp("demo-renders"))
    service.render_scene_file, rendered = demo_renders.render_scene_file, service.render_scene_file
    yield
    service.render_scene_file = rendered
    os.environ.pop(demo_renders.STORE, None)


@pytest.fixture(autouse=True)
def _isolated_media(settings, tmp_path):
    """Write uploaded and generated media under a per-test temporary directory."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    settings.SENDFILE_ROOT = settings.MEDIA_ROOT  # where X-Accel-Redirect paths start
    return settings.MEDIA_ROOT


@pytest.fixture(autouse=True)
def _isolated_artifacts(settings, tmp_path):
    """Keep model weights, embeddings and indexes of each test apart."""
    settings.FIREPOOL_ARTIFACTS_DIR = tmp_path / "artifacts"
    settings.FIREPOOL_PROXY_CACHE_DIR = tmp_path / "proxy-cache"
    settings.FIREPOOL_JOB_INPUT_DIR = tmp_path / "job-input"
    settings.FIREPOOL_WARM_FIGURES = False  # tested alone (tests/test_stored_figures.py)
    return settings.FIREPOOL_ARTIFACTS_DIR


@pytest.fixture
def browser():
    """Headless Debian Chromium through Playwright (tests using it need a live server)."""
    import os

    from playwright.sync_api import sync_playwright

    from tests.browser_support import launch

    # Playwright's sync API runs an event loop in this thread; the ORM calls the test makes
    # around it are synchronous and safe.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()
        # ORM calls made while Playwright's loop runs get their own connection (asgiref's
        # context-local storage); close it here, or PostgreSQL refuses to drop the test
        # database at the end of the session ("being accessed by other users").
        from django.db import connections

        connections.close_all()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture(autouse=True)
def _empty_cache():
    """Start each test with an empty default cache: rate-limit counters (run uploads, failed
    logins) are kept per user id there, and ids repeat from test to test."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


DATABASE_FIXTURES = {"db", "transactional_db", "live_server", "django_db_reset_sequences"}


def _uses_the_database(item: pytest.Item) -> bool:
    return item.get_closest_marker("django_db") is not None or bool(
        DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
    )


def pytest_collection_modifyitems(config, items):
    """On PostgreSQL, run only the tests that reach the database.

    ``make test`` runs the suite on SQLite and again on PostgreSQL; a test that never touches
    the database (the metrics, the encoders' training, the parsers: 899 of 2,117 tests, 13.6
    minutes of a busy machine) gives the same answer on both, so the second run leaves it out
    and the suite ends minutes sooner. A test with a ``skipif`` stays: it may be one that runs
    only on PostgreSQL. ``FIREPOOL_TEST_EVERY_DATABASE=1`` keeps them all.
    """
    from django.db import connection

    if connection.vendor != "postgresql" or os.environ.get("FIREPOOL_TEST_EVERY_DATABASE"):
        return
    kept, left = [], []
    for item in items:
        if _uses_the_database(item) or item.get_closest_marker("skipif") is not None:
            kept.append(item)
        else:
            left.append(item)
    if left:
        items[:] = kept
        config.hook.pytest_deselected(items=left)
