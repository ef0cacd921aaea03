"""Tiny video files made with PyAV at test time, the way benchmarks ship them.

No binary file lives in the tree: each test writes what it needs. A clip's picture is a
solid colour per half (``first`` then ``second``), so a test can compare a decoded frame's
mean colour with what was written, and two spans of one recording look different.
"""

from __future__ import annotations

import fractions
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np


@dataclass(frozen=True)
class ClipSpec:
    """How a benchmark ships a video: container, codecs, picture size and rate."""

    suffix: str
    video_codec: str
    pix_fmt: str = "yuv420p"
    audio_codec: str | None = None
    container: str | None = None
    options: dict | None = None
    codec_options: dict | None = None


SPECS: dict[str, ClipSpec] = {
    # MSVD: AVI with MPEG-4 Part 2 video and MP3 audio.
    "avi": ClipSpec(".avi", "mpeg4", audio_codec="libmp3lame"),
    # MSR-VTT: MP4 with H.264 and AAC, moov first.
    "mp4": ClipSpec(
        ".mp4", "libx264", audio_codec="aac", options={"movflags": "+faststart"},
        codec_options={"preset": "ultrafast"},
    ),
    # A camera's MP4: H.264, moov at the end (what a muxer writes without faststart).
    "mp4_faststart_silent": ClipSpec(
        ".mp4", "libx264", options={"movflags": "+faststart"}, codec_options={"preset": "ultrafast"}
    ),
    "mp4_moov_end": ClipSpec(".mp4", "libx264", codec_options={"preset": "ultrafast"}),
    "webm": ClipSpec(
        ".webm", "libvpx-vp9", audio_codec="libopus",
        codec_options={"deadline": "realtime", "cpu-used": "8"},
    ),
    "mkv": ClipSpec(".mkv", "libx264", audio_codec="aac", codec_options={"preset": "ultrafast"}),
    "hevc": ClipSpec(
        ".mp4", "libx265", options={"movflags": "+faststart"},
        codec_options={"preset": "ultrafast", "x265-params": "log-level=none"},
    ),
    "prores": ClipSpec(".mov", "prores_ks", pix_fmt="yuv422p10le", audio_codec="pcm_s16le"),
    "mjpeg": ClipSpec(".mov", "mjpeg", pix_fmt="yuvj420p"),
}  # fmt: skip

RED = (200, 30, 30)
BLUE = (30, 30, 200)


def make_clip(
    path: Path,
    kind: str = "mp4",
    *,
    seconds: float = 1.0,
    fps: int = 25,
    size: tuple[int, int] = (160, 120),
    first: tuple[int, int, int] = RED,
    second: tuple[int, int, int] = BLUE,
    rotation: int = 0,
    texture: int | None = None,
) -> Path:
    """Write a ``kind`` clip (see :data:`SPECS`) of ``seconds`` at ``path``; returns ``path``.

    ``texture``: the seed of a smooth random texture that shades each half's colour and pans
    2 px a frame, so an encoder spends bytes as on camera footage rather than on flat colour
    (what byte counts are measured on); clips of different seeds are different files."""
    spec = SPECS[kind]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    width, height = size
    frames = max(1, round(seconds * fps))
    shaded = {}
    if texture is not None:
        shade = _texture(height, width + 2 * frames, texture)[:, :, None]
        for colour in (first, second):
            shaded[colour] = (np.asarray(colour, dtype=np.uint16) * shade >> 8).astype(np.uint8)
    with av.open(str(path), "w", options=spec.options or {}) as container:
        video = container.add_stream(spec.video_codec, rate=fps, options=spec.codec_options or {})
        video.width, video.height, video.pix_fmt = width, height, spec.pix_fmt
        if rotation:
            video.set_display_rotation(rotation)
        audio = None
        if spec.audio_codec:
            audio = container.add_stream(spec.audio_codec, rate=48000)
            audio.layout = "stereo"
        for index in range(frames):
            colour = first if index < frames / 2 else second
            if texture is not None:
                picture = np.ascontiguousarray(shaded[colour][:, 2 * index : 2 * index + width])
            else:
                picture = np.empty((height, width, 3), dtype=np.uint8)
                picture[:] = colour
            picture[: height // 4, : width // 4] = 255  # a white corner: not a flat frame
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts = index
            frame.time_base = fractions.Fraction(1, fps)
            container.mux(video.encode(frame))
        container.mux(video.encode())
        if audio is not None:
            _write_tone(container, audio, seconds)
    return path


def _texture(height: int, width: int, seed: int) -> np.ndarray:
    """Smooth random shading (uint16, 96-255): noise on a coarse grid, enlarged and blurred."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(96, 256, size=(height // 8 + 2, width // 8 + 2)).astype(np.uint16)
    fine = np.repeat(np.repeat(coarse, 8, 0), 8, 1)[:height, :width]
    fine = (fine + np.roll(fine, 4, 0) + np.roll(fine, 4, 1) + np.roll(fine, (4, 4), (0, 1))) >> 2
    grain = rng.integers(0, 24, size=(height, width), dtype=np.uint16)
    return np.minimum(fine + grain, 255)


def _write_tone(container, audio, seconds: float) -> None:
    """A 440 Hz stereo tone of ``seconds``, resampled to the encoder's format and frame size."""
    rate = 48000
    context = audio.codec_context
    resampler = av.AudioResampler(
        format=context.format.name,
        layout="stereo",
        rate=rate,
        frame_size=context.frame_size or None,
    )
    t = np.arange(int(seconds * rate)) / rate
    tone = np.repeat((0.2 * np.sin(2 * np.pi * 440 * t))[None, :], 2, 0).astype(np.float32)
    frame = av.AudioFrame.from_ndarray(tone, format="fltp", layout="stereo")
    frame.sample_rate, frame.pts, frame.time_base = rate, 0, fractions.Fraction(1, rate)
    for out in [*resampler.resample(frame), *resampler.resample(None)]:
        container.mux(audio.encode(out))
    container.mux(audio.encode())


def truncate(path: Path, share: float = 0.6) -> Path:
    """Cut ``path`` to ``share`` of its bytes, as an interrupted download leaves it."""
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: int(len(data) * share)])
    return Path(path)


def mean_colour(path: Path, at: float = 0.0) -> np.ndarray:
    """Mean RGB of the first decoded frame at or after ``at`` seconds."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        for frame in container.decode(stream):
            if frame.time is None or frame.time >= at - 1e-6:
                return frame.to_ndarray(format="rgb24").reshape(-1, 3).mean(0)
    raise AssertionError(f"no frame at {at} s in {path}")


_PLAYABLE: dict[float, bytes] = {}


def playable_bytes(seconds: float = 10.0) -> bytes:
    """The bytes of a tiny MP4 (H.264, 64x48, 5 fps, moov first) that browsers play as it
    is, made once per process: what tests about paths and names write as a video file."""
    if seconds not in _PLAYABLE:
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "tiny.mp4"
            make_clip(path, "mp4_faststart_silent", seconds=seconds, fps=5, size=(64, 48))
            _PLAYABLE[seconds] = path.read_bytes()
    return _PLAYABLE[seconds]


def import_records(records: list[dict], videos: Path, name: str, captions: Path, **options) -> dict:
    """Import caption ``records`` (JSON lines, split "test" unless given) with the files in
    ``videos`` through ``manage.py import_dataset``; the command's JSON summary."""
    import io
    import json

    from django.core.management import call_command

    captions.write_text("".join(json.dumps({"split": "test", **r}) + "\n" for r in records))
    out = io.StringIO()
    call_command(
        "import_dataset", name=name, format="jsonl", captions=captions, videos=videos,
        output="json", quiet=True, stdout=out, **options,
    )  # fmt: skip
    return json.loads(out.getvalue())
