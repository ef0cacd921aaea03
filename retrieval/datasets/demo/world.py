"""A whole demo benchmark as plain data, mirroring MSR-VTT 1k-A (train videos with several
captions, test videos with one query caption each), fixed exactly by one seed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .captions import captions_for_scene
from .scene import Assertion, Scene, relevance_matrix, sample_scene

TRAIN, TEST = "train", "test"
CAPTIONS_PER_VIDEO = (4, 6)
"""Inclusive range of captions written for each video."""


@dataclass(frozen=True)
class WorldVideo:
    """A video of the world: its key, scene and split."""

    key: str
    scene: Scene
    split: str


@dataclass(frozen=True)
class WorldCaption:
    """A caption of the world, written for (and by construction true of) ``video_key``."""

    key: str
    text: str
    assertion: Assertion
    level: str
    video_key: str
    split: str
    is_query: bool


@dataclass(frozen=True)
class World:
    """The generated benchmark: videos and captions, in key order."""

    seed: int
    videos: tuple[WorldVideo, ...]
    captions: tuple[WorldCaption, ...]

    def queries(self) -> list[WorldCaption]:
        """The query captions (one per test video)."""
        return [caption for caption in self.captions if caption.is_query]

    def relevance(
        self, captions: list[WorldCaption] | None = None, split: str | None = None
    ) -> np.ndarray:
        """Exact relevance of ``captions`` (default all) to the videos of ``split``."""
        captions = list(self.captions) if captions is None else captions
        videos = [v for v in self.videos if split is None or v.split == split]
        return relevance_matrix([c.assertion for c in captions], [v.scene for v in videos])


def video_key(index: int, n_videos: int) -> str:
    """``demo-v0001``-style keys, numbered from 1, wide enough for ``n_videos``."""
    return f"demo-v{index + 1:0{max(4, len(str(n_videos)))}d}"


def build_world(n_videos: int = 600, seed: int = 0, test_fraction: float = 1 / 3) -> World:
    """Draw ``n_videos`` scenes and their captions; a random ``test_fraction`` is test."""
    if n_videos < 1:
        raise ValueError("n_videos must be at least 1")
    if not 0.0 <= test_fraction <= 1.0:
        raise ValueError("test_fraction must be between 0 and 1")
    rng = np.random.default_rng(seed)
    n_test = round(n_videos * test_fraction)
    test = set(rng.permutation(n_videos)[:n_test].tolist())
    videos: list[WorldVideo] = []
    captions: list[WorldCaption] = []
    for index in range(n_videos):
        key = video_key(index, n_videos)
        scene = sample_scene(rng)
        split = TEST if index in test else TRAIN
        videos.append(WorldVideo(key=key, scene=scene, split=split))
        n_captions = int(rng.integers(CAPTIONS_PER_VIDEO[0], CAPTIONS_PER_VIDEO[1] + 1))
        generated = captions_for_scene(rng, scene, n_captions, query=split == TEST)
        for c, caption in enumerate(generated):
            captions.append(
                WorldCaption(
                    key=f"{key}-c{c}",
                    text=caption.text,
                    assertion=caption.assertion,
                    level=caption.level,
                    video_key=key,
                    split=split,
                    is_query=split == TEST and c == 0,
                )
            )
    return World(seed=seed, videos=tuple(videos), captions=tuple(captions))
