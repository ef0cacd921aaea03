"""Validators and caching rules of media responses (RFC 9110 §8.8, §13.1.5; RFC 9111 §5.2):
files under ``derived/`` are named by a fingerprint of their source, so browsers keep them a
year (``immutable``); others they revalidate (``no-cache``); both ``private``.
"""

import os

from django.utils.http import parse_http_date_safe

DERIVED_DIR = "derived"
"""The media root's folder of fingerprinted copies (browser copies, segment clips, posters)."""

IMMUTABLE_SECONDS = 365 * 24 * 3600


def strong_etag(stat: os.stat_result) -> str:
    """A strong entity tag from size, mtime (ns) and inode, so a replaced or rewritten file
    gets a new one and a resumed download never mixes two versions' bytes."""
    return f'"{stat.st_size:x}-{stat.st_mtime_ns:x}-{stat.st_ino:x}"'


def cache_control(name: str) -> str:
    """``Cache-Control`` of media file ``name``: a year and immutable under ``derived/``."""
    if name.split("/", 1)[0] == DERIVED_DIR:
        return f"private, max-age={IMMUTABLE_SECONDS}, immutable"
    return "private, no-cache"


def if_range_holds(header: str | None, etag: str, last_modified: int) -> bool:
    """True when a ``Range`` may be honoured: no ``If-Range``, or it names this very file
    (RFC 9110 §13.1.5: a strong entity tag, or a date equal to ``Last-Modified``)."""
    if header is None:
        return True
    value = header.strip()
    if value.startswith(('"', "W/")):
        return value == etag and not etag.startswith("W/")
    date = parse_http_date_safe(value)
    return date is not None and date == last_modified
