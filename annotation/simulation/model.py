"""Pure: one model of a pool, a truth and a crowd, and the one loop that has a crowd judge it.

A :class:`World` is a pool whose every pair has a true label, plus the positives outside
the pool, pooled as FIRE (Rodriguez et al. 2022, §2.2.1) does. A crowd gives labels
(recorded, e.g. Snow et al. 2008's RTE judgements, or simulated), and :func:`judge` is the
one loop of the offline simulations: in rounds, the :class:`Rules` say which pairs want a
label, the crowd gives them, and the adaptive policy's model is refitted.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from annotation.campaigns.pooling import Pool
from annotation.ordering.orders import DEFAULT_KS, Layout
from annotation.policy import rules as policy
from retrieval.label_sets.status import LabelStatus, majority
from retrieval.scoring.estimation import RunJudgements, per_query_scores

METRICS = (*(f"C@{k}" for k in DEFAULT_KS), "AP")


@dataclass(frozen=True)
class World:
    """A fully labelled pool (``labels``: bool per pair) of runs cut at ``depth``, with the
    positives outside the pool per query x run x rank (``known_positive``) and per query."""

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
        """Each run's :class:`~retrieval.scoring.estimation.RunJudgements` once ``judged`` are."""
        judged = np.asarray(judged, bool)
        hit = judged & self.labels
        n_relevant = self.known_count + self.per_query(hit)
        n_unjudged = self.per_query(~judged)
        pooled = self.pair_at >= 0
        at = np.maximum(self.pair_at, 0)
        return [
            RunJudgements(
                relevant=self.known_positive[:, r] | (pooled[:, r] & hit[at[:, r]]),
                unjudged=pooled[:, r] & ~judged[at[:, r]],
                n_relevant=n_relevant,
                n_unjudged=n_unjudged,
            )
            for r in range(self.pool.run_count)
        ]

    def scores(self, judged: np.ndarray | None = None) -> dict[str, dict[str, float]]:
        """Each run's mean C@K and AP, unjudged pairs irrelevant, over the queries with a
        positive under the complete labels."""
        judged = np.ones(len(self.pool), bool) if judged is None else judged
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
        """Per query: whether it has a positive under the complete labels."""
        return self.known_count + self.per_query(self.labels) > 0

    def per_query(self, pairs: np.ndarray) -> np.ndarray:
        """How many of ``pairs`` (bool per pool pair) each query has."""
        return np.bincount(self.layout.query_of[pairs], minlength=self.layout.pair_of.shape[0])


class Record(list):
    """Labels (or gold answers) in the order given: one (pairs, annotators, labels) per add."""

    def add(self, *columns) -> None:
        self.append(tuple(np.asarray(column, np.int64) for column in columns))

    def arrays(self) -> list[np.ndarray]:
        """Each column, concatenated over what was added."""
        empty = [np.zeros(0, np.int64)]
        return [np.concatenate([part[i] for part in self] or empty) for i in range(3)]


@dataclass
class Tally:
    """What a crowd has given so far: labels and relevant labels per pair, the latest
    posterior (None before a fit), the labels taken in order, rounds and answers spent."""

    total: np.ndarray
    relevant: np.ndarray
    posterior: np.ndarray | None = None
    taken: Record = field(default_factory=Record)
    rounds: int = 0
    spent: dict[str, int] = field(default_factory=dict)

    @classmethod
    def empty(cls, n_pairs: int, spent: dict[str, int] | None = None) -> "Tally":
        """No labels yet; ``spent`` (kept, not copied) counts the answers spent before."""
        zeros = np.zeros(n_pairs, np.int64)
        return cls(zeros, zeros.copy(), spent={} if spent is None else spent)

    def add(self, pairs: np.ndarray, annotators: np.ndarray, labels: np.ndarray) -> None:
        self.taken.add(pairs, annotators, labels)
        np.add.at(self.total, pairs, 1)
        np.add.at(self.relevant, pairs, labels)


@dataclass(frozen=True)
class Outcome:
    """A judged crowd: labels taken, each pair's probability of relevance and status, the
    rounds, the annotators admitted (None without qualification) and the answers spent."""

    pair: np.ndarray
    annotator: np.ndarray
    label: np.ndarray
    posterior: np.ndarray
    status: np.ndarray
    rounds: int = 0
    admitted: np.ndarray | None = None
    spent: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Rules:
    """The labelling policy, ``fire`` (FIRE §3.1) or ``adaptive`` (labels while the posterior's
    certainty is below ``confidence``), at most ``cap`` labels a pair."""

    name: str
    cap: int
    confidence: float
    double: np.ndarray

    @classmethod
    def of(
        cls,
        name: str,
        n_pairs: int,
        seed: int,
        cap: int | None = None,
        confidence: float = policy.DEFAULT_CONFIDENCE,
        second_label_rate: float = policy.DEFAULT_SECOND_LABEL_RATE,
    ) -> "Rules":
        """``name``'s rules (default cap when None), FIRE's double sample seeded by ``seed``."""
        if name not in policy.POLICIES:
            raise ValueError(f"policy must be one of {', '.join(policy.POLICIES)}")
        default = policy.DEFAULT_CAP if name == policy.FIRE else policy.DEFAULT_ADAPTIVE_CAP
        double = policy.second_label_sample(n_pairs, second_label_rate, seed)
        return cls(name, default if cap is None else int(cap), confidence, double)

    @property
    def adaptive(self) -> bool:
        return self.name == policy.ADAPTIVE

    def needed(self, tally: Tally) -> np.ndarray:
        """Whether each pair wants another label now: every pair's first one before a fit."""
        if not self.adaptive:
            return policy.labels_needed(tally.relevant, tally.total, self.double, self.cap) > 0
        if tally.posterior is None:
            return np.ones(tally.total.size, bool)
        return policy.adaptive_needed(tally.total, tally.posterior, self.confidence, self.cap) > 0

    def resolved_relevant(self, tally: Tally) -> np.ndarray:
        """Pairs resolved relevant so far (a pair with no label is no positive)."""
        if not self.adaptive:
            return majority(tally.relevant, tally.total) == LabelStatus.RELEVANT
        return (tally.total > 0) & (self.posterior(tally) > 0.5)

    def posterior(self, tally: Tally) -> np.ndarray:
        return np.full(tally.total.size, 0.5) if tally.posterior is None else tally.posterior

    def outcome(self, tally: Tally, admitted: np.ndarray | None = None) -> Outcome:
        """The tally resolved: by majority under FIRE's policy, by the posterior under the adaptive one."""
        if self.adaptive:
            posterior = tally.posterior
            status = policy.adaptive_resolve(tally.total, posterior)
        else:
            total = tally.total
            status = majority(tally.relevant, total)
            status = np.where(total > 0, status, LabelStatus.PENDING).astype(np.int8)
            posterior = np.where(total > 0, tally.relevant / np.maximum(total, 1), np.nan)
        pairs, annotators, labels = tally.taken.arrays()
        spent = {**tally.spent, "campaign": int(pairs.size)}
        return Outcome(pairs, annotators, labels, posterior, status, tally.rounds, admitted, spent)


class Crowd(Protocol):
    """Where labels come from: pairs still labellable, labels for tasks, a refitted posterior."""

    def left(self, tally: Tally) -> np.ndarray: ...

    def give(self, tasks: np.ndarray, tally: Tally) -> None: ...

    def fit(self, tally: Tally) -> np.ndarray: ...


def judge(
    rules: Rules,
    crowd: Crowd,
    tally: Tally,
    ask: Callable[[Tally, np.ndarray], np.ndarray],
) -> Tally:
    """Judge in rounds while ``ask(tally, left)`` names tasks among the pairs the crowd can
    still label; under the adaptive rules the posterior is refitted after every round."""
    while (tasks := ask(tally, crowd.left(tally))).size:
        crowd.give(tasks, tally)
        tally.rounds += 1
        if rules.adaptive:
            tally.posterior = crowd.fit(tally)
    if rules.adaptive and tally.posterior is None:
        tally.posterior = crowd.fit(tally)
    return tally


def largest_remainder(shares, size: int) -> np.ndarray:
    """How many of ``size`` go to each share, by largest remainder."""
    exact = np.asarray(shares, dtype=np.float64) * size
    counts = np.floor(exact).astype(np.int64)
    counts[np.argsort(-(exact - counts), kind="stable")[: size - counts.sum()]] += 1
    return counts
