"""Pure: replay a judging order against complete labels and measure what partial judging gets.

A :class:`ReplayWorld` is a pool whose every pair has a known label, plus the positives each
run's top-D list holds outside the pool (the caption's own video, pairs judged before). After
the first n pairs of a strategy's order are judged, each run is scored as trec_eval would
(unjudged pairs irrelevant) and compared with its score under the complete labels.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from annotation.campaigns.pooling import Pool
from annotation.ordering.orders import DEFAULT_KS, FullOrder, Layout, full_order
from retrieval.scoring.estimation import RunJudgements, per_query_scores

METRICS = (*(f"C@{k}" for k in DEFAULT_KS), "AP")


@dataclass(frozen=True)
class ReplayWorld:
    """A fully labelled pool (``labels``: bool per pair) of runs cut at ``depth``.

    ``known_positive``: queries x runs x depth, a positive outside the pool at that rank;
    ``known_count``: positives per query outside the pool (R's part no pair can change).
    Queries are the pool's captions in ascending order.
    """

    pool: Pool
    labels: np.ndarray
    run_names: tuple[str, ...]
    depth: int
    known_positive: np.ndarray
    known_count: np.ndarray

    def __post_init__(self) -> None:
        layout = Layout.of(self.pool)
        queries, runs = layout.pair_of.shape[0], self.pool.run_count
        if self.known_positive.shape != (queries, runs, self.depth):
            raise ValueError("known_positive must be queries x runs x depth")
        if len(self.run_names) != runs or self.labels.shape != (len(self.pool),):
            raise ValueError("one name per run and one label per pool pair are required")
        pair_at = np.full((queries, runs, self.depth), -1, dtype=np.int64)
        pair, run = np.nonzero(self.pool.ranks)
        pair_at[layout.query_of[pair], run, self.pool.ranks[pair, run] - 1] = pair
        object.__setattr__(self, "layout", layout)
        object.__setattr__(self, "pair_at", pair_at)

    def known_positive_rank(self) -> np.ndarray:
        """Queries x runs: the first rank holding a known positive (0 when none)."""
        has = self.known_positive.any(axis=2)
        return np.where(has, np.argmax(self.known_positive, axis=2) + 1, 0)

    def run_judgements(self, judged: np.ndarray) -> list[RunJudgements]:
        """Each run's :class:`~retrieval.scoring.estimation.RunJudgements` once the pairs in ``judged``
        (bool per pool pair) are labelled."""
        judged = np.asarray(judged, bool)
        hit = judged & self.labels
        queries = self.layout.pair_of.shape[0]
        n_relevant = self.known_count + np.bincount(self.layout.query_of[hit], minlength=queries)
        n_unjudged = np.bincount(self.layout.query_of[~judged], minlength=queries)
        pooled = self.pair_at >= 0
        at = np.maximum(self.pair_at, 0)
        result = []
        for r in range(self.pool.run_count):
            here = pooled[:, r]
            result.append(
                RunJudgements(
                    relevant=self.known_positive[:, r] | (here & hit[at[:, r]]),
                    unjudged=here & ~judged[at[:, r]],
                    n_relevant=n_relevant,
                    n_unjudged=n_unjudged,
                )
            )
        return result

    def scores(self, judged: np.ndarray) -> dict[str, dict[str, float]]:
        """Each run's mean C@K and AP with the unjudged pairs irrelevant, over the queries
        that have a positive under the complete labels."""
        eligible = self.eligible()
        return {
            name: {
                metric: float(values[eligible].mean()) if eligible.any() else float("nan")
                for metric, values in per_query_scores(
                    run.relevant, run.n_relevant, DEFAULT_KS
                ).items()
            }
            for name, run in zip(self.run_names, self.run_judgements(judged), strict=True)
        }

    def eligible(self) -> np.ndarray:
        queries = self.layout.pair_of.shape[0]
        return (
            self.known_count + np.bincount(self.layout.query_of[self.labels], minlength=queries) > 0
        )


@dataclass(frozen=True)
class Step:
    """After ``judged`` judgements: positives found and each run's score error (partial minus
    complete), means over the seeds."""

    judged: int
    positives_found: float
    errors: dict[str, dict[str, float]]


@dataclass(frozen=True)
class Replay:
    """One strategy replayed: the layout of ``replay_judging --format json``."""

    strategy: str
    pool_pairs: int
    pool_positives: int
    steps: tuple[Step, ...]
    exact_after: int | None

    def as_dict(self) -> dict:
        return {
            "strategy": self.strategy,
            "pool_pairs": self.pool_pairs,
            "pool_positives": self.pool_positives,
            "steps": [
                {"judged": s.judged, "positives_found": s.positives_found, "errors": s.errors}
                for s in self.steps
            ],
            "exact_after": self.exact_after,
        }


def budget_steps(pool_pairs: int, budget: int | None, count: int = 10) -> list[int]:
    """``count`` evenly spaced judgement counts up to the budget (the whole pool by default)."""
    top = pool_pairs if budget is None else min(int(budget), pool_pairs)
    return sorted({int(round(top * (i + 1) / count)) for i in range(count)} - {0}) or [0]


def exact_after(world: ReplayWorld, order: FullOrder, ks: Sequence[int] = DEFAULT_KS) -> int:
    """Judgements after which every run's C@K is exact for every K in ``ks``: for each run,
    query and K, the earlier of its first relevant top-K pair and its last top-K pair."""
    when = np.empty(len(world.pool), dtype=np.int64)
    when[order.pairs] = np.arange(1, len(order.pairs) + 1)
    pooled = world.pair_at >= 0
    at = np.maximum(world.pair_at, 0)
    times = np.where(pooled, when[at], 0)
    relevant_times = np.where(pooled & world.labels[at], when[at], np.iinfo(np.int64).max)
    latest = 0
    for k in ks:
        known = world.known_positive[:, :, :k].any(axis=2)
        last = times[:, :, :k].max(axis=2)
        first_hit = relevant_times[:, :, :k].min(axis=2)
        decided = np.where(known, 0, np.minimum(last, first_hit))
        latest = max(latest, int(decided.max(initial=0)))
    return latest


def replay(
    world: ReplayWorld,
    strategy: str,
    steps: Sequence[int],
    *,
    seeds: int = 1,
    progress: Callable[[], None] | None = None,
) -> Replay:
    """Replay ``strategy`` ``seeds`` times (query order within rounds shuffled by the seed) and
    average positives found and score errors at each step; ``exact_after`` is the largest
    over the seeds (for metric-first: when no needed pair was left), None past the last step."""
    complete = world.scores(np.ones(len(world.pool), bool))
    positives = np.zeros(len(steps))
    errors = [{name: dict.fromkeys(METRICS, 0.0) for name in world.run_names} for _ in steps]
    exact = 0
    known_rank = world.known_positive_rank()
    for seed in range(seeds):
        order = full_order(
            strategy, world.pool, world.labels, seed=seed, known_positive_rank=known_rank
        )
        exact = max(
            exact, order.needed if strategy == "metric-first" else exact_after(world, order)
        )
        found = np.concatenate([[0], np.cumsum(world.labels[order.pairs])])
        for i, n in enumerate(steps):
            judged = np.zeros(len(world.pool), bool)
            judged[order.pairs[:n]] = True
            positives[i] += found[n]
            for name, values in world.scores(judged).items():
                for metric, value in values.items():
                    errors[i][name][metric] += value - complete[name][metric]
            if progress is not None:
                progress()
    return Replay(
        strategy,
        len(world.pool),
        int(world.labels.sum()),
        tuple(
            Step(
                int(n),
                float(positives[i] / seeds),
                {
                    name: {m: round(e / seeds, 6) for m, e in values.items()}
                    for name, values in errors[i].items()
                },
            )
            for i, n in enumerate(steps)
        ),
        exact if exact <= max(steps, default=0) else None,
    )
