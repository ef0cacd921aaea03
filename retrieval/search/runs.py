"""Pure: a run's top-k lists as dense arrays in rank order (``query_ids`` Q, ``item_ids`` Q x k
padded with -1, ``scores`` Q x k float64 so TREC files round-trip) and their binary form."""

import io
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RankedLists:
    """Ranked item ids and scores per query; rows are queries, columns ranks."""

    query_ids: np.ndarray
    item_ids: np.ndarray
    scores: np.ndarray

    def __post_init__(self) -> None:
        if self.item_ids.ndim != 2 or self.scores.shape != self.item_ids.shape:
            raise ValueError("item_ids and scores must be equal-shaped 2-D arrays")
        if self.query_ids.shape != (self.item_ids.shape[0],):
            raise ValueError("one query id per row is required")

    @property
    def depth(self) -> int:
        return int(self.item_ids.shape[1])

    def __len__(self) -> int:
        return int(self.query_ids.shape[0])

    def to_bytes(self) -> bytes:
        """Serialise as an uncompressed npz (fast to load, portable across databases)."""
        buffer = io.BytesIO()
        np.savez(
            buffer,
            query_ids=self.query_ids.astype(np.int64, copy=False),
            item_ids=self.item_ids.astype(np.int64, copy=False),
            scores=self.scores.astype(np.float64, copy=False),
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> "RankedLists":
        with np.load(io.BytesIO(bytes(data))) as arrays:
            return cls(arrays["query_ids"], arrays["item_ids"], arrays["scores"])

    def truncated(self, depth: int) -> "RankedLists":
        """The same lists cut at ``depth``."""
        return RankedLists(self.query_ids, self.item_ids[:, :depth], self.scores[:, :depth])


def trec_sort(
    item_ids: np.ndarray, scores: np.ndarray, tiebreak: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Order each row as trec_eval ranks it (score descending, ties by docno descending, from
    ``tiebreak``: :func:`descending_key_rank` per entry), padding (-1) last."""
    pad = item_ids < 0
    # Widened first: in a narrower array NumPy 2 would cast the sentinel to -1.
    key = np.where(pad, np.iinfo(np.int64).max, np.asarray(tiebreak, dtype=np.int64))
    order = np.lexsort((key, np.where(pad, np.inf, -scores)), axis=-1)
    return np.take_along_axis(item_ids, order, axis=1), np.take_along_axis(scores, order, axis=1)


def descending_key_rank(keys: list[str]) -> np.ndarray:
    """Position of each key when all keys are sorted in descending (strcmp) order."""
    order = sorted(range(len(keys)), key=keys.__getitem__, reverse=True)
    return np.argsort(np.asarray(order, dtype=np.int64)).astype(np.int64)  # the inverse order
