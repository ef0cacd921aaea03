"""Pure: the order in which a pool's pairs are judged (numpy, no ORM).

A strategy lays a :class:`~annotation.campaigns.pooling.Pool` out as queries x slots and gives
each open pair a priority (higher is served sooner, ``-inf`` once judged or not needed; ties
to the lower best rank); :meth:`JudgingOrder.update` recomputes one query after a label.
Across queries the queue interleaves round-robin, fewest judgements first, so partial work
covers every query evenly (``depth`` keeps caption blocks). :func:`full_order` replays a
strategy against known labels. ``known_positive_rank`` (queries x runs, 1-based, 0 = none)
is where each run already has a positive outside the pool (the caption's own video).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from annotation.campaigns.pooling import Pool

DEFAULT_KS = (1, 5, 10)
RBP_P = 0.8
RRF_K = 60
_NEVER = np.iinfo(np.int32).max
_OFF = -np.inf


@dataclass(frozen=True)
class Layout:
    """A pool as queries x slots: ``pair_of[q, s]`` is a pair index (-1 padding), ``ranks`` is
    queries x slots x runs."""

    caption_ids: np.ndarray
    pair_of: np.ndarray
    ranks: np.ndarray
    query_of: np.ndarray
    slot_of: np.ndarray

    @classmethod
    def of(cls, pool: Pool) -> "Layout":
        captions, starts, sizes = np.unique(pool.caption_ids, return_index=True, return_counts=True)
        if len(pool) and (np.diff(pool.caption_ids) < 0).any():
            raise ValueError("a pool's pairs must be grouped by caption in ascending order")
        query_of = np.repeat(np.arange(captions.size), sizes)
        slot_of = np.arange(len(pool)) - np.repeat(starts, sizes)
        slots = int(sizes.max()) if sizes.size else 0
        pair_of = np.full((captions.size, slots), -1, dtype=np.int64)
        pair_of[query_of, slot_of] = np.arange(len(pool))
        ranks = np.zeros((captions.size, slots, pool.run_count), dtype=np.int32)
        ranks[query_of, slot_of] = pool.ranks
        return cls(captions, pair_of, ranks, query_of, slot_of)

    @property
    def valid(self) -> np.ndarray:
        return self.pair_of >= 0


class JudgingOrder:
    """A strategy's state: labels seen so far and every open pair's priority (queries x slots).

    Subclasses define :meth:`_scores`, the priorities of some queries' pairs from the state.
    """

    name = ""
    blocks = False  # serve a caption's pairs together (today's order) instead of round-robin
    adaptive = True  # priorities change with labels: the live queue recomputes them per submit
    keeps_captions = False  # the live queue may serve a caption's open pairs one after another

    def __init__(
        self,
        pool: Pool,
        *,
        known_positive_rank: np.ndarray | None = None,
        ks: Sequence[int] = DEFAULT_KS,
        p: float = RBP_P,
    ) -> None:
        self.layout = Layout.of(pool)
        rows, slots = self.layout.pair_of.shape
        runs = pool.run_count
        self.ks = tuple(int(k) for k in ks)
        self.p = float(p)
        self.judged = ~self.layout.valid
        self.relevant = np.zeros((rows, slots), dtype=bool)
        self.judged_count = np.zeros(rows, dtype=np.int64)
        known = (
            np.zeros((rows, runs), dtype=np.int32)
            if known_positive_rank is None
            else np.asarray(known_positive_rank, dtype=np.int32)
        )
        if known.shape != (rows, runs):
            raise ValueError("known_positive_rank must be queries x runs")
        self.known_positive_rank = np.where(known > 0, known, _NEVER)
        self.in_run = self.layout.ranks > 0
        self.hits = np.zeros((rows, runs), dtype=np.int32)  # judged relevant in each run's list
        self.misses = np.zeros((rows, runs), dtype=np.int32)  # judged irrelevant
        self.priority = self._scores(np.arange(rows))

    # -- the live interface -------------------------------------------------------------
    def update(self, pair: int, relevant: bool) -> None:
        """Record one label and recompute the priorities of that query's pairs only."""
        row = np.array([self.layout.query_of[pair]])
        slot = np.array([self.layout.slot_of[pair]])
        self._record(row, slot, np.array([bool(relevant)]))
        self.priority[row] = self._scores(row)

    def pair_priorities(self) -> np.ndarray:
        """Every pool pair's priority in pool order (``-inf``: judged or not needed)."""
        return self.priority[self.layout.query_of, self.layout.slot_of]

    def next_pairs(self, n: int) -> np.ndarray:
        """Up to ``n`` open pairs in serving order: the best pair of each query, queries with
        the fewest judgements first (or, for a block strategy, whole captions in turn)."""
        best = np.argmax(self.priority, axis=1) if self.priority.size else np.zeros(0, int)
        rows = np.arange(self.priority.shape[0])
        top = self.priority[rows, best] if rows.size else np.zeros(0)
        ready = np.flatnonzero(top > _OFF)
        if self.blocks:
            pairs = []
            for row in ready:
                open_slots = np.flatnonzero(self.priority[row] > _OFF)
                by_priority = open_slots[np.argsort(-self.priority[row, open_slots], kind="stable")]
                pairs.extend(self.layout.pair_of[row, by_priority][: n - len(pairs)])
                if len(pairs) >= n:
                    break
            return np.asarray(pairs, dtype=np.int64)
        ready = ready[np.argsort(self.judged_count[ready], kind="stable")][:n]
        return self.layout.pair_of[ready, best[ready]]

    @property
    def needed(self) -> int:
        """Open pairs still served (metric-first drops the ones that can change nothing)."""
        return int(np.count_nonzero(self.priority > _OFF))

    # -- shared state -------------------------------------------------------------------
    def _record(self, rows: np.ndarray, slots: np.ndarray, labels: np.ndarray) -> None:
        """Record one label in each of ``rows`` (distinct queries: one pair per query a round)."""
        if self.judged[rows, slots].any():
            raise ValueError("a pair is judged twice")
        self.judged[rows, slots] = True
        self.relevant[rows, slots] = labels
        self.judged_count[rows] += 1
        in_run = self.in_run[rows, slots]
        self.hits[rows] += in_run & labels[:, None]
        self.misses[rows] += in_run & ~labels[:, None]

    def _open(self, rows: np.ndarray) -> np.ndarray:
        return ~self.judged[rows]

    def _scores(self, rows: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _best_arm(self, rows: np.ndarray, arm_score: np.ndarray) -> np.ndarray:
        """Each open pair's priority: the best score of the runs holding it, ties by the rank in
        that run, so the top pair is the best arm's next unjudged pair."""
        key = np.round(arm_score, 6)[:, None, :] + self._rank_tiebreak[rows]
        return np.where(self._open(rows), key.max(axis=2, initial=_OFF), _OFF)

    @cached_property
    def _rank_tiebreak(self) -> np.ndarray:
        """Queries x slots x runs: minus a billionth of the rank, ``-inf`` where not retrieved."""
        return np.where(self.in_run, np.minimum(self.layout.ranks, 999) * -1e-9, _OFF)


class _Static(JudgingOrder):
    """A fixed priority per pair (``_weights``); a label only closes the pair."""

    adaptive = False

    def _scores(self, rows: np.ndarray) -> np.ndarray:
        return np.where(self._open(rows), self._weights[rows], _OFF)


class Depth(_Static):
    """Today's order: caption by caption, each caption's pairs by best rank (FIRE §2.2.1)."""

    name = "depth"
    blocks = True
    keeps_captions = True

    @cached_property
    def _weights(self) -> np.ndarray:
        ranks = self.layout.ranks  # the best rank any run gave the pair (_NEVER: padding)
        return -np.where(ranks > 0, ranks, _NEVER).min(axis=2, initial=_NEVER).astype(np.float64)


class RRF(_Static):
    """Static reciprocal-rank-fusion order: a pair's priority is the sum over runs of
    1 / (60 + rank) (Cormack, Clarke & Büttcher 2009, §2), as trectools' RRF pool ranks pairs."""

    name = "rrf"

    @cached_property
    def _weights(self) -> np.ndarray:
        return np.where(self.in_run, 1.0 / (RRF_K + self.layout.ranks), 0.0).sum(axis=2)


class RBP(_Static):
    """Static rank-biased order: a pair's priority is its summed RBP weight (1 - p) p^(rank - 1)
    over the runs (Moffat, Webber & Zobel 2007, §4 "method A"), as trectools' RBP pool."""

    name = "rbp"

    @cached_property
    def _weights(self) -> np.ndarray:
        return _rbp_weight(self.layout.ranks, self.in_run, self.p).sum(axis=2)


class MetricFirst(JudgingOrder):
    """Serve only pairs that can still change some run's Correct@K (FIRE §2.1) for K in ``ks``,
    in increasing rank: a run's rank-r pair is needed while the smallest K >= r is below the
    run's first judged (or known) positive. Once nothing is needed every pooled run's C@K is
    exact.
    """

    name = "metric-first"
    keeps_captions = True  # every open pair is needed, whichever comes first

    @cached_property
    def _deciding_k(self) -> np.ndarray:
        """Indexed by rank: the smallest K >= rank (``_NEVER`` past the largest K); a pair
        matters to a run while that K is below the run's first positive."""
        top = int(self.layout.ranks.max(initial=0))
        ks = np.sort(np.asarray(self.ks))
        at = np.searchsorted(ks, np.arange(top + 1))
        return np.where(at < ks.size, ks[np.minimum(at, ks.size - 1)], _NEVER)

    def _scores(self, rows: np.ndarray) -> np.ndarray:
        ranks = self.layout.ranks[rows]
        hit_ranks = np.where(self.relevant[rows][:, :, None] & self.in_run[rows], ranks, _NEVER)
        first_hit = np.minimum(hit_ranks.min(axis=1), self.known_positive_rank[rows])
        needs = self.in_run[rows] & (self._deciding_k[ranks] < first_hit[:, None, :])
        lowest = np.where(needs, ranks, _NEVER).min(axis=2)
        return np.where(self._open(rows) & (lowest < _NEVER), -lowest.astype(np.float64), _OFF)


class MaxMean(JudgingOrder):
    """MaxMean (Losada, Parapar & Barreiro 2017, §3.3): runs are arms, a relevant judgement
    the reward; serve the next pair of the arm with the highest posterior mean
    (rel + a) / (judged + a + b), ties by rank. Our adaptation: the Beta prior has strength 2
    centred on the run's relevant rate over all queries (at first the paper's Beta(1, 1)),
    since in an MSVD-like pool a query's own arms see too few positives to learn from."""

    name = "maxmean"
    PRIOR_STRENGTH = 2.0

    def __init__(self, pool: Pool, **options) -> None:
        self.total_hits = np.zeros(pool.run_count)
        self.total_judged = np.zeros(pool.run_count)
        super().__init__(pool, **options)

    def _record(self, rows, slots, labels) -> None:
        super()._record(rows, slots, labels)
        in_run = self.in_run[rows, slots]
        self.total_hits += (in_run & labels[:, None]).sum(axis=0)
        self.total_judged += in_run.sum(axis=0)

    def _scores(self, rows: np.ndarray) -> np.ndarray:
        hits, misses = self.hits[rows], self.misses[rows]
        rate = (self.total_hits + 1.0) / (self.total_judged + 2.0)
        a, b = self.PRIOR_STRENGTH * rate, self.PRIOR_STRENGTH * (1.0 - rate)
        return self._best_arm(rows, (hits + a) / (hits + misses + a + b))


class MoveToFront(JudgingOrder):
    """Move-to-front pooling (Cormack, Palmer & Clarke 1998, §3): stay with a run while it
    yields relevant pairs; each irrelevant pair lowers the priority of the runs that retrieved
    it. A run's score is minus its irrelevant judgements, plus a half for the runs holding the
    query's last pair when that pair was relevant (so a hot run keeps the front); ties by rank.
    """

    name = "mtf"

    def __init__(self, pool: Pool, **options) -> None:
        rows = np.unique(pool.caption_ids).size
        self.last_slot = np.full(rows, -1, dtype=np.int64)
        self.last_hit = np.zeros(rows, dtype=bool)
        super().__init__(pool, **options)

    def _record(self, rows, slots, labels) -> None:
        super()._record(rows, slots, labels)
        self.last_slot[rows] = slots
        self.last_hit[rows] = labels

    def _scores(self, rows: np.ndarray) -> np.ndarray:
        misses = self.misses[rows]
        last = np.maximum(self.last_slot[rows], 0)
        hot = self.in_run[rows, last] & (self.last_hit[rows] & (self.last_slot[rows] >= 0))[:, None]
        return self._best_arm(rows, -misses + 0.5 * hot)


class AdaptiveRBP(JudgingOrder):
    """Adaptive rank-biased pooling (Moffat, Webber & Zobel 2007, §4 "method C"): a pair's
    priority is its RBP weight summed over the runs, each run weighted by its residual, the
    RBP weight it still leaves unresolved (its unjudged pooled pairs plus p^depth below the
    pool), so runs with much unknown weight are resolved first. p = 0.8 by default.
    """

    name = "rbp-adaptive"

    def _scores(self, rows: np.ndarray) -> np.ndarray:
        weight = _rbp_weight(self.layout.ranks[rows], self.in_run[rows], self.p)
        open_ = self._open(rows)
        residual = (weight * open_[:, :, None]).sum(axis=1) + self._below_pool
        return np.where(open_, (weight * residual[:, None, :]).sum(axis=2), _OFF)

    @cached_property
    def _below_pool(self) -> float:
        """RBP weight a run leaves below the pool depth: p^depth."""
        return self.p ** int(self.layout.ranks.max(initial=0))


def _rbp_weight(ranks: np.ndarray, in_run: np.ndarray, p: float) -> np.ndarray:
    """(1 - p) p^(rank - 1) where the run retrieved the pair, 0 elsewhere."""
    return np.where(in_run, (1.0 - p) * p ** (np.maximum(ranks, 1) - 1.0), 0.0)


STRATEGIES: dict[str, type[JudgingOrder]] = {
    cls.name: cls for cls in (Depth, MetricFirst, MaxMean, MoveToFront, AdaptiveRBP, RRF, RBP)
}


def make_order(strategy: str, pool: Pool, **options) -> JudgingOrder:
    """A fresh state of the named strategy over ``pool`` (options: known_positive_rank, ks, p)."""
    try:
        return STRATEGIES[strategy](pool, **options)
    except KeyError:
        known = ", ".join(STRATEGIES)
        raise ValueError(f"unknown judging order {strategy!r} (known: {known})") from None


@dataclass(frozen=True)
class FullOrder:
    """Every pool pair in the order a strategy serves it, given the labels; the first
    ``needed`` are the ones it served before nothing was needed (all, except metric-first)."""

    pairs: np.ndarray
    needed: int


def full_order(
    strategy: str | JudgingOrder,
    pool: Pool,
    labels: np.ndarray,
    *,
    interleave: bool | None = None,
    seed: int | None = None,
    **options,
) -> FullOrder:
    """Replay a strategy against complete ``labels`` (bool per pool pair), one round-robin
    round of queries at a time; ``interleave`` overrides the strategy's block serving. Pairs
    no longer needed follow, round-robin by best rank (reopened as budget allows). A ``seed``
    shuffles the order of queries within each round (and of caption blocks)."""
    state = (
        strategy if isinstance(strategy, JudgingOrder) else make_order(strategy, pool, **options)
    )
    layout = state.layout
    labels = np.asarray(labels, dtype=bool)
    if labels.shape != (len(pool),):
        raise ValueError("labels must hold one value per pool pair")
    blocks = state.blocks if interleave is None else not interleave
    queries = layout.pair_of.shape[0]
    turn = np.arange(queries) if seed is None else np.random.default_rng(seed).permutation(queries)
    if blocks and isinstance(state, _Static):
        position = np.argsort(turn)
        served = np.lexsort((-state.pair_priorities(), position[layout.query_of]))
        return FullOrder(served, len(served))
    rounds = []
    active = turn
    while active.size:
        slots = np.argmax(state.priority[active], axis=1)
        ready = state.priority[active, slots] > _OFF
        active, slots = active[ready], slots[ready]
        if not active.size:
            break
        pairs = layout.pair_of[active, slots]
        rounds.append(pairs)
        state._record(active, slots, labels[pairs])
        state.priority[active] = state._scores(active)
    served = np.concatenate([np.zeros(0, np.int64), *rounds])
    rest = np.flatnonzero(~np.isin(np.arange(len(pool)), served))
    within = layout.slot_of[rest]  # pool order within a caption is by best rank
    rest = rest[np.lexsort((np.argsort(turn)[layout.query_of[rest]], within))]
    return FullOrder(np.concatenate([served, rest]), int(served.size))


def queue_positions(
    state: JudgingOrder, turn: np.ndarray, queries: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each pool pair's queue position (lower is served sooner) and whether it is parked
    (unjudged, no longer needed). Query ``q``'s i-th best open pair goes to
    ``(judged_q + i) * queries + turn[q]`` (round-robin, fewest judgements first); a block
    strategy serves caption after caption in ``turn`` order. ``queries``: the campaign's
    count when ``state`` holds only some queries."""
    priority = state.priority
    rows, slots = priority.shape
    queries = rows if queries is None else int(queries)
    turn = np.asarray(turn, dtype=np.int64).reshape(rows)
    order = np.argsort(-priority, axis=1, kind="stable")
    within = np.empty_like(order)
    np.put_along_axis(within, order, np.broadcast_to(np.arange(slots), order.shape), axis=1)
    if state.blocks:
        position = turn[:, None] * slots + within
    else:
        position = (state.judged_count[:, None] + within) * queries + turn[:, None]
    parked = state.layout.valid & ~state.judged & (priority == _OFF)
    layout = state.layout
    return position[layout.query_of, layout.slot_of], parked[layout.query_of, layout.slot_of]


def live_relevant(relevant, total):
    """Whether the order counts a pair with ``relevant`` of ``total`` live labels as relevant
    (scalars or arrays): at least half of its labels say so. A tie counts as relevant until a
    further label (or an admin) settles it, so a possible positive is not held against the
    runs that retrieved it meanwhile; a pair with no labels is not relevant."""
    return (2 * relevant >= total) & (relevant > 0)


def query_state(
    strategy: str,
    ranks: np.ndarray,
    judged: Sequence[tuple[int, bool]],
    known_positive_rank: np.ndarray | None = None,
    **options,
) -> JudgingOrder:
    """One query's state for the live queue, rebuilt on every submit from ``ranks`` (pairs x
    runs, pool order), the labels so far as (pair index, relevant) in the order given, and
    the runs' known positive ranks; MaxMean's prior is therefore the paper's uniform one."""
    ranks = np.asarray(ranks, dtype=np.int32)
    n = ranks.shape[0]
    pool = Pool(np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.int64), ranks)
    known = None if known_positive_rank is None else np.asarray(known_positive_rank)[None, :]
    state = make_order(strategy, pool, known_positive_rank=known, **options)
    row = np.zeros(1, dtype=np.int64)
    for pair, relevant in judged:
        state._record(row, np.array([state.layout.slot_of[pair]]), np.array([bool(relevant)]))
    if len(judged):
        state.priority[row] = state._scores(row)
    return state


def exact_correct_at(
    ranks: np.ndarray,
    query_of: np.ndarray,
    judged: np.ndarray,
    relevant: np.ndarray,
    known_positive_rank: np.ndarray,
    ks: Sequence[int] = DEFAULT_KS,
) -> np.ndarray:
    """Runs x ks: the share of queries whose Correct@K (FIRE §2.1) judging can no longer
    change: the top K holds a positive (judged or known) or no unjudged pool pair. Ranks are
    widened to int64 first: NumPy 2 would cast ``_NEVER`` into the stored int16 as -1."""
    ranks = np.asarray(ranks, dtype=np.int64)
    known = np.asarray(known_positive_rank, dtype=np.int64)
    judged = np.asarray(judged, dtype=bool)
    relevant = np.asarray(relevant, dtype=bool)
    queries, runs = known.shape
    retrieved = ranks > 0
    first_hit = np.where(known > 0, known, _NEVER)
    hit_rank = np.where(retrieved & relevant[:, None], ranks, _NEVER)
    first_unjudged = np.full((queries, runs), _NEVER, dtype=np.int64)
    open_rank = np.where(retrieved & ~judged[:, None], ranks, _NEVER)
    np.minimum.at(first_hit, query_of, hit_rank)
    np.minimum.at(first_unjudged, query_of, open_rank)
    if queries == 0:
        return np.ones((runs, len(ks)))
    shares = [((first_hit <= int(k)) | (first_unjudged > int(k))).mean(axis=0) for k in ks]
    return np.stack(shares, axis=1)
