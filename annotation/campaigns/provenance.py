"""What pooling knew about a campaign's pairs (:class:`Provenance`), read once per process;
apart from :mod:`annotation.ordering.priorities` so that :mod:`annotation.judging.pair_state`
may read it without importing the judging order.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass

import numpy as np

from annotation.models import Campaign, Pair


@dataclass(frozen=True)
class Provenance:
    """What pooling knew: ``ranks`` (pool rows x runs, 1-based, 0 = not retrieved), the pooled
    ``queries``, ``known`` (queries x runs: the rank of each caption's own video, 0 = not in
    the top depth), and ``deep_*`` the same down to a deeper Correct@K."""

    ranks: np.ndarray
    queries: np.ndarray
    known: np.ndarray
    deep_ranks: np.ndarray | None = None
    deep_known: np.ndarray | None = None

    @property
    def settling(self) -> tuple[np.ndarray, np.ndarray]:
        """(ranks, known) down to the deepest K: what decides whether a C@K is exact."""
        if self.deep_ranks is None or self.deep_known is None:
            return self.ranks, self.known
        return self.deep_ranks, self.deep_known

    def for_strategy(self, strategy: str) -> tuple[np.ndarray, np.ndarray]:
        """(ranks, known) a strategy orders by: metric-first down to the deepest K, the others
        at the pooled depth."""
        return self.settling if strategy == "metric-first" else (self.ranks, self.known)

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        arrays = {
            "ranks": self.ranks.astype(np.int16, copy=False),
            "queries": self.queries.astype(np.int64, copy=False),
            "known": self.known.astype(np.int16, copy=False),
        }
        if self.deep_ranks is not None and self.deep_known is not None:
            arrays["deep_ranks"] = self.deep_ranks.astype(np.int16, copy=False)
            arrays["deep_known"] = self.deep_known.astype(np.int16, copy=False)
        np.savez(buffer, **arrays)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Provenance:
        with np.load(io.BytesIO(bytes(data))) as arrays:
            ranks = arrays["ranks"]
            queries = arrays["queries"] if "queries" in arrays else np.zeros(0, np.int64)
            known = (
                arrays["known"]
                if "known" in arrays
                else np.zeros((queries.size, ranks.shape[1]), np.int16)
            )
            deep = "deep_ranks" in arrays and "deep_known" in arrays
            deep_ranks = arrays["deep_ranks"] if deep else None
            deep_known = arrays["deep_known"] if deep else None
        return cls(ranks, queries, known, deep_ranks, deep_known)


_CACHE: dict[tuple[int, str], Provenance] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 8


def provenance(campaign: Campaign) -> Provenance:
    """The campaign's provenance, read once per process (it never changes after pooling)."""
    key = (campaign.pk, campaign.created_at.isoformat())
    with _CACHE_LOCK:
        found = _CACHE.get(key)
    if found is not None:
        return found
    data = Campaign.objects.filter(pk=campaign.pk).values_list("provenance", flat=True).first()
    found = Provenance.from_bytes(data or b"")
    if found.queries.size == 0 and found.ranks.size:
        # Campaigns pooled before queries were stored: every pair's caption, by row.
        rows = Pair.objects.filter(campaign=campaign).values_list("pool_row", "caption_id")
        captions = np.zeros(found.ranks.shape[0], np.int64)
        for row, caption in rows:
            captions[row] = caption
        queries = np.unique(captions)
        found = Provenance(found.ranks, queries, np.zeros((queries.size, found.ranks.shape[1])))
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = found
    return found
