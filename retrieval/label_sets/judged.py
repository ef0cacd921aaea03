"""Judged relevance of caption-video pairs: the arrays behind a label set.

Per pair: caption and video keys, relevance (1, 0, or -1 for an unresolved disagreement,
which like FIRE §3.2, Table 2 counts as neither relevant nor irrelevant), the labels behind
it, whether an admin adjudicated it and optionally a confidence (a model-based
aggregation's probability of relevance, Dawid & Skene 1979; NaN where unknown).
"""

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.ids import lookup
from retrieval.label_sets.status import DISAGREEMENT, FINAL, IRRELEVANT, RELEVANT

LABEL_NAMES = {int(status): status.label for status in FINAL}
"""Names of the codes a label set holds (see :mod:`retrieval.label_sets.status`)."""
LABEL_CODES = {name: code for code, name in LABEL_NAMES.items()}
MAX_VOTES = int(np.iinfo(np.int16).max)
"""Most labels one pair can rest on: label sets store the count as a 16-bit integer."""
ARRAYS = ("caption_ids", "video_ids", "relevance", "votes", "adjudicated")
"""The arrays every label set stores, in :class:`Judged`'s order (then ``confidence``, if any)."""


@dataclass(frozen=True)
class Judged:
    """Judged pairs as parallel arrays, sorted by (caption, video) with no repeats."""

    caption_ids: np.ndarray  # int64
    video_ids: np.ndarray  # int64
    relevance: np.ndarray  # int8: 1, 0 or -1
    votes: np.ndarray  # int16: labels behind the relevance (0: unknown)
    adjudicated: np.ndarray  # bool
    confidence: np.ndarray | None = None  # float64 probability of relevance, NaN unknown

    @classmethod
    def build(
        cls,
        caption_ids: Sequence[int] | np.ndarray,
        video_ids: Sequence[int] | np.ndarray,
        relevance: Sequence[int] | np.ndarray,
        votes: Sequence[int] | np.ndarray | None = None,
        adjudicated: Sequence[bool] | np.ndarray | None = None,
        confidence: Sequence[float] | np.ndarray | None = None,
    ) -> "Judged":
        """Check, sort and de-duplicate (a pair given twice needs one relevance); confidence
        lies in [0, 1] or is NaN, votes are capped at :data:`MAX_VOTES` rather than wrapped."""
        captions = np.asarray(caption_ids, dtype=np.int64).ravel()
        videos = np.asarray(video_ids, dtype=np.int64).ravel()
        rel = np.asarray(relevance, dtype=np.int64).ravel()
        n = len(captions)
        vote = np.zeros(n, np.int64) if votes is None else np.asarray(votes, np.int64).ravel()
        adj = np.zeros(n, bool) if adjudicated is None else np.asarray(adjudicated, bool).ravel()
        conf = None if confidence is None else np.asarray(confidence, np.float64).ravel()
        lengths = {len(videos), len(rel), len(vote), len(adj), n if conf is None else len(conf)}
        if lengths != {n}:
            raise ValueError("judged arrays must have the same length")
        if conf is not None and ((conf < 0) | (conf > 1)).any():
            raise ValueError("confidence must lie between 0 and 1")
        if n and not np.isin(rel, (RELEVANT, IRRELEVANT, DISAGREEMENT)).all():
            raise ValueError("relevance must be 1, 0 or -1")
        if n and (vote < 0).any():
            raise ValueError("votes must be non-negative")
        order = np.lexsort((videos, captions))
        captions, videos, rel, vote, adj = (a[order] for a in (captions, videos, rel, vote, adj))
        repeat = np.zeros(n, bool)
        repeat[1:] = (captions[1:] == captions[:-1]) & (videos[1:] == videos[:-1])
        clash = repeat[1:] & (rel[1:] != rel[:-1])
        if clash.any():
            at = int(np.flatnonzero(clash)[0]) + 1
            raise ValueError(
                f"pair (caption {captions[at]}, video {videos[at]}) is given two different "
                "relevance values"
            )
        keep = ~repeat
        return cls(
            captions[keep],
            videos[keep],
            rel[keep].astype(np.int8),
            np.minimum(vote[keep], MAX_VOTES).astype(np.int16),
            adj[keep],
            None if conf is None else conf[order][keep],
        )

    def __len__(self) -> int:
        return len(self.caption_ids)

    def counts(self) -> dict[str, int]:
        """Pairs per relevance value."""
        return {name: int((self.relevance == code).sum()) for code, name in LABEL_NAMES.items()}

    def to_bytes(self, **extra: np.ndarray) -> bytes:
        """The arrays as npz; ``extra`` arrays ride along (a campaign's pool state)."""
        buffer = io.BytesIO()
        if self.confidence is not None:
            extra = {**extra, "confidence": self.confidence}
        np.savez(buffer, **{name: getattr(self, name) for name in ARRAYS}, **extra)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "Judged":
        """Read :meth:`to_bytes`'s arrays (sets stored before confidences existed have none)."""
        with np.load(io.BytesIO(bytes(data))) as arrays:
            confidence = arrays["confidence"] if "confidence" in arrays.files else None
            return cls(*(arrays[name] for name in ARRAYS), confidence)

    def confidence_of(self, caption_ids: np.ndarray, video_ids: np.ndarray) -> np.ndarray:
        """Confidence of the given pairs: NaN where not in the set or unknown."""
        wanted = np.asarray(caption_ids, np.int64) * (1 << 32) + np.asarray(video_ids, np.int64)
        out = np.full(wanted.shape, np.nan)
        if self.confidence is not None:
            at, found = lookup(self.caption_ids * (1 << 32) + self.video_ids, wanted)
            out[found] = self.confidence[at[found]]
        return out


def merge(sets: Sequence[Judged]) -> Judged:
    """Union of label sets; where two sets judge the same pair, the later one wins."""
    if not sets:
        return Judged.build([], [], [])
    captions = np.concatenate([s.caption_ids for s in sets])
    videos = np.concatenate([s.video_ids for s in sets])
    # Stable sort keeps each pair's judgements in set order; the last of each run wins.
    order = np.lexsort((videos, captions))
    captions, videos = captions[order], videos[order]
    last = np.ones(len(captions), bool)
    last[:-1] = (captions[1:] != captions[:-1]) | (videos[1:] != videos[:-1])
    pick = order[last]
    confidence = None
    if any(s.confidence is not None for s in sets):
        confidence = np.concatenate(
            [np.full(len(s), np.nan) if s.confidence is None else s.confidence for s in sets]
        )[pick]
    return Judged(
        captions[last],
        videos[last],
        np.concatenate([s.relevance for s in sets])[pick],
        np.concatenate([s.votes for s in sets])[pick],
        np.concatenate([s.adjudicated for s in sets])[pick],
        confidence,
    )
