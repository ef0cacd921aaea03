"""The response that sends a media file the user may fetch, with ``FIREPOOL_MEDIA_SERVER``:
``"django"`` sends it here (ETag, 304, a single Range honoured while If-Range holds, 416; by
sendfile(2) under gunicorn, which django-sendfile2's ``simple`` backend does not answer), and
``"nginx"`` answers with an ``X-Accel-Redirect`` to the already checked name.

Caching (RFC 9110 §8.8, §13.1.5; RFC 9111 §5.2): files under ``derived/`` are named by a
fingerprint of their source, so browsers keep them a year (``immutable``); others they
revalidate (``no-cache``); both ``private``. The ``Content-Type`` comes from our own table:
:mod:`mimetypes` reads the host's files, so one ``.mkv`` was ``application/octet-stream`` on one
server and refused under nosniff.
"""

import os
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.http import FileResponse, HttpRequest, HttpResponse
from django.utils.cache import get_conditional_response
from django.utils.http import http_date, parse_http_date_safe
from django_sendfile import sendfile

from retrieval.media.byte_range import UnsatisfiableRange, parse_range

BLOCK = 64 * 1024
"""Bytes per read where the server cannot use sendfile(2) (runserver, TLS in gunicorn)."""
DERIVED_DIR = "derived"
"""The media root's folder of fingerprinted copies (browser copies, segment clips, posters)."""
IMMUTABLE_SECONDS = 365 * 24 * 3600
MEDIA_TYPES: dict[str, str] = {
    # Containers of the video benchmarks (MSR-VTT, MSVD, VATEX, DiDeMo, ActivityNet, ...).
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",  # MPEG-4 with Apple's extension: browsers play it as mp4
    ".mov": "video/quicktime",
    ".webm": "video/webm",
    ".mkv": "video/x-matroska",
    ".avi": "video/x-msvideo",
    ".ogv": "video/ogg",
    ".mpg": "video/mpeg",
    ".mpeg": "video/mpeg",
    ".ts": "video/mp2t",
    ".m2ts": "video/mp2t",
    ".mts": "video/mp2t",
    ".3gp": "video/3gpp",
    ".flv": "video/x-flv",
    ".wmv": "video/x-ms-wmv",
    # Posters and thumbnails.
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".webp": "image/webp",
    # Features: numpy arrays, bytes for a script, never something a browser renders.
    ".npy": "application/octet-stream",
}


def media_type(name: str) -> str:
    """The ``Content-Type`` for media file ``name`` (by its last suffix, any case)."""
    return MEDIA_TYPES.get(PurePosixPath(name).suffix.lower(), "application/octet-stream")


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


def media_response(request: HttpRequest, name: str, path: Path) -> HttpResponse:
    """The answer to a GET or HEAD of media file ``name`` (found at ``path``), already allowed."""
    if settings.FIREPOOL_MEDIA_SERVER == "nginx":
        # The unresolved path under the media root: a dataset's files are reached through its
        # datasets/<name> link, which nginx's alias follows as this check did.
        response = sendfile(
            request,
            Path(settings.MEDIA_ROOT) / name,
            mimetype=media_type(name),
            attachment_filename=False,
            content_length=0,  # this response has no body; nginx sends the file's own length
        )
        response["Cache-Control"] = cache_control(name)
        return response
    stat = path.stat()
    etag, modified = strong_etag(stat), int(stat.st_mtime)
    headers = {
        "ETag": etag,
        "Last-Modified": http_date(modified),
        "Cache-Control": cache_control(name),
        "Accept-Ranges": "bytes",
    }
    unconditional = HttpResponse(headers=headers)
    answer = get_conditional_response(
        request, etag=etag, last_modified=modified, response=unconditional
    )
    if answer is not unconditional:  # 304 Not Modified (or 412 for a failed If-Match)
        return answer
    holds = if_range_holds(request.headers.get("If-Range"), etag, modified)
    try:
        byte_range = parse_range(request.headers.get("Range") if holds else None, stat.st_size)
    except UnsatisfiableRange:
        return HttpResponse(
            status=416, headers={**headers, "Content-Range": f"bytes */{stat.st_size}"}
        )
    first, length = (0, stat.st_size)
    if byte_range is not None:
        first, length = byte_range.first, byte_range.length
        headers["Content-Range"] = byte_range.content_range
    response = FileResponse(
        _Slice(path, first, length),
        status=200 if byte_range is None else 206,
        content_type=media_type(name),
        headers={**headers, "Content-Length": str(length)},
    )
    response.block_size = BLOCK
    return response


class _Slice:
    """``length`` bytes of a file from ``first``, readable, or by sendfile(2) through fileno()."""

    def __init__(self, path: Path, first: int, length: int):
        self._file = open(path, "rb")  # noqa: SIM115 (closed by FileResponse)
        self._file.seek(first)
        self._left = length

    def read(self, size: int = -1) -> bytes:
        wanted = self._left if size < 0 else min(size, self._left)
        block = self._file.read(wanted) if wanted > 0 else b""
        self._left -= len(block)
        return block

    def fileno(self) -> int:
        return self._file.fileno()

    def close(self) -> None:
        self._file.close()
