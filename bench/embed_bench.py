"""Embedding throughput of the built-in encoders and the video feature extractor.

Items per second on each device for frame features, WebM features and minilm, mme and jpose
encoding (trained ``--epochs`` first) on a demo world. Run with
``.venv/bin/python bench/embed_bench.py``.
"""

import os
import platform
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from harness import parser, summarised

from retrieval.datasets.demo.render import render_frames, write_webm
from retrieval.datasets.demo.world import build_world
from retrieval.encoders.base import TrainingData, VideoInputs
from retrieval.encoders.features import extract_clips_features, extract_features
from retrieval.encoders.jpose import JPoSEEncoder
from retrieval.encoders.minilm import MiniLMEncoder
from retrieval.encoders.mme import MMEEncoder


def timed(fn: Callable[[], object], repeats: int = 1) -> float:
    """Best wall time of ``repeats`` calls, in seconds, each until the GPU has finished."""
    sync = torch.cuda.synchronize if torch.cuda.is_available() else lambda: None
    sync()  # nothing queued before the first call either
    return summarised(lambda: (fn(), sync()), repeats)[0]


def device_name(device: str) -> str:
    if device == "cuda":
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def bench_device(device, world, clips, paths, texts, known, args) -> list[tuple]:
    """Rows (device, model, what, items/s, seconds) measured on one device."""
    rows = []
    videos = list(world.videos)
    column = {v.key: i for i, v in enumerate(videos)}
    extract_clips_features(clips[:2], device=device)  # warm-up
    seconds = timed(lambda: extract_clips_features(clips, device=device, batch_size=8))
    rows.append((device, "features", "frames -> vector", len(clips) / seconds, seconds))
    seconds = timed(lambda: [extract_features(p, device=device) for p in paths])
    rows.append((device, "features", "webm file -> vector", len(paths) / seconds, seconds))
    features = extract_clips_features(clips, device=device, batch_size=8)
    data = TrainingData(
        features,
        [c.text for c in world.captions],
        np.array([column[c.video_key] for c in world.captions]),
    )
    inputs = VideoInputs(keys=[v.key for v in videos], features=features, captions=known)
    minilm = MiniLMEncoder()
    load = timed(lambda: minilm.encode_captions(texts[:4], device=device))
    rows.append((device, "minilm", "load + first call", float("nan"), load))
    for model in (minilm, MMEEncoder(), JPoSEEncoder()):
        if model.trainable:
            fit = timed(lambda m=model: m.fit(data, epochs=args.epochs, device=device))
            rows.append((device, model.name, f"fit {args.epochs} epochs", float("nan"), fit))
            model.encode_captions(texts[:4], device=device)  # warm-up (spaCy, word vectors)
        seconds = timed(
            lambda m=model: m.encode_captions(texts, device=device, batch_size=args.batch_size),
            repeats=2,
        )
        rows.append((device, model.name, "encode captions", len(texts) / seconds, seconds))
        seconds = timed(
            lambda m=model: m.encode_videos(inputs, device=device, batch_size=args.batch_size),
            repeats=3,
        )
        rows.append((device, model.name, "encode videos", len(inputs) / seconds, seconds))
    return rows


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--videos", type=int, default=200)
    options.add_argument("--captions", type=int, default=2000)
    options.add_argument(
        "--files", type=int, default=60, help="WebM files decoded for the file rate"
    )
    options.add_argument("--epochs", type=int, default=5)
    options.add_argument("--batch-size", type=int, default=256)
    options.add_argument(
        "--devices", default="auto", help="'cpu', 'cuda', or 'auto' (cpu + cuda if present)"
    )
    options.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    args = options.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    devices = ["cpu", "cuda"] if args.devices == "auto" else args.devices.split(",")
    devices = [d for d in devices if d != "cuda" or torch.cuda.is_available()]

    world = build_world(args.videos, seed=0)
    videos = list(world.videos)
    clips = np.stack([render_frames(v.scene) for v in videos])
    texts = [c.text for c in world.captions]
    texts = (texts * (args.captions // max(len(texts), 1) + 1))[: args.captions]
    known = [[c.text for c in world.captions if c.video_key == v.key] for v in videos]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}")
    print(f"{len(videos)} videos, {len(texts)} captions, batch size {args.batch_size}")

    rows: list[tuple[str, str, str, float, float]] = []  # device, model, what, items/s, seconds
    with tempfile.TemporaryDirectory(prefix="embed-bench-") as tmp:
        paths = []
        for i in range(min(args.files, len(clips))):
            paths.append(Path(tmp) / f"{i}.webm")
            write_webm(clips[i], paths[-1])
        for device in devices:
            rows += bench_device(device, world, clips, paths, texts, known, args)
    print()
    print(f"| {'device':<34} | {'model':<8} | {'what':<20} | {'items/s':>10} | {'seconds':>8} |")
    print(f"|{'-' * 36}|{'-' * 10}|{'-' * 22}|{'-' * 12}|{'-' * 10}|")
    for device, model, what, rate, seconds in rows:
        shown = "" if np.isnan(rate) else f"{rate:,.0f}"
        print(
            f"| {device_name(device):<34} | {model:<8} | {what:<20} | {shown:>10} | {seconds:>8.2f} |"
        )


if __name__ == "__main__":
    main()
