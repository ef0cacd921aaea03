"""The response that sends a media file the user may fetch: by this process, or by nginx.

With ``FIREPOOL_MEDIA_SERVER = "django"`` the web worker sends the bytes itself: a strong
ETag and Last-Modified, 304 for ``If-None-Match`` / ``If-Modified-Since`` (Django's
:func:`~django.utils.cache.get_conditional_response`), a single ``Range`` (206) honoured only
while ``If-Range`` names this very file, 416 past the end. Under gunicorn the bytes go out by
``sendfile(2)`` (the range included), but the worker's thread is held until the last byte
has left, so a dozen viewers on a slow link fill a small deployment's threads.
(django-sendfile2's own backend for this case, ``simple``, answers neither Range nor
If-None-Match, so this one is ours.)

With ``"nginx"`` the view only authorises: the answer is an empty response carrying
``X-Accel-Redirect: /protected-media/<name, percent-encoded>`` (django-sendfile2's nginx
backend), the type from :mod:`retrieval.media.types` and the ``Cache-Control`` of
:mod:`retrieval.media.caching`, both of which nginx passes on; nginx then sends the file from
its ``internal`` location and answers Range, If-Range and conditional requests with its own
ETag and Last-Modified (``deploy/nginx/firepool-locations.conf``). The name was checked by
:func:`retrieval.media.access.media_file` first, so the redirect never names a path outside
the media root or its dataset links.
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
    """``length`` bytes of a file from ``first``: read() stops there, fileno() lets gunicorn
    send them with sendfile(2) from the current offset, bounded by Content-Length."""

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
