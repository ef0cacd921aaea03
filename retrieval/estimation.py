"""Pure: what a run's Correct@K and AP are when judging stopped before every pair was judged.

Each score is one of three kinds. ``exact``: every pooled pair that could change it is judged.
``bounds``: the score with the unjudged pooled pairs counted irrelevant, then relevant (for
C@K these are its true bounds; for AP they are the two extreme readings, as R grows with them).
``estimate``: a uniform random sample of the remaining unjudged pooled pairs was judged, and
the rest is filled in from it, inverse-probability weighted: the relevant rate at each rank of
the run is the sample's (Hajek) weighted mean there, and AP takes each unjudged pair's expected
relevance as inferred AP does (Yilmaz & Aslam 2006, §3: the expected precision above a rank
from the sampled judgements; Schnabel et al. 2016, §3 for the weighting). The 95% interval
combines a parametric bootstrap of those rates with, for C@K, the spread of the unjudged
pairs' own outcomes.

Items of a run's list outside the pool and unjudged count as irrelevant (trec_eval's reading),
as in :mod:`retrieval.metrics`, whose Correct@K and AP definitions the exact and bound scores use.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval import metrics

EXACT, BOUNDS, ESTIMATE = "exact", "bounds", "estimate"
Z95 = 1.959963984540054
BOOTSTRAP_DRAWS = 200


@dataclass(frozen=True)
class RunJudgements:
    """What is known about one run's top-D lists (queries x depth, rank order).

    ``relevant``: a judged (or implicit) positive; ``unjudged``: a pooled pair with no label
    yet; ``sampled``: judged by the random sample (its label is in ``relevant``);
    ``n_relevant``: known positives per query, retrieved or not; ``n_unjudged``: unjudged
    pooled pairs per query over all runs (they could add to R).
    """

    relevant: np.ndarray
    unjudged: np.ndarray
    n_relevant: np.ndarray
    n_unjudged: np.ndarray
    sampled: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.relevant.shape != self.unjudged.shape or self.relevant.ndim != 2:
            raise ValueError("relevant and unjudged must be equal-shaped queries x depth arrays")
        if (self.relevant & self.unjudged).any():
            raise ValueError("an unjudged pair cannot be a known positive")


@dataclass(frozen=True)
class Sample:
    """A uniform random sample of the unjudged pooled pairs (all queries), now judged."""

    size: int
    positives: int
    inclusion: float  # the chance each unjudged pooled pair had to be drawn


@dataclass(frozen=True)
class Score:
    """One run's mean score for one metric, and what kind of number it is.

    ``value`` is the exact score or the estimate (None for bounds); ``low``/``high`` are the
    bounds, or the estimate's 95% interval.
    """

    metric: str
    kind: str
    value: float | None
    low: float
    high: float

    def as_dict(self) -> dict:
        return {"kind": self.kind, "value": self.value, "low": self.low, "high": self.high}


def score_run(
    run: RunJudgements,
    ks: Sequence[int] = metrics.DEFAULT_KS,
    *,
    sample: Sample | None = None,
    eligible: np.ndarray | None = None,
    seed: int = 0,
) -> dict[str, Score]:
    """C@K for each K and AP of one run, each exact, bounded, or (given a sample) estimated.

    Means are over the ``eligible`` queries (all by default).
    """
    rows = run.relevant.shape[0]
    eligible = np.ones(rows, bool) if eligible is None else np.asarray(eligible, bool)
    low = per_query_scores(run.relevant, run.n_relevant, ks)
    high = per_query_scores(run.relevant | run.unjudged, run.n_relevant + run.n_unjudged, ks)
    exact = _exact_queries(run, ks)
    rates = None if sample is None else _rank_rates(run, sample)
    result = {}
    for name in low:
        lo, hi = _mean(low[name], eligible), _mean(high[name], eligible)
        if exact[name][eligible].all():
            result[name] = Score(name, EXACT, lo, lo, lo)
        elif rates is None:
            result[name] = Score(name, BOUNDS, None, min(lo, hi), max(lo, hi))
        else:
            value, half = _estimate(run, name, rates, sample, eligible, seed)
            result[name] = Score(name, ESTIMATE, value, value - half, value + half)
    return result


def per_query_scores(relevant: np.ndarray, n_relevant: np.ndarray, ks: Sequence[int]) -> dict:
    """Per-query C@K and AP of known positives ``relevant`` (queries x depth) and R per query,
    by :func:`retrieval.metrics.evaluate`."""
    zero = np.zeros(relevant.shape[0], dtype=np.int64)
    judged = metrics.RankedJudgements(relevant, relevant, np.maximum(n_relevant, 0), zero)
    per_query = metrics.evaluate(judged, ks)
    return {name: per_query[name] for name in (*(f"C@{k}" for k in ks), "AP")}


def _exact_queries(run: RunJudgements, ks: Sequence[int]) -> dict[str, np.ndarray]:
    """Per query, whether no labelling of the unjudged pairs can change the score."""
    exact = {}
    for k in ks:
        found = run.relevant[:, :k].any(axis=1)
        exact[f"C@{k}"] = found | ~run.unjudged[:, :k].any(axis=1)
    nothing_retrievable = ~run.relevant.any(axis=1) & ~run.unjudged.any(axis=1)
    exact["AP"] = (run.n_unjudged == 0) | nothing_retrievable
    return exact


def _mean(values: np.ndarray, eligible: np.ndarray) -> float:
    return float(values[eligible].mean()) if eligible.any() else float("nan")


@dataclass(frozen=True)
class _Rates:
    """Relevant rate of the unjudged pairs at each rank of the run (from the sample), and
    over all unjudged pooled pairs; plus how many sampled pairs each rests on."""

    by_rank: np.ndarray
    counts: np.ndarray
    overall: float


def _rank_rates(run: RunJudgements, sample: Sample) -> _Rates:
    """Hajek (weighted-mean) relevant rates; with a uniform sample every weight is 1/inclusion,
    so they are the sample's means. A rank the sample missed takes the overall rate."""
    overall = sample.positives / sample.size if sample.size else 0.0
    sampled = np.zeros_like(run.relevant) if run.sampled is None else run.sampled
    weight = 1.0 / max(sample.inclusion, 1e-12)
    counts = sampled.sum(axis=0) * weight
    hits = (sampled & run.relevant).sum(axis=0) * weight
    by_rank = np.where(counts > 0, hits / np.maximum(counts, 1e-12), overall)
    return _Rates(by_rank, (counts / weight).astype(np.int64), overall)


def _estimate(
    run: RunJudgements,
    name: str,
    rates: _Rates,
    sample: Sample,
    eligible: np.ndarray,
    seed: int,
) -> tuple[float, float]:
    """The estimate and its 95% half-width (normal interval)."""
    rng = np.random.default_rng(seed)
    n = np.maximum(rates.counts, 1)
    draws = rng.binomial(n, rates.by_rank, size=(BOOTSTRAP_DRAWS, rates.by_rank.size)) / n
    draws = np.where(rates.counts > 0, draws, rates.by_rank)
    overall = rng.binomial(max(sample.size, 1), rates.overall, BOOTSTRAP_DRAWS) / max(
        sample.size, 1
    )
    point, spread = _expected(run, name, rates.by_rank[None, :], np.array([rates.overall]))
    boot, _ = _expected(run, name, draws, overall)
    value = _mean(point[0], eligible)
    boot_means = boot[:, eligible].mean(axis=1)
    variance = boot_means.var() + spread[0][eligible].sum() / max(eligible.sum(), 1) ** 2
    return value, Z95 * float(np.sqrt(variance))


def _expected(
    run: RunJudgements, name: str, rates: np.ndarray, overall: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Expected per-query score for each row of ``rates`` (draws x depth), with the unjudged
    pairs relevant independently at their rank's rate; and each query's outcome variance."""
    open_ = run.unjudged.astype(np.float64)
    if name.startswith("C@"):
        k = int(name[2:])
        found = run.relevant[:, :k].any(axis=1)
        log_miss = np.log1p(-np.minimum(rates[:, :k], 1 - 1e-12))
        none = np.exp(open_[:, :k] @ log_miss.T).T  # draws x queries
        correct = np.where(found, 1.0, 1.0 - none)
        return correct, correct * (1.0 - correct)
    values = np.empty((rates.shape[0], run.relevant.shape[0]))
    inverse = 1.0 / np.arange(1, run.relevant.shape[1] + 1)
    for d, (rate, all_rate) in enumerate(zip(rates, overall, strict=True)):
        y = run.relevant + open_ * rate
        above = np.cumsum(y, axis=1) - y
        numerator = (y * (1.0 + above)) @ inverse
        expected_r = run.n_relevant + run.n_unjudged * all_rate
        values[d] = np.divide(
            numerator, expected_r, out=np.zeros_like(numerator), where=expected_r > 0
        )
    return values, np.zeros_like(values)
