"""The response that sends a media file the user may fetch, with ``FIREPOOL_MEDIA_SERVER``:
``"django"`` sends it here (ETag, 304, a single Range honoured while If-Range holds, 416; by
sendfile(2) under gunicorn, which django-sendfile2's ``simple`` backend does not answer), and
``"nginx"`` answers with an ``X-Accel-Redirect`` to the already checked name.
"""

from pathlib import Path

from django.conf import settings
from django.http import FileResponse, HttpRequest, HttpResponse
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from django_sendfile import sendfile

from retrieval.media.byte_range import UnsatisfiableRange, parse_range
from retrieval.media.caching import cache_control, if_range_holds, strong_etag
from retrieval.media.types import media_type

BLOCK = 64 * 1024
"""Bytes per read where the server cannot use sendfile(2) (runserver, TLS in gunicorn)."""


def media_response(request: HttpRequest, name: str, path: Path) -> HttpResponse:
    """The answer to a GET or HEAD of media file ``name`` (found at ``path``), already allowed."""
    if settings.FIREPOOL_MEDIA_SERVER == "nginx":
        return _front_server_response(request, name)
    return _django_response(request, name, path)


def _front_server_response(request: HttpRequest, name: str) -> HttpResponse:
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


def _django_response(request: HttpRequest, name: str, path: Path) -> HttpResponse:
    stat = path.stat()
    etag, modified = strong_etag(stat), int(stat.st_mtime)
    validators = {
        "ETag": etag,
        "Last-Modified": http_date(modified),
        "Cache-Control": cache_control(name),
        "Accept-Ranges": "bytes",
    }
    unconditional = HttpResponse(headers=validators)
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
            status=416, headers={**validators, "Content-Range": f"bytes */{stat.st_size}"}
        )
    first, length = (
        (0, stat.st_size) if byte_range is None else (byte_range.first, byte_range.length)
    )
    response = FileResponse(_Slice(path, first, length), content_type=media_type(name))
    response.block_size = BLOCK
    if byte_range is not None:
        response.status_code = 206
        response["Content-Range"] = byte_range.content_range
    response["Content-Length"] = str(length)
    for header, value in validators.items():
        response[header] = value
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
