"""Video-to-caption relevance from a caption proxy (Wray et al., CVPR 2021, §4.4 Eq. 5). S(video,
caption) is 1 where the caption describes the video, else the proxy between them: for word sets a
video's set is the words in at least 25% of its captions (§5); for METEOR, the mean of the mean and
max over its captions (the match kernel of Lyu, 2005, §5 cites). With ``dedupe`` identical texts are
one item, as EPIC-KITCHENS-100 counts them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .captions import PARTS_OF_SPEECH, CaptionTerms, normalise_text
from .overlap import group_sets, incidence, iou_matrix

PART_WEIGHTS: Mapping[str, float] = {"verb": 0.5, "noun": 0.5}
"""alpha^p of Eq. 7-8: verbs and nouns weighted equally (Wray et al., CVPR 2021, §5)."""


@dataclass(frozen=True)
class TextItems:
    """Which video each caption describes and which text item it is; ``representative[t]``: text
    item t's first caption."""

    caption_video: np.ndarray
    n_videos: int
    caption_text: np.ndarray
    representative: np.ndarray

    @property
    def n_texts(self) -> int:
        return len(self.representative)


def text_items(
    texts: Sequence[str], caption_video: np.ndarray, n_videos: int, *, dedupe: bool = False
) -> TextItems:
    """Text items of a split's captions: one per caption, or one per distinct text."""
    caption_video = np.asarray(caption_video, dtype=np.int64)
    if not dedupe:
        index = np.arange(len(texts), dtype=np.int64)
        return TextItems(caption_video, n_videos, index, index.copy())
    keys = [normalise_text(text) for text in texts]
    item = {key: t for t, key in enumerate(dict.fromkeys(keys))}  # in order of first use
    caption_text = np.array([item[key] for key in keys], dtype=np.int64)
    representative = np.unique(caption_text, return_index=True)[1].astype(np.int64)
    return TextItems(caption_video, n_videos, caption_text, representative)


def set_proxy_sets(
    proxy: str,
    terms: Sequence[CaptionTerms],
    synsets: Mapping[str, Sequence[frozenset[str]]] | None = None,
) -> dict[str, tuple[float, Sequence[frozenset[str]]]]:
    """The weighted set families a word-set proxy compares: {name: (weight, sets)}."""
    if proxy == "bow":
        return {"words": (1.0, [t.words for t in terms])}
    if proxy == "pos":
        return {p: (PART_WEIGHTS[p], [t.part(p) for t in terms]) for p in PARTS_OF_SPEECH}
    if proxy == "syn":
        if synsets is None:
            raise ValueError("the syn proxy needs each caption's synsets")
        return {p: (PART_WEIGHTS[p], synsets[p]) for p in PARTS_OF_SPEECH}
    raise ValueError(f"unknown word-set proxy {proxy!r}: use bow, pos or syn")


def caption_set_matrix(
    families: Mapping[str, tuple[float, Sequence[frozenset[str]]]],
) -> np.ndarray:
    """S'(caption_i, caption_j) for every pair: the weighted IoU of Eq. 6-8 (symmetric)."""
    total = np.float32(0.0)
    for weight, sets in families.values():
        matrix, _ = incidence(sets)
        total = total + iou_matrix(matrix, matrix) * np.float32(weight)
    return total


def video_set_matrix(
    families: Mapping[str, tuple[float, Sequence[frozenset[str]]]],
    items: TextItems,
) -> np.ndarray:
    """S(video, text item) for a word-set proxy: 25%-rule video sets against each text."""
    total = np.zeros((items.n_videos, items.n_texts), dtype=np.float32)
    for weight, sets in families.values():
        captions, _ = incidence(sets)
        videos = group_sets(captions, items.caption_video, items.n_videos)
        texts = captions[items.representative]
        total += iou_matrix(videos, texts) * np.float32(weight)
    return with_owners(total, items)


def video_meteor_matrix(
    caption_scores: Callable[[np.ndarray, np.ndarray], np.ndarray], items: TextItems
) -> np.ndarray:
    """S(video, text item) for METEOR from ``caption_scores(references, hypotheses)``: a video's
    captions as references, each row (mean + max) / 2 over them."""
    order = np.argsort(items.caption_video, kind="stable")
    scores = np.asarray(caption_scores(order, items.representative), dtype=np.float32)
    counts = np.bincount(items.caption_video, minlength=items.n_videos)
    out = np.zeros((items.n_videos, items.n_texts), dtype=np.float32)
    present = np.flatnonzero(counts)
    if len(present):
        starts = np.concatenate([[0], np.cumsum(counts[present])[:-1]])
        sums = np.add.reduceat(scores, starts, axis=0)
        maxima = np.maximum.reduceat(scores, starts, axis=0)
        out[present] = 0.5 * (sums / counts[present, None] + maxima)
    return with_owners(out, items)


def with_owners(matrix: np.ndarray, items: TextItems) -> np.ndarray:
    """Set S = 1 where the text item describes the video (Eq. 10's first case)."""
    matrix[items.caption_video, items.caption_text] = 1.0
    return matrix
