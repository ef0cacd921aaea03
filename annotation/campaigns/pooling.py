"""System pooling (FIRE §2.2.1): per query caption, the union of each run's top-``depth``
videos with the rank each run gave them, leaving out the caption's own video and pairs
judged before; FIRE §4.3 shows a sample of queries suffices (:func:`sample_queries`).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.ids import PairKeys, contains, lookup
from retrieval.scoring.metrics import align_rows
from retrieval.search.runs import RankedLists

#: Largest pooling depth: ranks are int16 and one value above the deepest rank is reserved.
MAX_DEPTH = int(np.iinfo(np.int16).max) - 1
_UNRANKED = np.iinfo(np.int16).max

Pairs = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Pool:
    """Pooled pairs sorted by (caption id, best rank, video id); ``ranks[p, r]`` is the
    1-based rank run ``r`` gave pair ``p`` (0: not within the pooling depth)."""

    caption_ids: np.ndarray
    video_ids: np.ndarray
    ranks: np.ndarray

    def __post_init__(self) -> None:
        if self.caption_ids.shape != self.video_ids.shape or self.caption_ids.ndim != 1:
            raise ValueError("caption_ids and video_ids must be equal-length 1-D arrays")
        if self.ranks.ndim != 2 or self.ranks.shape[0] != self.caption_ids.shape[0]:
            raise ValueError("ranks must have one row per pair")

    def __len__(self) -> int:
        return int(self.caption_ids.shape[0])

    @property
    def run_count(self) -> int:
        return int(self.ranks.shape[1])

    def overlap_counts(self) -> np.ndarray:
        """Entry ``m`` counts the pairs retrieved by exactly ``m`` runs (shape R + 1)."""
        runs_per_pair = np.count_nonzero(self.ranks, axis=1)
        return np.bincount(runs_per_pair, minlength=self.run_count + 1)


def sample_queries(query_ids: np.ndarray, n: int, seed: int) -> np.ndarray:
    """A seeded sample of ``n`` distinct query ids, sorted, or all of them when fewer (FIRE
    §4.3: a sample of queries suffices)."""
    if n < 0:
        raise ValueError("n must be non-negative")
    distinct = np.unique(np.asarray(query_ids, dtype=np.int64))
    if n >= distinct.size:
        return distinct
    chosen = np.random.default_rng(seed).choice(distinct.size, size=n, replace=False)
    return np.sort(distinct[chosen])


def pool(
    runs: Sequence[RankedLists],
    depth: int,
    *,
    origin: Mapping[int, int] | Pairs | None = None,
    exclude: Pairs | None = None,
    queries: np.ndarray | None = None,
) -> Pool:
    """Pool the top ``depth`` of each run (FIRE §2.2.1) over ``queries`` (all if None),
    leaving out each caption's ``origin`` video and the ``exclude`` (caption, video) pairs."""
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be between 1 and {MAX_DEPTH}")
    wanted = None if queries is None else np.unique(np.asarray(queries, dtype=np.int64))
    cut = [_restricted(run, depth, wanted) for run in runs]
    captions = np.unique(_cat([query_ids for query_ids, _ in cut], np.int64))

    caption_pos, videos, ranks, run_index = [], [], [], []
    for r, (query_ids, items) in enumerate(cut):
        rows, cols = np.nonzero(items >= 0)
        caption_pos.append(np.searchsorted(captions, query_ids)[rows])
        videos.append(items[rows, cols])
        ranks.append((cols + 1).astype(np.int16))
        run_index.append(np.full(rows.size, r, dtype=np.int64))
    entry_videos = _cat(videos, np.int64)
    keys = PairKeys.fit(captions.size, entry_videos)
    pair_keys, pair_of_entry = np.unique(
        keys.pack(_cat(caption_pos, np.int64), entry_videos), return_inverse=True
    )
    run_count = len(runs)
    provenance = np.full((pair_keys.size, run_count), _UNRANKED, dtype=np.int16)
    np.minimum.at(
        provenance.reshape(-1),
        pair_of_entry * run_count + _cat(run_index, np.int64),
        _cat(ranks, np.int16),
    )
    best = provenance.min(axis=1, initial=_UNRANKED).astype(np.int64)  # each pair's best rank
    provenance[provenance == _UNRANKED] = 0

    excluded_captions, excluded_videos = _excluded_pairs(origin, exclude)
    at, pooled = lookup(captions, excluded_captions)
    excluded = keys.encode(at[pooled], excluded_videos[pooled])
    keep = ~contains(np.unique(excluded), pair_keys)
    pair_keys, provenance, best = pair_keys[keep], provenance[keep], best[keep]
    caption_pos, video_ids = keys.unpack(pair_keys)
    # pair_keys ascend by (caption, video), so a stable sort on (caption, best rank) keeps
    # video order.
    order = np.argsort(caption_pos * (depth + 1) + best, kind="stable")
    return Pool(captions[caption_pos[order]], video_ids[order], provenance[order])


def ranks_within(pool: Pool, runs: Sequence[RankedLists], depth: int) -> np.ndarray:
    """Pairs x runs: the rank each run gives each pooled pair within its top ``depth`` (1-based,
    0 = not there), what settles Correct@K deeper than the pool (FIRE §2.1, §2.2.1)."""
    ranks = np.zeros((len(pool), len(runs)), dtype=np.int16)
    for r, run in enumerate(runs):
        items = align_rows(run.query_ids, np.asarray(run.item_ids)[:, :depth], pool.caption_ids)
        hit = items == pool.video_ids[:, None]
        ranks[:, r] = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, 0)
    return ranks


def _restricted(run: RankedLists, depth: int, wanted: np.ndarray | None) -> Pairs:
    """A run's query ids and top-``depth`` item ids, limited to the ``wanted`` queries."""
    query_ids = np.asarray(run.query_ids, dtype=np.int64)
    items = np.asarray(run.item_ids[:, :depth], dtype=np.int64)
    if wanted is None:
        return query_ids, items
    keep = contains(wanted, query_ids)
    return query_ids[keep], items[keep]


def _excluded_pairs(origin: Mapping[int, int] | Pairs | None, exclude: Pairs | None) -> Pairs:
    """Origin and already-judged pairs as one pair of caption and video id arrays."""
    if isinstance(origin, Mapping):
        origin = (
            np.fromiter(origin.keys(), dtype=np.int64, count=len(origin)),
            np.fromiter(origin.values(), dtype=np.int64, count=len(origin)),
        )
    parts = [part for part in (origin, exclude) if part is not None]
    captions = _cat([np.asarray(c, dtype=np.int64).ravel() for c, _ in parts], np.int64)
    videos = _cat([np.asarray(v, dtype=np.int64).ravel() for _, v in parts], np.int64)
    if captions.shape != videos.shape:
        raise ValueError("excluded caption and video id arrays must have equal length")
    return captions, videos


def _cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    """Concatenate ``parts`` (possibly none) into one 1-D array of ``dtype``."""
    return np.concatenate([np.zeros(0, dtype), *parts]).astype(dtype, copy=False)
