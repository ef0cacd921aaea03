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
    """An error when sessions are read from a per-process cache: a logout in one gunicorn
    worker deletes the session there and in the database, and another worker that read it
    before goes on accepting the cookie until its own copy expires. The settings never
    choose this (``config.cache_url.session_engine``); a ``SESSION_ENGINE`` set by hand can."""
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
