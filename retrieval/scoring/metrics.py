"""Retrieval metrics over whole runs as arrays (pure numpy, no ORM). A run is scored from a
:class:`RankedJudgements` whose rows are the qrels' queries in trec_eval's rank order
(:func:`retrieval.search.runs.trec_sort`); an unanswered query scores 0 (``trec_eval -c``).
Correct@K is FIRE §2.1's Recall@K of text-to-video papers; the others are trec_eval's or
ir_measures', equal to them to 1e-9 in the randomized tests, except Judged@K where ir_measures
breaks ties by docno ascending; FIRE-AP is FIRE §2.1 Eq. 2 as the authors' code computes it.
Relevance > 0 is a positive, 0 a judged negative, < 0 pooled but unjudged (trec_eval's reading)."""

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from retrieval.ids import PairKeys, lookup

DEFAULT_KS = (1, 5, 10)
FIRE_AP_CUTOFF = 20

LOOKUP_TABLE_CELLS = 1 << 26  # the largest queries x items byte table the lookup allocates
_UNJUDGED, _NEGATIVE, _POSITIVE = 1, 2, 3

FIRST_POSITIVE = "first positive rank"
FIRST_POSITIVE_MEAN = "first positive: mean rank"
FIRST_POSITIVE_MEDIAN = "first positive: median rank"
FIRST_POSITIVE_FOUND = "first positive: found share"


METRIC_NAMES: tuple[str, ...] = (
    *(f"C@{k}" for k in DEFAULT_KS),
    *(f"R@{k}" for k in DEFAULT_KS),
    "AP",
    "FIRE-AP",
    "nDCG@10",
    "Judged@10",
    "bpref",
    "AP'",
    FIRST_POSITIVE_MEAN,
    FIRST_POSITIVE_MEDIAN,
    FIRST_POSITIVE_FOUND,
)
"""The keys of ``mean_scores(evaluate(j), ...)`` with the default cutoffs, in order."""


@dataclass(frozen=True)
class RankedJudgements:
    """What the qrels say about each ranked item of a run, queries x depth, in rank order.
    ``relevant``/``judged`` per rank (positives are judged); ``n_relevant`` (R) and
    ``n_nonrelevant`` (N) per query in the qrels; ``n_retrieved``: list lengths (default: depth)."""

    relevant: np.ndarray
    judged: np.ndarray
    n_relevant: np.ndarray
    n_nonrelevant: np.ndarray
    n_retrieved: np.ndarray | None = None

    def __post_init__(self) -> None:
        relevant, judged = (np.asarray(a, dtype=bool) for a in (self.relevant, self.judged))
        if relevant.ndim != 2 or judged.shape != relevant.shape:
            raise ValueError("relevant and judged must be equal-shaped 2-D bool arrays")
        rows, depth = relevant.shape
        checked = {"relevant": relevant, "judged": judged}
        for name in ("n_relevant", "n_nonrelevant", "n_retrieved"):
            value = getattr(self, name)
            if value is None and name == "n_retrieved":
                value = np.full(rows, depth)
            checked[name] = np.asarray(value, dtype=np.int64)
            if checked[name].shape != (rows,):
                raise ValueError(f"{name} must hold one count per query row")
        if (relevant & ~judged).any():
            raise ValueError("every relevant item must also be judged")
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def __len__(self) -> int:
        return int(self.relevant.shape[0])

    @property
    def depth(self) -> int:
        return int(self.relevant.shape[1])


def judgements_from_arrays(
    item_ids: np.ndarray, qrel_rows: np.ndarray, qrel_items: np.ndarray, qrel_rel: np.ndarray
) -> RankedJudgements:
    """Look every ranked item (``item_ids``, queries x depth, -1 trailing) up in the qrels at once.
    (row, item) pairs become int64 keys, read from a byte table up to :data:`LOOKUP_TABLE_CELLS`,
    else by binary search. A pair judged twice is a ValueError, as in
    :func:`retrieval.formats.trec.read_qrels`."""
    item_ids = np.asarray(item_ids, dtype=np.int64)
    if item_ids.ndim != 2:
        raise ValueError("item_ids must be a 2-D queries x depth array")
    n_rows, depth = item_ids.shape
    rows = np.asarray(qrel_rows, dtype=np.int64).ravel()
    items = np.asarray(qrel_items, dtype=np.int64).ravel()
    rel = np.asarray(qrel_rel, dtype=np.int64).ravel()
    if not rows.shape == items.shape == rel.shape:
        raise ValueError("qrel_rows, qrel_items and qrel_rel must have one entry per qrel")
    pad = item_ids < 0
    if depth > 1 and (pad[:, :-1] & ~pad[:, 1:]).any():
        raise ValueError("padding (-1) must only trail each ranked list")
    n_retrieved = depth - np.count_nonzero(pad, axis=1)
    if len(rows) and (rows.min() < 0 or rows.max() >= n_rows):
        raise ValueError(f"qrel_rows must lie in 0..{n_rows - 1}")
    if len(items) and items.min() < 0:
        raise ValueError("qrel_items must be non-negative ids")
    n_relevant = np.bincount(rows[rel > 0], minlength=n_rows)
    n_nonrelevant = np.bincount(rows[rel == 0], minlength=n_rows)
    if len(rows) == 0 or depth == 0:
        nothing = np.zeros((n_rows, depth), dtype=bool)
        return RankedJudgements(nothing, nothing, n_relevant, n_nonrelevant, n_retrieved)

    # 1: pooled but unjudged (rel < 0), 2: judged negative, 3: positive; 0: not in the qrels
    kind = np.where(rel > 0, _POSITIVE, np.where(rel == 0, _NEGATIVE, _UNJUDGED)).astype(np.int8)
    keys = PairKeys.fit(n_rows, items, dense_limit=LOOKUP_TABLE_CELLS)
    judged_pairs = keys.pack(rows, items)
    ranked_pairs = keys.encode(np.arange(n_rows, dtype=np.int64)[:, None], item_ids)
    pad = pad | (ranked_pairs < 0)  # padding, or an item no qrel judges
    if n_rows * keys.span <= LOOKUP_TABLE_CELLS:
        table = np.zeros(n_rows * keys.span, dtype=np.int8)
        table[judged_pairs] = kind
        if np.count_nonzero(table) != len(judged_pairs):
            raise ValueError("a (query, item) pair is judged more than once in the qrels")
        found = table[ranked_pairs]
    else:
        packed = np.sort(judged_pairs << 2 | kind)  # the kind rides in the two low bits
        judged_keys = packed >> 2
        if (judged_keys[1:] == judged_keys[:-1]).any():
            raise ValueError("a (query, item) pair is judged more than once in the qrels")
        at, hit = lookup(judged_keys, ranked_pairs)
        found = np.where(hit, packed[at] & 3, 0)
    found[pad] = 0
    return RankedJudgements(
        found == _POSITIVE, found >= _NEGATIVE, n_relevant, n_nonrelevant, n_retrieved
    )


def align_rows(
    run_query_ids: np.ndarray, item_ids: np.ndarray, query_ids: np.ndarray
) -> np.ndarray:
    """A run's ranked lists re-rowed to ``query_ids`` (the qrels' queries), -1 rows if unanswered;
    other queries are dropped, as trec_eval does. Run query ids must be distinct."""
    run_query_ids = np.asarray(run_query_ids, dtype=np.int64)
    item_ids = np.asarray(item_ids, dtype=np.int64)
    query_ids = np.asarray(query_ids, dtype=np.int64)
    aligned = np.full((len(query_ids), item_ids.shape[1]), -1, dtype=np.int64)
    if len(run_query_ids) == 0:
        return aligned
    order = np.argsort(run_query_ids, kind="stable")
    known = run_query_ids[order]
    if (known[1:] == known[:-1]).any():
        raise ValueError("a query appears twice in the run")
    at, answered = lookup(known, query_ids)
    aligned[answered] = item_ids[order[at[answered]]]
    return aligned


def _check_k(k: int) -> int:
    if int(k) != k or k < 1:
        raise ValueError(f"a cutoff must be a positive integer, not {k!r}")
    return int(k)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator`` as float64, 0 where the denominator is 0."""
    numerator = np.asarray(numerator, dtype=np.float64)
    return np.divide(
        numerator, denominator, out=np.zeros_like(numerator), where=np.asarray(denominator) > 0
    )


def _inverse_ranks(depth: int) -> np.ndarray:
    return 1.0 / np.arange(1, depth + 1, dtype=np.float64)


class _Counts:
    """Running counts down each ranked list, computed once and shared by every metric."""

    def __init__(self, relevant: np.ndarray, judged: np.ndarray | None = None) -> None:
        self.hits = np.asarray(relevant, dtype=bool)
        self.depth = self.hits.shape[1]
        self.hits_so_far = np.cumsum(self.hits, axis=1, dtype=np.int32)
        self.judged = None if judged is None else np.asarray(judged, dtype=bool)

    @cached_property
    def judged_so_far(self) -> np.ndarray:
        return np.cumsum(self.judged, axis=1, dtype=np.int32)

    @cached_property
    def hit_numerators(self) -> np.ndarray:
        """Positives so far at each positive's rank, 0 elsewhere (precision numerators)."""
        return self.hits_so_far * self.hits.astype(np.float64)

    def top(self, so_far: np.ndarray, k: int) -> np.ndarray:
        """How many of the first ``k`` ranks ``so_far`` counted."""
        if self.depth == 0:
            return np.zeros(so_far.shape[0], dtype=np.int32)
        return so_far[:, min(k, self.depth) - 1]


def _correct(c: _Counts, k: int) -> np.ndarray:
    """Correct@K: 1.0 when a positive is in the top ``k`` (FIRE §2.1; trec_eval ``success_k``)."""
    return (c.top(c.hits_so_far, _check_k(k)) > 0).astype(np.float64)


def _recall(c: _Counts, k: int, n_relevant: np.ndarray) -> np.ndarray:
    """Positives in the top ``k`` over R (FIRE §2.1 Eq. 1; trec_eval ``recall_k``); 0 when R = 0."""
    return _ratio(c.top(c.hits_so_far, _check_k(k)), n_relevant)


def _average_precision(c: _Counts, n_relevant: np.ndarray) -> np.ndarray:
    """trec_eval's AP (``map``; FIRE §2.1 Eq. 2): summed precision at retrieved positives over R."""
    return _ratio(c.hit_numerators @ _inverse_ranks(c.depth), n_relevant)


def _fire_average_precision(c: _Counts, cutoff: int) -> np.ndarray:
    """AP as the FIRE authors' code computes it (FIRE §2.1, Table 1): mean precision at each
    positive in the top ``cutoff``, divided by the positives found there, not by R."""
    depth = min(_check_k(cutoff), c.depth)
    precision_sum = c.hit_numerators[:, :depth] @ _inverse_ranks(depth)
    return _ratio(precision_sum, c.top(c.hits_so_far, cutoff))


def _ndcg(c: _Counts, k: int, n_relevant: np.ndarray) -> np.ndarray:
    """nDCG@k with binary gains and trec_eval's ``ndcg_cut`` discount; 0 when R = 0."""
    k = _check_k(k)
    discount = 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))
    hits = c.hits[:, :k]
    dcg = hits.astype(np.float64) @ discount[: hits.shape[1]]
    ideal = np.concatenate([[0.0], np.cumsum(discount)])[np.minimum(n_relevant, k)]
    return _ratio(dcg, ideal)


def _judged(c: _Counts, k: int, n_retrieved: np.ndarray) -> np.ndarray:
    """Share of the top ``k`` judged (ir_measures ``Judged@k``); a shorter list over its length."""
    k = _check_k(k)
    return _ratio(c.top(c.judged_so_far, k), np.minimum(n_retrieved, k))


def _bpref(c: _Counts, n_relevant: np.ndarray, n_nonrelevant: np.ndarray) -> np.ndarray:
    """trec_eval's bpref (Buckley & Voorhees 2004): unjudged items skipped; 0 when R = 0."""
    negatives_above = c.judged_so_far - c.hits_so_far  # at a positive: judged negatives above it
    cap = np.maximum(np.minimum(n_relevant, n_nonrelevant), 1)[:, None]
    penalty = np.minimum(negatives_above, n_relevant[:, None]) / cap
    return _ratio(c.top(c.hits_so_far, c.depth) - (penalty * c.hits).sum(axis=1), n_relevant)


def _condensed_average_precision(c: _Counts, n_relevant: np.ndarray) -> np.ndarray:
    """Judged-only AP (Sakai's condensed list; trec_eval ``map -J``), still over R."""
    precision_sum = (c.hit_numerators / np.maximum(c.judged_so_far, 1)).sum(axis=1)
    return _ratio(precision_sum, n_relevant)


def mean_correct_at_ks(hits: np.ndarray, ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """Mean Correct@K over all rows of ``hits`` for each K, keyed ``"C@K"`` (0.0 if no rows)."""
    counts = _Counts(hits)
    return {f"C@{k}": float(_correct(counts, k).mean()) if len(hits) else 0.0 for k in ks}


def first_positive_rank(relevant: np.ndarray) -> np.ndarray:
    """1-based rank of the first positive per query (FIRE §2.1), NaN when the list holds none."""
    relevant = np.asarray(relevant, dtype=bool)
    ranks = np.argmax(relevant, axis=1).astype(np.float64) + 1.0
    ranks[~relevant.any(axis=1)] = np.nan
    return ranks


def evaluate(
    j: RankedJudgements,
    ks: Sequence[int] = DEFAULT_KS,
    *,
    ndcg_k: int = 10,
    judged_k: int = 10,
    only: Collection[str] | None = None,
) -> dict[str, np.ndarray]:
    """Every per-query metric (float64 per row), keyed in :func:`metric_names` order, plus
    :data:`FIRST_POSITIVE`; ``only`` names the metrics to compute (None: all)."""
    c = _Counts(j.relevant, j.judged)
    wanted = None if only is None else set(only)
    per_query: dict[str, np.ndarray] = {}

    def put(name: str, compute) -> None:
        if wanted is None or name in wanted:
            per_query[name] = compute()

    for k in ks:
        put(f"C@{k}", lambda k=k: _correct(c, k))
    for k in ks:
        put(f"R@{k}", lambda k=k: _recall(c, k, j.n_relevant))
    put("AP", lambda: _average_precision(c, j.n_relevant))
    put("FIRE-AP", lambda: _fire_average_precision(c, FIRE_AP_CUTOFF))
    put(f"nDCG@{ndcg_k}", lambda: _ndcg(c, ndcg_k, j.n_relevant))
    put(f"Judged@{judged_k}", lambda: _judged(c, judged_k, j.n_retrieved))
    put("bpref", lambda: _bpref(c, j.n_relevant, j.n_nonrelevant))
    put("AP'", lambda: _condensed_average_precision(c, j.n_relevant))
    put(FIRST_POSITIVE, lambda: first_positive_rank(j.relevant))
    return per_query


def mean_scores(per_query: dict[str, np.ndarray], n_relevant: np.ndarray) -> dict[str, float]:
    """Means over the queries with a positive (R > 0), as ``trec_eval -c``; NaN when none has one.
    :data:`FIRST_POSITIVE` becomes mean and median over the queries whose list holds a positive,
    plus the share that do."""
    eligible = np.asarray(n_relevant) > 0
    count = int(eligible.sum())
    means: dict[str, float] = {}
    for name, values in per_query.items():
        values = np.asarray(values, dtype=np.float64)[eligible]
        if name != FIRST_POSITIVE:
            means[name] = float(values.mean()) if count else float("nan")
            continue
        found = values[~np.isnan(values)]
        means[FIRST_POSITIVE_MEAN] = float(found.mean()) if len(found) else float("nan")
        means[FIRST_POSITIVE_MEDIAN] = float(np.median(found)) if len(found) else float("nan")
        means[FIRST_POSITIVE_FOUND] = len(found) / count if count else float("nan")
    return means
