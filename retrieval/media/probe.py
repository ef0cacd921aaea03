"""What a video file is, read once at import with PyAV (first frame and last second decoded,
to catch truncation), and why browsers would need a copy of it (:func:`needs_copy`)."""

from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import av

FINGERPRINT_BYTES = 64 * 1024
"""Bytes hashed at each end of a file for its fingerprint."""
TAIL_SECONDS = 1.0
"""How much of a file's end :func:`probe` decodes to find a truncated file."""
UNSEEKABLE_SECONDS = 60.0
"""A seek towards the end that lands further back than this did not move: a file without an
index, whose end is then taken on trust rather than decoded from the start."""
SPAN_SLACK = 0.05
"""Seconds a segment's ends may miss its file's (container durations round to the frame): a
span that covers its file within this at both ends is the whole file."""
BROWSER_VIDEO = {"mp4": frozenset({"h264"}), "webm": frozenset({"vp8", "vp9", "av1"})}
BROWSER_AUDIO = {"mp4": frozenset({"aac", "mp3"}), "webm": frozenset({"opus", "vorbis"})}
BROWSER_PIXELS = frozenset({"yuv420p", "yuvj420p"})
CODEC_NAMES = {
    "mpeg4": "MPEG-4 Part 2",
    "hevc": "HEVC",
    "prores": "ProRes",
    "mjpeg": "MJPEG",
    "h264": "H.264",
}


class ProbeError(ValueError):
    """The file is not a video that decodes; the message says why."""


@dataclass(frozen=True)
class CopySettings:
    """A browser copy's limits and encoder settings (``key()`` names them) and ``margin``, the
    seconds a segment clip keeps before and after its span."""

    max_height: int = 720
    max_fps: float = 30.0
    crf: int = 23
    preset: str = "veryfast"
    audio_bitrate: int = 128_000
    margin: float = 0.5

    def key(self) -> str:
        """A stable text of every setting that changes the bytes of a copy."""
        return json.dumps(asdict(self), sort_keys=True)


@dataclass(frozen=True)
class Probe:
    """The facts of one video file (``moov_first``: None if not ISO media; ``fingerprint``:
    see :func:`fingerprint`)."""

    container: str
    video_codec: str
    pix_fmt: str
    width: int
    height: int
    fps: float
    duration: float
    rotation: int
    audio_codec: str
    audio_channels: int
    audio_rate: int
    size: int
    moov_first: bool | None
    fingerprint: str

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Probe:
        names = {f.name for f in fields(cls)}
        return cls(**{name: value for name, value in data.items() if name in names})


def clock(seconds: float) -> str:
    """``0:21``, ``1:00:00``: seconds as a clock, rounded down to whole seconds."""
    whole = int(max(0.0, seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def fingerprint(path: Path | str) -> str:
    """The size and a hash of the first and last 64 KiB, which names a file's copies (no
    mtime, so a dataset moved elsewhere keeps them)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        digest.update(str(size).encode())
        handle.seek(0)
        digest.update(handle.read(FINGERPRINT_BYTES))
        handle.seek(max(0, size - FINGERPRINT_BYTES))
        digest.update(handle.read(FINGERPRINT_BYTES))
    return digest.hexdigest()[:32]


def iso_layout(path: Path | str) -> tuple[str, bool] | None:
    """(major brand, whether ``moov`` comes before ``mdat``) of an ISO media file (MP4, MOV),
    read from its top-level box headers only; None for any other file."""
    brand = ""
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        offset = 0
        while offset + 8 <= size:
            handle.seek(offset)
            header = handle.read(16)
            if len(header) < 8:
                break
            length, kind = struct.unpack(">I4s", header[:8])
            if length == 1 and len(header) == 16:
                length = struct.unpack(">Q", header[8:16])[0]
            elif length == 0:
                length = size - offset
            if kind == b"ftyp":
                brand = header[8:12].decode("latin-1")
            elif kind == b"moov":
                return brand, True
            elif kind == b"mdat":
                return brand, False
            elif offset == 0:
                return None
            if length < 8:
                break
            offset += length
    return (brand, False) if brand else None


def container_name(path: Path, format_name: str, layout: tuple[str, bool] | None) -> str:
    """``mp4``, ``mov``, ``webm``, ``matroska``, ``avi`` or FFmpeg's demuxer name."""
    if layout is not None:
        return "mov" if layout[0] == "qt  " else "mp4"
    if "matroska" in format_name:
        with open(path, "rb") as handle:
            head = handle.read(64)
        return "webm" if b"\x42\x82\x84webm" in head else "matroska"
    return format_name.split(",")[0]


def probe(path: Path | str) -> Probe:
    """Probe the video file at ``path``; :class:`ProbeError` if it does not decode or is
    truncated (its last :data:`TAIL_SECONDS` do not decode)."""
    path = Path(path)
    try:
        return _probe(path)
    except (av.FFmpegError, OSError, UnicodeDecodeError, struct.error) as exc:
        raise ProbeError(_reason(exc)) from None


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return text.split(": '/")[0].strip()


def _probe(path: Path) -> Probe:
    size = path.stat().st_size
    if size == 0:
        raise ProbeError("empty file")
    layout = iso_layout(path)
    try:
        opened = av.open(str(path), metadata_errors="ignore")
    except (av.FFmpegError, OSError) as exc:
        raise ProbeError(f"does not open: {_reason(exc)}") from None
    with opened as container:
        if not container.streams.video:
            raise ProbeError("no video stream")
        stream = container.streams.video[0]
        audio = container.streams.audio[0] if container.streams.audio else None
        duration = _duration(container, stream)
        try:
            first = next(iter(container.decode(stream)), None)
        except av.FFmpegError as exc:
            raise ProbeError(f"its first frame does not decode: {_reason(exc)}") from None
        if first is None:
            raise ProbeError("no video frame decodes")
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        fps = float(rate) if rate else 0.0
        try:
            last = _decoded_until(container, stream, duration, first)
        except av.FFmpegError as exc:
            raise ProbeError(
                f"its last {TAIL_SECONDS:g} s of {duration:.2f} s do not decode "
                f"({_reason(exc)}): truncated?"
            ) from None
        if duration > 0 and last < duration - max(TAIL_SECONDS / 2, 3 / max(fps, 1.0)):
            raise ProbeError(f"truncated: frames decode up to {last:.2f} s of its {duration:.2f} s")
        codec = stream.codec_context
        return Probe(
            container=container_name(path, container.format.name, layout),
            video_codec=codec.codec.canonical_name,
            pix_fmt=codec.pix_fmt or first.format.name,
            width=int(codec.width or first.width),
            height=int(codec.height or first.height),
            fps=round(fps, 3),
            duration=round(duration or last, 3),
            rotation=int(first.rotation or 0),
            audio_codec=audio.codec_context.codec.canonical_name if audio is not None else "",
            audio_channels=int(audio.codec_context.channels) if audio is not None else 0,
            audio_rate=int(audio.codec_context.sample_rate or 0) if audio is not None else 0,
            size=size,
            moov_first=layout[1] if layout is not None else None,
            fingerprint=fingerprint(path),
        )


def _duration(container, stream) -> float:
    """The stated duration in seconds (the container's, else the stream's; 0 if unknown)."""
    if container.duration:
        return container.duration / av.time_base
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    return 0.0


def _frame_end(frame, fps: float) -> float:
    """When a decoded frame stops showing, in seconds."""
    start = frame.time if frame.time is not None else 0.0
    if frame.duration and frame.time_base:
        return start + float(frame.duration * frame.time_base)
    return start + (1.0 / fps if fps else 0.0)


def _decoded_until(container, stream, duration: float, first) -> float:
    """The end time of the last frame that decodes in the file's final stretch."""
    rate = stream.average_rate or stream.guessed_rate
    fps = float(rate) if rate else 0.0
    last = _frame_end(first, fps)
    begin = duration - TAIL_SECONDS
    sought = begin > last and bool(stream.time_base)
    if sought:
        container.seek(int(begin / stream.time_base), stream=stream, backward=True)
    for frame in container.decode(stream):
        if sought and frame.time is not None and frame.time < begin - UNSEEKABLE_SECONDS:
            return duration  # the seek did not move (no index): the end cannot be checked cheaply
        sought = False
        last = max(last, _frame_end(frame, fps))
    return last


def needs_copy(probed: Probe, settings: CopySettings) -> tuple[str, ...]:
    """Why browsers need a copy of the probed file (empty: every browser plays it as it is)."""
    reasons: list[str] = []
    container = probed.container
    if container not in BROWSER_VIDEO:
        reasons.append(f"{container.upper()} container")
    else:
        if probed.video_codec not in BROWSER_VIDEO[container]:
            codec = CODEC_NAMES.get(probed.video_codec, probed.video_codec)
            reasons.append(f"{codec} video in {container.upper()}")
        if probed.audio_codec and probed.audio_codec not in BROWSER_AUDIO[container]:
            reasons.append(f"{probed.audio_codec} audio in {container.upper()}")
    if probed.pix_fmt not in BROWSER_PIXELS:
        reasons.append(f"{probed.pix_fmt} pixels")
    if probed.moov_first is False:
        reasons.append("index (moov) at the end")
    if min(probed.width, probed.height) > settings.max_height:
        reasons.append(f"{min(probed.width, probed.height)}p above {settings.max_height}p")
    if probed.fps > settings.max_fps + 0.01:
        reasons.append(f"{probed.fps:g} fps above {settings.max_fps:g}")
    return tuple(reasons)


def check_span(start: float | None, end: float | None, duration: float) -> str | None:
    """Why a segment [start, end] does not fit a file of ``duration`` seconds (None if it does)."""
    if start is not None and (not math.isfinite(start) or start < 0 or start >= duration):
        return f"start {start:g} s lies outside the file's {duration:.2f} s"
    if end is not None and (not math.isfinite(end) or end > duration + SPAN_SLACK):
        return f"end {end:g} s lies past the file's {duration:.2f} s"
    return None
