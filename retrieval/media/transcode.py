"""Browser copies (H.264 + AAC in a faststart MP4, through FFmpeg's own filters as ``ffmpeg
-vf``), frame-accurate segment clips and posters, made in-process with PyAV and renamed into
place so that a target that exists is whole."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av

from retrieval.media.probe import CopySettings

AUDIO_RATE = 48_000
AAC_FRAME = 1024
POSTER_WIDTH = 480
ROTATIONS: dict[int, list[tuple[str, str | None]]] = {
    90: [("transpose", "cclock")],
    180: [("hflip", None), ("vflip", None)],
    270: [("transpose", "clock")],
}
"""Filters that turn a frame upright from its counter-clockwise display rotation, as
``ffmpeg``'s autorotation does."""


class TranscodeError(ValueError):
    """The source cannot be made into a browser file; the message says why."""


@dataclass(frozen=True)
class Made:
    """What :func:`make_copy` wrote: seconds of source video, bytes, seconds it took."""

    source_seconds: float
    bytes: int
    seconds: float


def output_size(width: int, height: int, rotation: int, max_height: int) -> tuple[int, int]:
    """The copy's picture size: upright, its shorter side at most ``max_height``, even sides."""
    if rotation % 180:
        width, height = height, width
    scale = min(1.0, max_height / max(1, min(width, height)))
    return max(2, 2 * round(width * scale / 2)), max(2, 2 * round(height * scale / 2))


def output_rate(fps: float, max_fps: float) -> Fraction:
    """The copy's constant frame rate: the source's (25 when unknown), at most ``max_fps``."""
    rate = fps if fps and math.isfinite(fps) and fps > 0 else 25.0
    return Fraction(min(rate, max_fps)).limit_denominator(1001)


def make_copy(
    source: Path | str,
    target: Path | str,
    settings: CopySettings,
    *,
    start: float | None = None,
    end: float | None = None,
    progress: Callable[[float], object] | None = None,
) -> Made:
    """Write the browser copy of ``source`` (or of its span [start, end]) to ``target``,
    calling ``progress`` with the seconds decoded; :class:`TranscodeError` if it does not decode."""
    began = time.perf_counter()
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        seconds = _transcode(Path(source), partial, settings, start, end, progress)
        os.replace(partial, target)
    except av.FFmpegError as exc:
        raise TranscodeError(str(exc) or type(exc).__name__) from None
    finally:
        partial.unlink(missing_ok=True)
    return Made(seconds, target.stat().st_size, time.perf_counter() - began)


class _Video:
    """The picture path: decoded frames -> rotation, scale, fps, yuv420p -> H.264."""

    def __init__(self, output, stream, settings: CopySettings, rotation: int) -> None:
        context = stream.codec_context
        width, height = output_size(context.width, context.height, rotation, settings.max_height)
        rate = output_rate(float(stream.average_rate or stream.guessed_rate or 0), settings.max_fps)
        self.stream = output.add_stream(
            "libx264", rate=rate, options={"crf": str(settings.crf), "preset": settings.preset}
        )
        self.stream.width, self.stream.height, self.stream.pix_fmt = width, height, "yuv420p"
        self.stream.codec_context.time_base = 1 / rate
        self.graph = av.filter.Graph()
        steps = [
            *ROTATIONS.get(rotation % 360, ()),
            ("scale", f"{width}:{height}:out_range=tv"),
            ("fps", f"{rate.numerator}/{rate.denominator}"),
            ("format", "yuv420p"),
        ]
        self.graph.link_nodes(
            self.graph.add_buffer(template=stream),
            *(self.graph.add(name, argument) for name, argument in steps),
            self.graph.add("buffersink"),
        ).configure()
        self.output = output

    def push(self, frame) -> None:
        self.graph.push(frame)
        self._drain()

    def _drain(self) -> None:
        while True:
            try:
                frame = self.graph.pull()
            except (av.BlockingIOError, av.EOFError):
                return
            frame.pict_type = av.video.frame.PictureType.NONE
            self.output.mux(self.stream.encode(frame))

    def close(self) -> None:
        self.graph.push(None)
        self._drain()
        self.output.mux(self.stream.encode(None))


class _Audio:
    """The sound path: decoded frames -> 48 kHz stereo float planes -> AAC."""

    def __init__(self, output, settings: CopySettings) -> None:
        self.stream = output.add_stream("aac", rate=AUDIO_RATE)
        self.stream.layout = "stereo"
        self.stream.bit_rate = settings.audio_bitrate
        self.resampler = av.AudioResampler(
            format="fltp", layout="stereo", rate=AUDIO_RATE, frame_size=AAC_FRAME
        )
        self.output = output
        self.samples = 0

    def push(self, frame) -> None:
        frame.pts = None
        for out in self.resampler.resample(frame):
            self._encode(out)

    def _encode(self, frame) -> None:
        frame.pts, frame.time_base = self.samples, Fraction(1, AUDIO_RATE)
        self.samples += frame.samples
        self.output.mux(self.stream.encode(frame))

    def close(self) -> None:
        for out in self.resampler.resample(None):
            self._encode(out)
        self.output.mux(self.stream.encode(None))


def _transcode(
    source: Path,
    target: Path,
    settings: CopySettings,
    start: float | None,
    end: float | None,
    progress: Callable[[float], object] | None,
) -> float:
    """Decode ``source`` from ``start`` to ``end`` and encode it into ``target``; the seconds
    of source video written."""
    with av.open(str(source), metadata_errors="ignore") as source_file:
        if not source_file.streams.video:
            raise TranscodeError("no video stream")
        video_in = source_file.streams.video[0]
        video_in.thread_type = "AUTO"
        audio_in = source_file.streams.audio[0] if source_file.streams.audio else None
        begin = max(0.0, start or 0.0)
        stop = end if end is not None else math.inf
        if begin > 0:
            source_file.seek(int(begin / video_in.time_base), stream=video_in, backward=True)
        first_frame = None
        with av.open(str(target), "w", format="mp4", options={"movflags": "+faststart"}) as out:
            # Both output streams are added at the first kept video frame (its rotation
            # sets the picture's size), before anything is muxed; sound that comes first
            # waits for them.
            video: _Video | None = None
            audio: _Audio | None = None
            waiting: list = []
            streams = [video_in] if audio_in is None else [video_in, audio_in]
            last_time, reported = begin, time.monotonic()
            video_done = False
            for packet in source_file.demux(*streams):
                if video_done:
                    break
                for frame in packet.decode():
                    when = frame.time if frame.time is not None else last_time
                    if packet.stream is video_in:
                        if when < begin - 1e-6 or video_done:
                            continue
                        if when >= stop:
                            video_done = True
                            continue
                        if video is None:
                            video = _Video(out, video_in, settings, int(frame.rotation or 0))
                            audio = _Audio(out, settings) if audio_in is not None else None
                            first_frame = when
                            for held in waiting if audio is not None else ():
                                audio.push(held)
                        frame.pts -= round(begin / frame.time_base)
                        video.push(frame)
                        last_time = when
                    elif begin - 0.02 <= when < stop:
                        if audio is not None:
                            audio.push(frame)
                        else:
                            waiting.append(frame)
                if progress is not None and time.monotonic() - reported > 2:
                    progress(last_time - begin)
                    reported = time.monotonic()
            if video is None:
                raise TranscodeError(f"no video frame decodes between {begin:g} s and {stop:g} s")
            video.close()
            if audio is not None:
                audio.close()
    seconds = max(0.0, last_time - (first_frame or begin))
    if video_in.average_rate:
        seconds += 1 / float(video_in.average_rate)
    return seconds


def make_poster(source: Path | str, target: Path | str, at: float = 0.0) -> int:
    """Write a JPEG of the frame at ``at`` seconds of ``source`` (at most
    :data:`POSTER_WIDTH` wide); its size in bytes."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with av.open(str(source), metadata_errors="ignore") as source_file:
            stream = source_file.streams.video[0]
            if at > 0:
                source_file.seek(int(at / stream.time_base), stream=stream, backward=True)
            for frame in source_file.decode(stream):
                if frame.time is None or frame.time >= at - 1e-6:
                    width = min(POSTER_WIDTH, frame.width)
                    height = max(2, round(frame.height * width / frame.width))
                    image = frame.to_image(width=width, height=height)
                    image.save(target, format="JPEG", quality=85)
                    return target.stat().st_size
    except av.FFmpegError as exc:
        raise TranscodeError(str(exc) or type(exc).__name__) from None
    raise TranscodeError(f"no frame at {at:g} s")
