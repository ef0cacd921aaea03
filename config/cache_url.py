"""Turn ``FIREPOOL_CACHE_URL`` into a Django ``CACHES`` entry.

The cache holds login-failure counters, short-lived media grants and sessions (Django's
cached database sessions), so every web worker must share it for the limits, and logouts, to
hold: ``locmem://`` (the default) is per process and right for ``runserver`` and a single
worker; a gunicorn deployment with several workers uses
``db://<table>`` (after ``manage.py createcachetable``), ``redis://host:6379/0`` (needs the
``redis`` package) or ``file:///var/cache/firepool`` on one machine.
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
