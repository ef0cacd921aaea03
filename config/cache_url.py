"""Turn ``FIREPOOL_CACHE_URL`` into a Django ``CACHES`` entry, and pick the session engine
that is safe with it.

The cache holds only what may be forgotten or kept apart per process: short-lived media
grants (a yes remembered per user and file). ``locmem://`` (the default) is per process;
``db://<table>`` (after ``manage.py createcachetable``), ``redis://host:6379/0`` (needs the
``redis`` package) or ``file:///var/cache/firepool`` are shared by every worker. Login and
upload counts are in the database whatever the cache (:mod:`config.attempt_counts`), and
sessions are read from the cache only when it is shared and is not the database again
(:func:`session_engine`), so no choice here lets a logout or a limit reach one worker only.
"""

from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

DEFAULT_TABLE = "firepool_cache"
BACKENDS = {
    "locmem": "django.core.cache.backends.locmem.LocMemCache",
    "db": "django.core.cache.backends.db.DatabaseCache",
    "redis": "django.core.cache.backends.redis.RedisCache",
    "rediss": "django.core.cache.backends.redis.RedisCache",
    "file": "django.core.cache.backends.filebased.FileBasedCache",
}


def cache_from_url(url: str) -> dict:
    """The ``CACHES["default"]`` dict for ``url`` (see the module docstring for the schemes)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in BACKENDS:
        raise ImproperlyConfigured(
            f"FIREPOOL_CACHE_URL {url!r}: the scheme must be one of {', '.join(BACKENDS)}"
        )
    config = {"BACKEND": BACKENDS[scheme], "KEY_PREFIX": "firepool"}
    if scheme == "locmem":
        config["LOCATION"] = parts.netloc or "firepool"
    elif scheme == "db":
        config["LOCATION"] = parts.netloc or parts.path.strip("/") or DEFAULT_TABLE
    elif scheme == "file":
        if parts.netloc or not parts.path.startswith("/"):
            raise ImproperlyConfigured(f"FIREPOOL_CACHE_URL {url!r}: use file:///absolute/path")
        config["LOCATION"] = parts.path
    else:
        config["LOCATION"] = url
    return config


SHARED_AND_FAST = {BACKENDS["redis"], BACKENDS["file"]}
"""Caches every worker of a machine shares that answer without a database statement."""


def session_engine(cache: dict) -> str:
    """Django's cached database sessions when ``cache`` is shared and faster than the
    database (Redis, a file cache), else the database sessions: a per-process cache would
    keep a session that a logout in another worker deleted (it did, for 330 s and more),
    and the database cache would read a table instead of a table."""
    engine = "cached_db" if cache["BACKEND"] in SHARED_AND_FAST else "db"
    return f"django.contrib.sessions.backends.{engine}"
