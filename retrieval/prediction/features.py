"""Pure: what is known about each pooled (caption, video) pair before anyone judges it, as one
float32 row per pair: each run's reciprocal rank and within-query standardised score, how many
runs retrieved it near the top, the caption's length in words (short captions are general and
have more positives: FIRE, Rodriguez et al. 2022, §4.1, Fig. 2), the query's pool size, and
columns the caller adds (a semantic proxy's similarity of the caption to the video, S(video,
caption) of Wray et al., CVPR 2021, §4.4 Eq. 5, read from
:func:`retrieval.proxies.relevance.video_set_matrix`; machine assessors' scores). Missing values
are NaN, which gradient-boosted trees route on their own. The inputs are a pool's arrays as
:class:`annotation.campaigns.pooling.Pool` holds them: ``groups`` its ``caption_ids``, ``ranks``
its ``ranks`` (pairs x runs, 1-based, 0 where the run did not pool the pair), ``scores`` from
:func:`run_scores` of its ``caption_ids``, ``video_ids`` and the runs' ranked lists."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.ids import positions_of
from retrieval.search.runs import RankedLists

HITS_AT = (1, 5, 10)
"""The cutoffs at which :func:`pair_features` counts the runs that retrieved a pair."""


@dataclass(frozen=True)
class PairFeatures:
    """One row per pooled pair (``matrix``, float32, pairs x F) and each column's name."""

    matrix: np.ndarray
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        matrix = np.asarray(self.matrix, dtype=np.float32)
        if matrix.ndim != 2:
            raise ValueError("the feature matrix must be 2-D (pairs x features)")
        names = tuple(str(name) for name in self.names)
        if len(names) != matrix.shape[1]:
            raise ValueError(f"{len(names)} names for {matrix.shape[1]} feature columns")
        if len(set(names)) != len(names):
            raise ValueError("feature names must be distinct")
        object.__setattr__(self, "matrix", matrix)
        object.__setattr__(self, "names", names)

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    def column(self, name: str) -> np.ndarray:
        """The column called ``name``."""
        return self.matrix[:, self.names.index(name)]


def pair_features(
    groups: np.ndarray,
    ranks: np.ndarray,
    *,
    scores: np.ndarray | None = None,
    depth: int | None = None,
    caption_words: np.ndarray | None = None,
    extra: Mapping[str, np.ndarray] | None = None,
    run_names: Sequence[str] | None = None,
) -> PairFeatures:
    """The signals of every pooled pair, all pairs at once (a loop over runs only).

    ``groups``: the query (caption) id of each pair; ``ranks``: pairs x runs, the 1-based rank
    each run gave the pair, 0 where it did not retrieve it (ranks beyond ``depth`` count as 0
    when ``depth`` is given); ``scores``: pairs x runs, each run's score of the pair, NaN where
    it has none (:func:`run_scores`), standardised per run within each query over the pairs it
    scored; ``caption_words``: the caption's length in words, per pair; ``extra``: further
    columns by name, one value per pair (NaN: nothing said). Columns, in order: per run
    ``rr:<run>`` (1 / rank, 0 when absent) and ``score_z:<run>`` (NaN when absent), then
    ``runs@1``, ``runs@5``, ``runs@10``, ``runs@depth`` (runs retrieving the pair that high),
    ``rr_mean`` and ``rr_best`` over runs, ``caption_words``, ``pool_size`` and the extras."""
    groups = np.asarray(groups)
    if groups.ndim != 1:
        raise ValueError("groups must be a 1-D array of query ids, one per pair")
    pairs = groups.shape[0]
    ranks = np.asarray(ranks)
    if ranks.ndim != 2 or ranks.shape[0] != pairs:
        raise ValueError("ranks must be pairs x runs, one row per pair")
    if not np.issubdtype(ranks.dtype, np.integer) and ranks.size:
        raise ValueError("ranks must be integers (0: not retrieved)")
    ranks = ranks.astype(np.int64)
    if (ranks < 0).any():
        raise ValueError("ranks must be 1-based, 0 where the run did not retrieve the pair")
    if depth is not None:
        if depth < 1:
            raise ValueError("depth must be at least 1")
        ranks = np.where(ranks > depth, 0, ranks)
    runs = ranks.shape[1]
    names = [f"run{r}" for r in range(runs)] if run_names is None else [str(n) for n in run_names]
    if len(names) != runs:
        raise ValueError(f"{len(names)} run names for {runs} runs")
    if scores is not None:
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != ranks.shape:
            raise ValueError("scores must have the shape of ranks (pairs x runs)")

    _, query, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    query = query.ravel()
    retrieved = ranks > 0
    reciprocal = np.divide(1.0, ranks, out=np.zeros(ranks.shape), where=retrieved)

    columns: list[tuple[str, np.ndarray]] = []  # (name, values), in order
    for r, name in enumerate(names):
        columns.append((f"rr:{name}", reciprocal[:, r]))
        if scores is not None:
            columns.append((f"score_z:{name}", _standardised(scores[:, r], query, sizes.size)))
    for k in HITS_AT:
        columns.append((f"runs@{k}", np.count_nonzero(retrieved & (ranks <= k), axis=1)))
    columns.append(("runs@depth", np.count_nonzero(retrieved, axis=1)))
    columns.append(("rr_mean", reciprocal.mean(axis=1) if runs else np.zeros(pairs)))
    columns.append(("rr_best", reciprocal.max(axis=1, initial=0.0)))
    if caption_words is not None:
        columns.append(("caption_words", _per_pair(caption_words, pairs, "caption_words")))
    columns.append(("pool_size", sizes[query]))
    for name, values in (extra or {}).items():
        columns.append((str(name), _per_pair(values, pairs, name)))
    names, values = zip(*columns, strict=True)
    return PairFeatures(np.stack(values, axis=1, dtype=np.float32), names)


def shuffled(features: PairFeatures, seed: int) -> PairFeatures:
    """The same rows in a seeded random order: features that carry no information about which
    pair they belong to (the useless-predictor control)."""
    order = np.random.default_rng(seed).permutation(len(features))
    return PairFeatures(features.matrix[order], features.names)


def run_scores(
    caption_ids: np.ndarray,
    video_ids: np.ndarray,
    runs: Sequence[RankedLists],
    depth: int | None = None,
) -> np.ndarray:
    """Pairs x runs: the score each run gave each (caption, video) pair within its top ``depth``
    (all it ranked when None), NaN where it did not rank it there; the ``scores`` of
    :func:`pair_features` for a pool's ``caption_ids`` and ``video_ids``."""
    caption_ids = np.asarray(caption_ids, dtype=np.int64)
    video_ids = np.asarray(video_ids, dtype=np.int64)
    if caption_ids.shape != video_ids.shape or caption_ids.ndim != 1:
        raise ValueError("caption_ids and video_ids must be equal-length 1-D arrays")
    out = np.full((caption_ids.size, len(runs)), np.nan)
    for r, run in enumerate(runs):
        query_ids = np.asarray(run.query_ids, dtype=np.int64)
        if np.unique(query_ids).size != query_ids.size:
            raise ValueError("a query appears twice in the run")
        row_of = positions_of(query_ids, caption_ids)
        found = row_of >= 0
        rows = row_of[found]
        items = np.asarray(run.item_ids)[rows, :depth]
        hit = items == video_ids[found, None]
        ranked = hit.any(axis=1)
        where = np.flatnonzero(found)[ranked]
        out[where, r] = np.asarray(run.scores)[rows[ranked], hit[ranked].argmax(axis=1)]
    return out


def _standardised(values: np.ndarray, query: np.ndarray, queries: int) -> np.ndarray:
    """``values`` as z-scores within each query over its finite entries (0 where the query's
    values do not vary), NaN where not finite."""
    present = np.isfinite(values)
    at = query[present]
    given = values[present]
    count = np.bincount(at, minlength=queries)
    mean = np.bincount(at, weights=given, minlength=queries) / np.maximum(count, 1)
    deviation = given - mean[at]
    spread = np.sqrt(
        np.bincount(at, weights=deviation**2, minlength=queries) / np.maximum(count, 1)
    )
    z = np.divide(deviation, spread[at], out=np.zeros_like(deviation), where=spread[at] > 0)
    out = np.full(values.shape, np.nan)
    out[present] = z
    return out


def _per_pair(values: np.ndarray, pairs: int, name: str) -> np.ndarray:
    column = np.asarray(values, dtype=np.float64)
    if column.shape != (pairs,):
        raise ValueError(f"{name} must hold one value per pair ({pairs})")
    return column
