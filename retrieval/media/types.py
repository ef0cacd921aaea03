"""The ``Content-Type`` of every media file a benchmark ships, from our own table.

Python's :mod:`mimetypes` reads the host's ``/etc/mime.types`` (and the Windows registry),
so the same ``.mkv`` was ``video/x-matroska`` on one server and ``application/octet-stream``
on another, and browsers refused to play it under ``X-Content-Type-Options: nosniff``. The
table here is the only source, in the Django view and (passed on in the response) behind
nginx; a name it does not know is ``application/octet-stream``.
"""

from pathlib import PurePosixPath

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

UNKNOWN = "application/octet-stream"


def media_type(name: str) -> str:
    """The ``Content-Type`` for media file ``name`` (by its last suffix, any case)."""
    return MEDIA_TYPES.get(PurePosixPath(name).suffix.lower(), UNKNOWN)
