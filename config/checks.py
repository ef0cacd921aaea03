"""System checks of the project's own settings (``manage.py check``, ``check --deploy``)."""

from django.conf import settings
from django.core import checks

PER_PROCESS_CACHES = {
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
}
"""Caches each process keeps for itself (or not at all)."""

SESSIONS_IN_THE_CACHE = {
    "django.contrib.sessions.backends.cache",
    "django.contrib.sessions.backends.cached_db",
}


@checks.register(checks.Tags.security, deploy=True)
def sessions_reach_every_worker(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """An error when sessions are read from a per-process cache, where a logout does not reach
    the other workers (only a ``SESSION_ENGINE`` set by hand can choose it)."""
    if settings.SESSION_ENGINE not in SESSIONS_IN_THE_CACHE:
        return []
    backend = settings.CACHES[settings.SESSION_CACHE_ALIAS]["BACKEND"]
    if backend not in PER_PROCESS_CACHES:
        return []
    return [
        checks.Error(
            f"SESSION_ENGINE {settings.SESSION_ENGINE!r} reads sessions from the per-process "
            f"cache {backend!r}: with several workers a logout does not reach the others.",
            hint="Use django.contrib.sessions.backends.db, or a shared cache "
            "(FIREPOOL_CACHE_URL=redis://... or file:///...).",
            id="firepool.E001",
        )
    ]


DATABASE_TASKS = "django_tasks_db.backend.DatabaseBackend"


@checks.register(deploy=True)
def figures_keep_up_with_the_labels(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A warning when jobs run on database workers without a ``live`` queue: figures and
    refits then wait behind long jobs and fall minutes behind the labels."""
    backend = settings.TASKS.get("default", {}).get("BACKEND")
    if backend != DATABASE_TASKS or getattr(settings, "FIREPOOL_LIVE_QUEUE", False):
        return []
    return [
        checks.Warning(
            "Jobs run on database workers without FIREPOOL_LIVE_QUEUE: a campaign's figures "
            "and policy refits wait behind long jobs, so pages can show figures minutes old.",
            hint="Set FIREPOOL_LIVE_QUEUE=1 and run `manage.py db_worker --queue-name live`.",
            id="firepool.W001",
        )
    ]
