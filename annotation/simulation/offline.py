"""Pure: a whole campaign judged offline by simulated annotators, under either policy.

For benchmarks and tests needing many seeded campaigns without the database: a
:class:`~annotation.simulation.model.World` and a crowd of true confusions, following the
live campaign: qualification and gold tasks (counted as spent), then ``fire`` (FIRE §3.1)
or ``adaptive`` labelling (:func:`annotation.policy.confusion.fit` after every round; with
the ``metric-first`` order only pairs deciding some run's C@K, each query's most valuable
task first). Each task goes to a random admitted annotator who has not labelled the pair.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from annotation.ordering.orders import DEFAULT_KS, Layout
from annotation.policy import confusion, label_value
from annotation.policy import rules as policy
from annotation.simulation.model import (
    Outcome,
    Record,
    Rules,
    Tally,
    World,
    judge,
    largest_remainder,
)

DEPTH, METRIC_FIRST = "depth", "metric-first"
ORDERS = (DEPTH, METRIC_FIRST)


@dataclass(frozen=True)
class SimulatedCrowd:
    """Each annotator's true ``sensitivity`` and ``specificity``."""

    sensitivity: np.ndarray
    specificity: np.ndarray

    @classmethod
    def of(cls, shares: Sequence[tuple[float, float, float]], size: int) -> "SimulatedCrowd":
        """``size`` annotators from (share, sensitivity, specificity) profiles, by largest
        remainder."""
        share, sensitivity, specificity = np.array(shares, np.float64).reshape(-1, 3).T
        counts = largest_remainder(share, size)
        return cls(np.repeat(sensitivity, counts), np.repeat(specificity, counts))

    @classmethod
    def parse(cls, spec: str, size: int) -> "SimulatedCrowd":
        """``size`` annotators from a text spec (:data:`CROWD_SPEC_HELP`), ValueError naming the
        part that is wrong."""
        if size < 1:
            raise ValueError("the crowd needs at least one annotator")
        profiles = []
        for part in (p.strip() for p in spec.split(",")):
            share, sep, kind = part.partition(":")
            try:
                weight = float(share)
            except ValueError:
                weight = float("nan")
            if not sep or not 0 < weight <= 1:
                raise ValueError(f"crowd part {part!r}: write SHARE:KIND with SHARE in (0, 1]")
            profiles.append((weight, *_profile(part, kind.strip().lower())))
        if abs(sum(weight for weight, _, _ in profiles) - 1) > 1e-6:
            raise ValueError(f"crowd shares add up to {sum(p[0] for p in profiles):g}, not 1")
        return cls.of(profiles, size)

    def answer(self, annotators: np.ndarray, truth: np.ndarray, rng) -> np.ndarray:
        """Each annotator's answer (1 relevant) on a pair whose true label is ``truth``."""
        right = np.where(truth, self.sensitivity[annotators], self.specificity[annotators])
        return np.where(rng.random(len(annotators)) < right, truth, ~truth).astype(np.int64)


CROWD_SPEC_HELP = (
    "comma-separated SHARE:KIND parts whose shares add up to 1; KIND is an error rate (0.08: "
    "wrong on 8%% of pairs either way), SENSITIVITY/SPECIFICITY (0.9/0.97), or a spammer kind: "
    "random (answers at random), no (always not relevant), yes (always relevant)"
)
QUALITY_BENCH_CROWD = "0.6:0.02,0.2:0.08,0.1:random,0.1:no"
"""The quality bench's crowd: 60% careful, 20% sloppy, 10% random clickers, 10% always no."""
_SPAMMERS = {"random": (0.5, 0.5), "no": (0.0, 1.0), "yes": (1.0, 0.0)}


def _profile(part: str, kind: str) -> tuple[float, float]:
    """(sensitivity, specificity) of one crowd part's KIND."""
    if kind in _SPAMMERS:
        return _SPAMMERS[kind]
    try:
        rates = [float(x) for x in kind.split("/")]
    except ValueError:
        rates = []
    if len(rates) in (1, 2) and all(0 <= rate <= 1 for rate in rates):
        return (1 - rates[0], 1 - rates[0]) if len(rates) == 1 else (rates[0], rates[1])
    raise ValueError(
        f"crowd part {part!r}: KIND must be an error rate, SENSITIVITY/SPECIFICITY or one of "
        f"{', '.join(_SPAMMERS)}"
    )


@dataclass(frozen=True)
class QualityControl:
    training_pairs: int = 20
    threshold: float = 0.9
    tries: int = 3
    gold_rate: float = 0.05
    gold_relevant_share: float = 0.3


def qualify(crowd: SimulatedCrowd, qc: QualityControl, rng, evidence: Record) -> np.ndarray:
    """Who passes qualification (all, with no training pairs), recording every answer."""
    n = len(crowd.sensitivity)
    if qc.training_pairs <= 0:
        return np.ones(n, bool)
    admitted = np.zeros(n, bool)
    truth = np.arange(qc.training_pairs) < (qc.training_pairs + 1) // 2  # balanced
    for _ in range(qc.tries):
        trying = np.flatnonzero(~admitted)
        if not trying.size:
            break
        who = np.repeat(trying, qc.training_pairs)
        said = crowd.answer(who, np.tile(truth, trying.size), rng)
        evidence.add(who, said, np.tile(truth, trying.size))
        right = (said == np.tile(truth, trying.size)).reshape(trying.size, -1).mean(axis=1)
        admitted[trying[right >= qc.threshold]] = True
    return admitted


class SimulatedSource:
    """The simulated crowd as a label source, drawing from ``seed``: admitted annotators, gold
    tasks mixed in."""

    def __init__(
        self, world: World, crowd: SimulatedCrowd, qc: QualityControl | None, seed: int
    ) -> None:
        self.world, self.crowd, self.qc = world, crowd, qc or QualityControl()
        self.rng = rng = np.random.default_rng(seed)
        self.evidence = Record()  # gold answers: annotators, labels, truth
        self.admitted = qualify(crowd, self.qc, rng, self.evidence)
        self.workers = np.flatnonzero(self.admitted)
        self.labelled_by = np.zeros((len(world.pool), len(crowd.sensitivity)), bool)
        self.strata = confusion.pool_strata(world.pool.ranks)
        self.spent = {"qualification": self.evidence.arrays()[0].size, "gold": 0}

    def left(self, tally: Tally) -> np.ndarray:
        """Pairs someone admitted has not labelled yet."""
        return self.labelled_by[:, self.workers].sum(axis=1) < self.workers.size

    def give(self, tasks: np.ndarray, tally: Tally) -> None:
        who = _assign(tasks, self.workers, self.labelled_by, self.rng)
        keep = who >= 0
        tasks, who = tasks[keep], who[keep]
        tally.add(tasks, who, self.crowd.answer(who, self.world.labels[tasks], self.rng))
        self.labelled_by[tasks, who] = True
        qc, rng = self.qc, self.rng
        gold_tasks = rng.binomial(len(tasks), qc.gold_rate / (1 - qc.gold_rate))
        if gold_tasks:
            gold_truth = rng.random(gold_tasks) < qc.gold_relevant_share
            gold_who = rng.choice(self.workers, gold_tasks)
            self.evidence.add(gold_who, self.crowd.answer(gold_who, gold_truth, rng), gold_truth)
            self.spent["gold"] += int(gold_tasks)

    def fit(self, tally: Tally) -> np.ndarray:
        """The pairs' posterior, gold answers as known items in a stratum of their own."""
        n_pairs = len(self.world.pool)
        g_annotator, g_label, g_truth = self.evidence.arrays()
        pairs, annotators, labels = tally.taken.arrays()
        strata = np.r_[self.strata, np.full(g_annotator.size, self.strata.max(initial=0) + 1)]
        start = None if tally.posterior is None else np.r_[tally.posterior, g_truth]
        return confusion.fit(
            np.concatenate([pairs, n_pairs + np.arange(g_annotator.size)]),
            np.concatenate([annotators, g_annotator]), np.concatenate([labels, g_label]),
            n_pairs + g_annotator.size, len(self.crowd.sensitivity),
            known=np.r_[np.full(n_pairs, -1), g_truth], strata=strata, start=start,
        ).posterior[:n_pairs]  # fmt: skip


def simulate(
    world: World,
    crowd: SimulatedCrowd,
    *,
    policy_name: str,
    order: str = DEPTH,
    cap: int | None = None,
    seed: int = 0,
    quality: QualityControl | None = None,
) -> Outcome:
    """Judge the world's pool with the crowd under ``policy_name`` and ``order`` (see the
    module docstring)."""
    if policy_name not in policy.POLICIES or order not in ORDERS:
        raise ValueError(f"policy in {policy.POLICIES}, order in {ORDERS}")
    source = SimulatedSource(world, crowd, quality, seed)
    rules = Rules.of(policy_name, len(world.pool), seed, cap)
    tally = Tally.empty(len(world.pool), source.spent)
    ask = asker(world, rules, source.strata, order)
    return rules.outcome(judge(rules, source, tally, ask), source.admitted)


def asker(
    world: World, rules: Rules, strata: np.ndarray, order: str
) -> Callable[[Tally, np.ndarray], np.ndarray]:
    """The tasks :func:`simulate` asks for in a round under ``rules`` and ``order``: every
    wanted pair by depth stratum (``strata``), or with the ``metric-first`` order only pairs
    deciding some run's C@K, each query's most valuable first."""
    known_rank = world.known_positive_rank()
    layout = world.layout
    q_of, s_of = layout.query_of, layout.slot_of
    ranks = _grid(layout, world.pool.ranks)

    def ask(tally: Tally, left: np.ndarray) -> np.ndarray:
        resolved = _grid(layout, rules.resolved_relevant(tally))
        if not rules.adaptive:
            want = rules.needed(tally)
            if order == METRIC_FIRST:
                cells = label_value.deciding_cells(ranks, resolved, known_rank, DEFAULT_KS)
                want &= (tally.total > 0) | (cells[q_of, s_of] > 0)
            value = np.where(want, -strata.astype(np.float64), -np.inf)
        else:
            wanted, worth = label_value.wanted(
                ranks, resolved, known_rank, _grid(layout, tally.total),
                _grid(layout, rules.posterior(tally)), confidence=rules.confidence,
                cap=rules.cap, ks=DEFAULT_KS, metric_aware=order == METRIC_FIRST,
            )  # fmt: skip
            want, value = wanted[q_of, s_of], worth[q_of, s_of]
        want &= left
        if order != METRIC_FIRST or not want.any():
            return np.flatnonzero(want)
        grid = np.full(layout.pair_of.shape, -np.inf)  # each query's most valuable wanted task
        grid[q_of[want], s_of[want]] = value[want]
        best = np.argmax(grid, axis=1)
        rows = np.flatnonzero(np.isfinite(grid[np.arange(grid.shape[0]), best]))
        return layout.pair_of[rows, best[rows]]

    return ask


def _grid(layout: Layout, values: np.ndarray) -> np.ndarray:
    """Per-pair values (pairs, or pairs x runs) laid out queries x slots (x runs)."""
    values = np.asarray(values)
    grid = np.zeros(layout.pair_of.shape + values.shape[1:], dtype=values.dtype)
    grid[layout.query_of, layout.slot_of] = values
    return grid


def _assign(tasks: np.ndarray, workers: np.ndarray, labelled_by: np.ndarray, rng) -> np.ndarray:
    """A random worker per task who has not labelled its pair (-1 when none is left)."""
    choice = rng.integers(0, workers.size, size=(len(tasks), 8))
    candidates = workers[choice]
    free = ~labelled_by[tasks[:, None], candidates]
    who = np.where(free.any(axis=1), candidates[np.arange(len(tasks)), free.argmax(axis=1)], -1)
    for i in np.flatnonzero(who < 0):  # rare: the eight draws all judged it already
        left = workers[~labelled_by[tasks[i], workers]]
        who[i] = rng.choice(left) if left.size else -1
    return who
