"""Turn ``FIREPOOL_CACHE_URL`` (``locmem://``, ``db://<table>``, ``redis://host:6379/0`` or
``file:///path``) into a ``CACHES`` entry, and pick the session engine that is safe with it."""

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
    """The ``CACHES["default"]`` dict for ``url``."""
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
    """Cached database sessions when ``cache`` is shared and faster than the database, else
    database sessions: a per-process cache kept a logged-out session for 330 s and more."""
    engine = "cached_db" if cache["BACKEND"] in SHARED_AND_FAST else "db"
    return f"django.contrib.sessions.backends.{engine}"
