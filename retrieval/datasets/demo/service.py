"""ORM-facing: the synthetic demo world built into the database (clips rendered to a staging
folder, rows written in one transaction, then the folder moved to ``MEDIA_ROOT/demo/<name>/``)
and its exact ground truth read back, so every stage can be checked offline."""

from __future__ import annotations

import multiprocessing
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
from django.conf import settings
from django.db import transaction

from config.batches import rows_in
from config.errors import UserError
from retrieval.datasets.demo.render import DURATION, FPS, N_FRAMES, SIZE, render_scene_file
from retrieval.datasets.demo.scene import Assertion, Scene, relevance_matrix
from retrieval.datasets.demo.world import TEST, World, build_world
from retrieval.datasets.names import check_name
from retrieval.models import Caption, Dataset, Video

GENERATOR_VERSION = 1
"""Bump when a seed would no longer give the same world (scenes, captions or clips)."""
SOURCE_FORMAT = "demo"
MEDIA_SUBDIR = "demo"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")

Progress = Callable[[int, int], None]
"""Called as ``progress(done, total)`` while clips are rendered."""


class DemoError(UserError):
    """A demo dataset cannot be built or read as asked; the message says why."""


class DemoDatasetExists(DemoError):
    """A dataset with the requested name exists and replacing it was not asked for."""


@dataclass(frozen=True)
class DemoSummary:
    """Counts for a built demo dataset, and how many test videos each query matches."""

    videos: int
    train_videos: int
    test_videos: int
    captions: int
    queries: int
    mean_relevant_per_query: float
    max_relevant_per_query: int
    queries_with_one_relevant: int


def create_demo_dataset(
    name: str = "demo",
    n_videos: int = 600,
    seed: int = 0,
    test_fraction: float = 1 / 3,
    *,
    replace: bool = False,
    progress: Progress | None = None,
    workers: int = 2,
) -> Dataset:
    """Generate, render and store a demo world as Dataset ``name``, all or nothing;
    :class:`DemoDatasetExists` if the name is taken and ``replace`` is not set."""
    check_name(name, "dataset")
    if not _NAME.match(name):  # stricter: the name is also a folder's
        raise DemoError(f"{name!r}: a demo dataset name is letters, digits, '_', '-', '.'")
    if Dataset.objects.filter(name=name).exists() and not replace:
        raise DemoDatasetExists(
            f'Dataset "{name}" already exists; use replace=True (--replace) to rebuild it.'
        )
    world = build_world(n_videos, seed, test_fraction)
    final_dir = Path(settings.MEDIA_ROOT) / MEDIA_SUBDIR / name
    final_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=final_dir.parent))
    try:
        jobs = [(v.scene.to_dict(), str(staging / f"{v.key}.webm")) for v in world.videos]
        _render(jobs, progress, workers)
        with transaction.atomic():
            Dataset.objects.filter(name=name).delete()
            dataset = _write_rows(world, name, test_fraction)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(final_dir, ignore_errors=True)
    staging.rename(final_dir)
    return dataset


def _render(jobs: list[tuple[dict, str]], progress: Progress | None, workers: int) -> None:
    """Render every (scene dict, path) job, in a spawn-started pool when ``workers > 1``."""
    total = len(jobs)
    if progress:
        progress(0, total)
    with ExitStack() as stack:
        done: Iterable[str] = map(render_scene_file, jobs)
        if workers > 1 and total > 1:
            pool = multiprocessing.get_context("spawn").Pool(min(workers, total))
            done = stack.enter_context(pool).imap_unordered(render_scene_file, jobs, chunksize=4)
        for count, _path in enumerate(done, start=1):
            if progress:
                progress(count, total)


def _write_rows(world: World, name: str, test_fraction: float) -> Dataset:
    """Insert the dataset, its videos and captions with bulk queries."""
    dataset = Dataset.objects.create(
        name=name,
        description=(
            f"Synthetic demo world: {len(world.videos)} clips of moving coloured shapes "
            f"(seed {world.seed}); exact relevance of every caption-video pair is known."
        ),
        source_format=SOURCE_FORMAT,
        has_ground_truth=True,
        metadata={
            "seed": world.seed,
            "n_videos": len(world.videos),
            "test_fraction": test_fraction,
            "generator_version": GENERATOR_VERSION,
            "fps": FPS,
            "frames": N_FRAMES,
            "size": SIZE,
        },
    )
    media_prefix = f"{MEDIA_SUBDIR}/{name}"
    Video.objects.bulk_create(
        [
            Video(
                dataset=dataset,
                key=video.key,
                media=f"{media_prefix}/{video.key}.webm",
                duration=DURATION,
                split=video.split,
                metadata={"scene": video.scene.to_dict()},
            )
            for video in world.videos
        ],
        batch_size=500,
    )
    video_ids = dict(Video.objects.filter(dataset=dataset).values_list("key", "id"))
    Caption.objects.bulk_create(
        [
            Caption(
                dataset=dataset,
                key=caption.key,
                text=caption.text,
                video_id=video_ids[caption.video_key],
                split=caption.split,
                is_query=caption.is_query,
                metadata={"assertion": caption.assertion.to_dict(), "level": caption.level},
            )
            for caption in world.captions
        ],
        batch_size=500,
    )
    return dataset


def ground_truth_relevance(
    dataset: Dataset, caption_ids: Iterable[int] | None = None, split: str | None = None
) -> tuple[list[str], list[str], np.ndarray]:
    """Exact relevance from stored scenes and assertions: (caption keys, video keys, matrix),
    captions (or ``caption_ids``) by videos (or those of ``split``), both in key order; a row
    without a stored assertion or scene has no ground truth and is left out."""
    if not dataset.has_ground_truth:
        raise DemoError(f'Dataset "{dataset.name}" has no ground-truth relevance.')
    videos = Video.objects.filter(dataset=dataset)
    if split is not None:
        videos = videos.filter(split=split)
    captions = (
        Caption.objects.filter(dataset=dataset).order_by("key").values_list("key", "metadata")
    )
    if caption_ids is not None:  # read per batch of ids (sorted here): parameters that do not grow
        captions = sorted(rows_in(captions, "id", caption_ids), key=lambda row: row[0])
    scenes = _parsed(videos.order_by("key").values_list("key", "metadata"), stored_scene)
    assertions = _parsed(captions, stored_assertion)
    matrix = relevance_matrix(list(assertions.values()), list(scenes.values()))
    return list(assertions), list(scenes), matrix


_T = TypeVar("_T")


def stored_scene(metadata: object) -> Scene | None:
    """The scene a video's metadata stores (``{"scene": ...}``), or None if it has none."""
    return _stored(metadata, "scene", Scene.from_dict)


def stored_assertion(metadata: object) -> Assertion | None:
    """The assertion a caption's metadata stores (``{"assertion": ...}``), or None."""
    return _stored(metadata, "assertion", Assertion.from_dict)


def _stored(metadata: object, name: str, parse: Callable[[dict], _T]) -> _T | None:
    """``parse(metadata[name])``, or None when it is missing or does not parse."""
    if not isinstance(metadata, dict) or not isinstance(metadata.get(name), dict):
        return None
    try:
        return parse(metadata[name])
    except (KeyError, TypeError, ValueError):
        return None


def _parsed(
    rows: Iterable[tuple[str, object]], parse: Callable[[object], _T | None]
) -> dict[str, _T]:
    """Key -> parsed value for the rows whose metadata parses, in the rows' order."""
    parsed = ((key, parse(metadata)) for key, metadata in rows)
    return {key: value for key, value in parsed if value is not None}


def summarize_demo_dataset(dataset: Dataset) -> DemoSummary:
    """Counts, and relevant test videos per query caption from the ground truth."""
    video_splits = list(Video.objects.filter(dataset=dataset).values_list("split", flat=True))
    query_ids = list(
        Caption.objects.filter(dataset=dataset, is_query=True).values_list("id", flat=True)
    )
    _, _, matrix = ground_truth_relevance(dataset, caption_ids=query_ids, split=TEST)
    relevant = matrix.sum(axis=1)
    return DemoSummary(
        videos=len(video_splits),
        train_videos=sum(split != TEST for split in video_splits),
        test_videos=sum(split == TEST for split in video_splits),
        captions=Caption.objects.filter(dataset=dataset).count(),
        queries=len(query_ids),
        mean_relevant_per_query=float(relevant.mean()) if len(relevant) else 0.0,
        max_relevant_per_query=int(relevant.max()) if len(relevant) else 0,
        queries_with_one_relevant=int((relevant == 1).sum()),
    )
