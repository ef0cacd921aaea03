"""Browser copies per second of source video, in-process with PyAV, beside the ffmpeg command line.

``--copies``: for each source (an MSVD-like AVI with MPEG-4 Part 2 + MP3, and an
EPIC-like 1080p 50 fps H.264 MP4 with its index at the end), make the browser copy with
:func:`retrieval.media.transcode.make_copy` and with the ``ffmpeg`` command line given the
same encoder settings (scale with limited range, fps, yuv420p, libx264 CRF and preset, AAC
48 kHz stereo, faststart), interleaved, best of ``--repeat``; prints seconds of source
video per second of wall time for both and their ratio (the target: PyAV within 1.3x of
the command line). The anchor needs ``ffmpeg`` on the PATH (``apt-get install -y
ffmpeg``); firepool itself never runs it. Sources are made with PyAV first, a few seconds
each::

    .venv/bin/python bench/media_bench.py --copies [--seconds 4] [--repeat 3]
"""

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import harness  # noqa: F401 - puts the project on sys.path

from retrieval.media.probe import CopySettings, probe
from retrieval.media.transcode import make_copy, output_rate, output_size
from tests.media_support import make_clip

SOURCES = {
    "msvd-avi": {"kind": "avi", "size": (320, 240), "fps": 25},
    "epic-1080p50": {"kind": "mp4_moov_end", "size": (1920, 1080), "fps": 50},
}


def ffmpeg_command(source: Path, target: Path, settings: CopySettings) -> list[str]:
    """The command line that makes the same copy as :func:`make_copy`."""
    facts = probe(source)
    width, height = output_size(facts.width, facts.height, facts.rotation, settings.max_height)
    rate = output_rate(facts.fps, settings.max_fps)
    command = [
        "ffmpeg", "-nostdin", "-y", "-v", "error", "-i", str(source),
        "-vf", f"scale={width}:{height}:out_range=tv,fps={rate.numerator}/{rate.denominator},format=yuv420p",
        "-c:v", "libx264", "-crf", str(settings.crf), "-preset", settings.preset,
    ]  # fmt: skip
    if facts.audio_codec:
        command += ["-c:a", "aac", "-b:a", str(settings.audio_bitrate), "-ar", "48000", "-ac", "2"]
    return [*command, "-movflags", "+faststart", str(target)]


def timed(action, *arguments, **options) -> float:
    began = time.perf_counter()
    action(*arguments, **options)
    return time.perf_counter() - began


def copies(seconds: float, repeat: int) -> None:
    if shutil.which("ffmpeg") is None:
        raise SystemExit("the anchor needs ffmpeg on the PATH: apt-get install -y ffmpeg")
    settings = CopySettings()
    version = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout
    print(f"ffmpeg: {version.splitlines()[0]}")
    import av

    print(f"PyAV {av.__version__}, FFmpeg {av.ffmpeg_version_info}")
    with tempfile.TemporaryDirectory(prefix="media-bench-") as tmp:
        folder = Path(tmp)
        print(f"{'source':<14} {'video s':>8} {'pyav s':>8} {'ffmpeg s':>9} {'pyav x':>7} "
              f"{'ffmpeg x':>9} {'ratio':>6}")  # fmt: skip
        for name, spec in SOURCES.items():
            suffix = ".avi" if spec["kind"] == "avi" else ".mp4"
            source = make_clip(
                folder / f"{name}{suffix}", spec["kind"], seconds=seconds, fps=spec["fps"],
                size=spec["size"],
            )  # fmt: skip
            length = probe(source).duration
            ours, anchor = [], []
            for _ in range(repeat):
                ours.append(timed(make_copy, source, folder / "ours.mp4", settings))
                command = ffmpeg_command(source, folder / "theirs.mp4", settings)
                anchor.append(timed(subprocess.run, command, check=True))
            mine, theirs = min(ours), min(anchor)
            print(
                f"{name:<14} {length:>8.2f} {mine:>8.2f} {theirs:>9.2f} {length / mine:>7.2f} "
                f"{length / theirs:>9.2f} {mine / theirs:>6.2f}"
            )
            a, b = probe(folder / "ours.mp4"), probe(folder / "theirs.mp4")
            print(f"  copies: ours {a.describe}, {a.size:,} B; ffmpeg's {b.describe}, {b.size:,} B")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", action="store_true", help="browser copies vs ffmpeg")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per source")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    if not options.copies:
        parser.error("choose a part: --copies")
    copies(options.seconds, options.repeat)


if __name__ == "__main__":
    main()
