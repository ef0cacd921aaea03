"""Pure: a whole campaign judged offline by simulated annotators, under either policy.

For benchmarks and tests that need many seeded campaigns (interval coverage over 50
replays, FIRE's protocol against the adaptive one) without the database: the pool, every
pair's true label, and a crowd whose annotators are true confusions (a careful annotator
with 2% error is sensitivity = specificity = 0.98; a random spammer 0.5/0.5; one who
always says "not relevant" 0/1). What the live campaign does is followed step for step:

- quality control: qualification (``training_pairs`` balanced gold answers per try, admitted
  at ``threshold``, up to ``tries``) and a ``gold_rate`` share of gold tasks among those
  served; every gold answer informs the annotator model as a known item and is counted as
  spent (as FIRE's bench counts it);
- ``fire`` (FIRE §3.1): one label per pair, a second for a seeded 10% sample, a third while
  two tie; resolved by majority;
- ``adaptive``: one label, more while the posterior of the resolved label is below
  ``confidence``, up to ``cap``, the annotator model refitted after every round
  (:func:`annotation.policy.confusion.fit`, strata by best pooled rank); with the ``metric-first``
  order only pairs that decide some run's C@K are asked for, and each query's most valuable
  task is served first (:mod:`annotation.policy.label_value`).

Work proceeds in rounds: under a metric-aware order each query's best wanted task, else
every wanted task; each task goes to a random admitted annotator who has not labelled the
pair (none left: the pair gets no more).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from annotation.campaigns.pooling import Pool
from annotation.ordering.orders import DEFAULT_KS, Layout
from annotation.policy import confusion, label_value
from annotation.policy import rules as policy
from retrieval.label_sets.status import LabelStatus, majority

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
        remainder so the shares hold as closely as the size allows."""
        quotas = np.array([share for share, _, _ in shares]) * size
        counts = np.floor(quotas).astype(np.int64)
        counts[np.argsort(-(quotas - counts))[: size - counts.sum()]] += 1
        sens = np.repeat([s for _, s, _ in shares], counts)
        spec = np.repeat([p for _, _, p in shares], counts)
        return cls(sens.astype(np.float64), spec.astype(np.float64))

    def answer(self, annotators: np.ndarray, truth: np.ndarray, rng) -> np.ndarray:
        """Each annotator's answer (1 relevant) on a pair whose true label is ``truth``."""
        right = np.where(truth, self.sensitivity[annotators], self.specificity[annotators])
        return np.where(rng.random(len(annotators)) < right, truth, ~truth).astype(np.int64)


@dataclass(frozen=True)
class QualityControl:
    training_pairs: int = 20
    threshold: float = 0.9
    tries: int = 3
    gold_rate: float = 0.05
    gold_relevant_share: float = 0.3


@dataclass
class CampaignOutcome:
    """Labels taken (pair, annotator, label), each pair's posterior and status, who was
    admitted, and the answers spent: campaign labels, gold and qualification."""

    pair: np.ndarray
    annotator: np.ndarray
    label: np.ndarray
    posterior: np.ndarray
    status: np.ndarray
    admitted: np.ndarray
    spent: dict[str, int] = field(default_factory=dict)
    rounds: int = 0

    @property
    def total_spent(self) -> int:
        return sum(self.spent.values())


def strata_of(pool: Pool) -> np.ndarray:
    """Each pair's stratum for the class prior: :func:`annotation.policy.confusion.pool_strata`."""
    return confusion.pool_strata(pool.ranks)


class _Evidence:
    """Gold answers (known items) gathered for the annotator model."""

    def __init__(self) -> None:
        self.annotator: list[np.ndarray] = []
        self.label: list[np.ndarray] = []
        self.truth: list[np.ndarray] = []

    def add(self, annotators, labels, truth) -> None:
        self.annotator.append(np.asarray(annotators, np.int64))
        self.label.append(np.asarray(labels, np.int64))
        self.truth.append(np.asarray(truth, np.int64))

    def arrays(self):
        if not self.annotator:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        return tuple(np.concatenate(parts) for parts in (self.annotator, self.label, self.truth))


def _qualify(crowd: SimulatedCrowd, qc: QualityControl, rng, evidence: _Evidence) -> np.ndarray:
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


def simulate(
    pool: Pool,
    truth: np.ndarray,
    known_rank: np.ndarray,
    crowd: SimulatedCrowd,
    *,
    policy_name: str,
    order: str = DEPTH,
    confidence: float = policy.DEFAULT_CONFIDENCE,
    cap: int | None = None,
    seed: int = 0,
    ks: Sequence[int] = DEFAULT_KS,
    quality: QualityControl | None = None,
) -> CampaignOutcome:
    """Judge the pool with the crowd under ``policy_name`` and ``order`` (see the module
    docstring). ``truth`` is bool per pool pair; ``known_rank`` queries x runs."""
    if policy_name not in policy.POLICIES or order not in ORDERS:
        raise ValueError(f"policy in {policy.POLICIES}, order in {ORDERS}")
    qc = quality or QualityControl()
    rng = np.random.default_rng(seed)
    truth = np.asarray(truth, dtype=bool)
    n_pairs, n_annotators = len(pool), len(crowd.sensitivity)
    layout = Layout.of(pool)
    q_of, s_of = layout.query_of, layout.slot_of
    evidence = _Evidence()
    admitted = _qualify(crowd, qc, rng, evidence)
    spent = {"qualification": sum(len(a) for a in evidence.annotator), "gold": 0}
    workers = np.flatnonzero(admitted)
    fire = policy_name == policy.FIRE
    cap = (policy.DEFAULT_CAP if fire else policy.DEFAULT_ADAPTIVE_CAP) if cap is None else cap
    double = policy.second_label_sample(n_pairs, policy.DEFAULT_SECOND_LABEL_RATE, seed)
    strata = strata_of(pool)
    pairs, annotators, labels = [], [], []
    total = np.zeros(n_pairs, np.int64)
    relevant = np.zeros(n_pairs, np.int64)
    labelled_by = np.zeros((n_pairs, n_annotators), bool)
    posterior = np.full(n_pairs, 0.5)
    model: confusion.Fit | None = None
    rounds = 0

    def refit() -> None:
        nonlocal posterior, model
        g_annotator, g_label, g_truth = evidence.arrays()
        items = np.concatenate([np.concatenate(pairs or [np.zeros(0, np.int64)]),
                                n_pairs + np.arange(g_annotator.size)])  # fmt: skip
        who = np.concatenate([np.concatenate(annotators or [np.zeros(0, np.int64)]), g_annotator])
        said = np.concatenate([np.concatenate(labels or [np.zeros(0, np.int64)]), g_label])
        known = np.r_[np.full(n_pairs, -1), g_truth]
        all_strata = np.r_[strata, np.full(g_annotator.size, strata.max(initial=0) + 1)]
        start = None if model is None else np.r_[posterior, g_truth]
        model = confusion.fit(
            items, who, said, n_pairs + g_annotator.size, n_annotators,
            known=known, strata=all_strata, start=start,
        )  # fmt: skip
        posterior = model.posterior[:n_pairs]

    while workers.size:
        if fire:
            resolved = majority(relevant, total) == LabelStatus.RELEVANT
        else:  # a pair with no label is no positive, whatever its prior
            resolved = (total > 0) & (posterior > 0.5)
        if fire:
            want = policy.labels_needed(relevant, total, double, cap) > 0
            if order == METRIC_FIRST:
                cells = label_value.deciding_cells(
                    _grid(layout, pool.ranks), _grid(layout, resolved), known_rank, ks
                )[q_of, s_of]
                want &= (total > 0) | (cells > 0)
            value = np.where(want, -strata.astype(np.float64), -np.inf)
        else:
            wanted, worth = label_value.wanted(
                _grid(layout, pool.ranks),
                _grid(layout, resolved),
                known_rank,
                _grid(layout, total),
                _grid(layout, posterior),
                confidence=confidence,
                cap=cap,
                ks=ks,
                metric_aware=order == METRIC_FIRST,
            )
            want, value = wanted[q_of, s_of], worth[q_of, s_of]
        want &= labelled_by[:, workers].sum(axis=1) < workers.size  # someone left to ask
        if not want.any():
            break
        if order == METRIC_FIRST:  # each query's most valuable wanted task
            grid = np.full(layout.pair_of.shape, -np.inf)
            grid[q_of[want], s_of[want]] = value[want]
            best = np.argmax(grid, axis=1)
            rows = np.flatnonzero(np.isfinite(grid[np.arange(grid.shape[0]), best]))
            tasks = layout.pair_of[rows, best[rows]]
        else:
            tasks = np.flatnonzero(want)
        who = _assign(tasks, workers, labelled_by, rng)
        keep = who >= 0
        tasks, who = tasks[keep], who[keep]
        said = crowd.answer(who, truth[tasks], rng)
        pairs.append(tasks)
        annotators.append(who)
        labels.append(said)
        labelled_by[tasks, who] = True
        np.add.at(total, tasks, 1)
        np.add.at(relevant, tasks, said)
        gold_tasks = rng.binomial(len(tasks), qc.gold_rate / (1 - qc.gold_rate))
        if gold_tasks:
            gold_truth = rng.random(gold_tasks) < qc.gold_relevant_share
            gold_who = rng.choice(workers, gold_tasks)
            evidence.add(gold_who, crowd.answer(gold_who, gold_truth, rng), gold_truth)
            spent["gold"] += int(gold_tasks)
        rounds += 1
        if not fire:
            refit()
    if not fire and model is None:
        refit()
    flat = [
        np.concatenate(parts or [np.zeros(0, np.int64)]) for parts in (pairs, annotators, labels)
    ]
    spent["campaign"] = int(flat[0].size)
    if fire:
        status = majority(relevant, total)
        status = np.where(total > 0, status, LabelStatus.PENDING).astype(np.int8)
        with np.errstate(invalid="ignore", divide="ignore"):
            posterior = np.where(total > 0, relevant / np.maximum(total, 1), np.nan)
    else:
        status = policy.adaptive_resolve(total, posterior)
    return CampaignOutcome(*flat, posterior, status, admitted, spent, rounds)


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
