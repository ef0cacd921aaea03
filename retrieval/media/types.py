"""The ``Content-Type`` of media files from our own table: :mod:`mimetypes` reads the host's
files, so one ``.mkv`` was ``application/octet-stream`` on one server and refused under nosniff.
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
