"""Pure: replay a judging order against complete labels and measure what partial judging gets.

The world is :class:`annotation.simulation.model.World`, its labels the crowd (one right
label per pair). After the first n pairs of a strategy's order are judged, each run is scored
as trec_eval would (unjudged pairs irrelevant) and compared with its score under the complete
labels.
"""

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from annotation.ordering.orders import DEFAULT_KS, FullOrder, full_order
from annotation.simulation.model import METRICS, World


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
        return asdict(self)


def budget_steps(pool_pairs: int, budget: int | None, count: int = 10) -> list[int]:
    """``count`` evenly spaced judgement counts up to the budget (the whole pool by default)."""
    top = pool_pairs if budget is None else min(int(budget), pool_pairs)
    return sorted({int(round(top * (i + 1) / count)) for i in range(count)} - {0}) or [0]


def seeded_order(world: World, strategy: str, seed: int = 0) -> FullOrder:
    """``strategy``'s order of the whole pool, the query order within rounds shuffled by ``seed``."""
    known_rank = world.known_positive_rank()
    return full_order(strategy, world.pool, world.labels, seed=seed, known_positive_rank=known_rank)


def judged_first(world: World, order: FullOrder, n: int) -> np.ndarray:
    """Bool per pool pair: the first ``n`` pairs of ``order``."""
    judged = np.zeros(len(world.pool), bool)
    judged[order.pairs[:n]] = True
    return judged


def exact_after(world: World, order: FullOrder, ks: Sequence[int] = DEFAULT_KS) -> int:
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
    world: World,
    strategy: str,
    steps: Sequence[int],
    *,
    seeds: int = 1,
    progress: Callable[[], None] | None = None,
) -> Replay:
    """Replay ``strategy`` ``seeds`` times (query order within rounds shuffled by the seed) and
    average positives found and score errors at each step; ``exact_after`` is the largest
    over the seeds (for metric-first: when no needed pair was left), None past the last step."""
    complete = world.scores()
    positives = np.zeros(len(steps))
    errors = [{name: dict.fromkeys(METRICS, 0.0) for name in world.run_names} for _ in steps]
    exact = 0
    for seed in range(seeds):
        order = seeded_order(world, strategy, seed)
        exact = max(
            exact, order.needed if strategy == "metric-first" else exact_after(world, order)
        )
        found = np.concatenate([[0], np.cumsum(world.labels[order.pairs])])
        for i, n in enumerate(steps):
            positives[i] += found[n]
            for name, values in world.scores(judged_first(world, order, n)).items():
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
