"""Validators and caching rules of media responses (RFC 9110 §8.8, §13.1.5; RFC 9111 §5.2).

A media file is never changed in place by firepool: an import writes new files and a browser
copy made from a video lies under ``derived/`` at a name keyed by a fingerprint of what it was
made from, so a changed source gets a new name. Browsers may therefore keep anything under
``derived/`` for a year without asking again (``immutable``); every other file they keep but
revalidate on each use (``no-cache``), which costs a 304 and no bytes while it is unchanged.
Both are ``private``: a file is only for users allowed to see it, never for a shared cache.
"""

import os

from django.utils.http import parse_http_date_safe

DERIVED_DIR = "derived"
"""The media root's folder of fingerprinted copies (browser copies, segment clips, posters)."""

IMMUTABLE_SECONDS = 365 * 24 * 3600


def strong_etag(stat: os.stat_result) -> str:
    """A strong entity tag for the file ``stat`` describes: size, mtime (ns) and inode.

    A file replaced by another (a new inode) or rewritten in place (a new mtime or size) gets
    a new tag, so a cached copy or a resumed download never mixes two versions' bytes.
    """
    return f'"{stat.st_size:x}-{stat.st_mtime_ns:x}-{stat.st_ino:x}"'


def cache_control(name: str) -> str:
    """``Cache-Control`` of media file ``name``: a year and immutable under ``derived/``."""
    if name.split("/", 1)[0] == DERIVED_DIR:
        return f"private, max-age={IMMUTABLE_SECONDS}, immutable"
    return "private, no-cache"


def if_range_holds(header: str | None, etag: str, last_modified: int) -> bool:
    """True when a ``Range`` may be honoured: no ``If-Range``, or it names this very file.

    RFC 9110 §13.1.5: an entity tag matches only by strong comparison (a weak tag never
    does); an HTTP-date only when it equals ``Last-Modified`` exactly. Otherwise the whole
    file is sent (200), so a client resuming a download of an older version starts over.
    """
    if header is None:
        return True
    value = header.strip()
    if value.startswith(('"', "W/")):
        return value == etag and not etag.startswith("W/")
    date = parse_http_date_safe(value)
    return date is not None and date == last_modified
