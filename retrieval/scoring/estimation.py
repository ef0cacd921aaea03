"""Pure: what a run's Correct@K and AP are when judging stopped before every pair was judged. Each
score is ``exact`` (nothing unjudged can change it), ``bounds`` (unjudged pooled pairs counted
irrelevant, then relevant) or ``estimate``: queries with unjudged pairs drawn uniformly and judged
in full, the rest inferred by inverse-probability weighting (Horvitz-Thompson; Schnabel et al. 2016,
§3; inferred AP, Yilmaz & Aslam 2006, §3), unbiased for any metric, with a 95% interval from the
drawn queries' spread. Unpooled unjudged items count as irrelevant."""

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.ids import positions_of
from retrieval.scoring import metrics

EXACT, BOUNDS, ESTIMATE = "exact", "bounds", "estimate"
Z95 = 1.959963984540054


@dataclass(frozen=True)
class RunJudgements:
    """What is known about one run's top-D lists (queries x depth): known positives, unjudged pooled
    pairs, and per query R and the unjudged pooled pairs over all runs."""

    relevant: np.ndarray
    unjudged: np.ndarray
    n_relevant: np.ndarray
    n_unjudged: np.ndarray

    def __post_init__(self) -> None:
        if self.relevant.shape != self.unjudged.shape or self.relevant.ndim != 2:
            raise ValueError("relevant and unjudged must be equal-shaped queries x depth arrays")
        if (self.relevant & self.unjudged).any():
            raise ValueError("an unjudged pair cannot be a known positive")


@dataclass(frozen=True)
class Sample:
    """Queries drawn uniformly among those with unjudged pairs, and the run once they are judged."""

    drawn: np.ndarray
    judged: RunJudgements


def draw_queries(n_unjudged: np.ndarray, pairs: int, seed: int) -> np.ndarray:
    """Queries with unjudged pairs in seeded random order until ``pairs`` pairs are covered."""
    candidates = np.flatnonzero(np.asarray(n_unjudged) > 0)
    order = np.random.default_rng(seed).permutation(candidates)
    covered = np.cumsum(np.asarray(n_unjudged)[order])
    count = int(np.searchsorted(covered, pairs)) + 1
    drawn = np.zeros(len(n_unjudged), dtype=bool)
    drawn[order[:count]] = True
    return drawn


@dataclass(frozen=True)
class Score:
    """One run's mean for one metric and its kind: ``value`` exact or estimated (None for bounds),
    ``low``/``high`` the bounds or the estimate's 95% interval."""

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
) -> dict[str, Score]:
    """C@K for each K and AP of one run, each exact, bounded, or (given a sample) estimated. ``run``
    is the state before the sample; means are over ``eligible`` (default: all). Exactness and bounds
    come from what is judged now, the sample included."""
    eligible = np.ones(len(run.relevant), bool) if eligible is None else np.asarray(eligible, bool)
    low, high, exact = _extremes(run if sample is None else sample.judged, ks)
    before_low, _, before_exact = (low, high, exact) if sample is None else _extremes(run, ks)
    result = {}
    for name in low:
        lo, hi = _mean(low[name], eligible), _mean(high[name], eligible)
        open_ = ~before_exact[name] & eligible
        if exact[name][eligible].all():
            result[name] = Score(name, EXACT, lo, lo, lo)
        elif sample is None or not (sample.drawn & open_).any():
            # No sample, or none that holds a query this score can use.
            result[name] = Score(name, BOUNDS, None, min(lo, hi), max(lo, hi))
        else:
            gain = low[name] - before_low[name]  # a drawn query is judged in full now
            value, low_end, high_end = _horvitz_thompson(gain, open_, sample.drawn)
            share = open_.sum() / eligible.sum()
            base = _mean(before_low[name], eligible)
            # Clipped to where the score can be: C@K's bounds, [0, 1] for AP (whose two
            # readings bound nothing).
            floor, ceiling = (0.0, 1.0) if name == "AP" else (min(lo, hi), max(lo, hi))
            low_end, value, high_end = np.clip(
                base + share * np.array([low_end, value, high_end]), floor, ceiling
            ).tolist()
            result[name] = Score(name, ESTIMATE, value, low_end, high_end)
    return result


def _extremes(run: RunJudgements, ks: Sequence[int]) -> tuple[dict, dict, dict]:
    """Per-query scores with every unjudged pooled pair counted irrelevant, then relevant, and
    whether each is exact (:func:`_exact_queries`)."""
    low = per_query_scores(run.relevant, run.n_relevant, ks)
    high = per_query_scores(run.relevant | run.unjudged, run.n_relevant + run.n_unjudged, ks)
    return low, high, _exact_queries(run, ks, low, high)


def per_query_scores(relevant: np.ndarray, n_relevant: np.ndarray, ks: Sequence[int]) -> dict:
    """Per-query C@K and AP of known positives ``relevant`` (queries x depth) and R per query."""
    zero = np.zeros(relevant.shape[0], dtype=np.int64)
    judged = metrics.RankedJudgements(relevant, relevant, np.maximum(n_relevant, 0), zero)
    per_query = metrics.evaluate(judged, ks)
    return {name: per_query[name] for name in (*(f"C@{k}" for k in ks), "AP")}


def _exact_queries(
    run: RunJudgements, ks: Sequence[int], low: dict, high: dict
) -> dict[str, np.ndarray]:
    """Per query, whether no labelling of the unjudged pairs can change the score. C@K: a positive
    in the top K, or nothing unjudged there. AP: nothing unjudged or retrievable, or one unjudged
    listed pair whose two readings agree (two or more always move AP)."""
    exact = {}
    for k in ks:
        found = run.relevant[:, :k].any(axis=1)
        exact[f"C@{k}"] = found | ~run.unjudged[:, :k].any(axis=1)
    in_list = run.unjudged.sum(axis=1)
    nothing_retrievable = ~run.relevant.any(axis=1) & (in_list == 0)
    one_that_cannot_move = (
        (run.n_unjudged == 1)
        & (in_list == 1)
        & np.isclose(low["AP"], high["AP"], rtol=0, atol=1e-12)
    )
    exact["AP"] = (run.n_unjudged == 0) | nothing_retrievable | one_that_cannot_move
    return exact


def _mean(values: np.ndarray, eligible: np.ndarray) -> float:
    return float(values[eligible].mean()) if eligible.any() else float("nan")


def _horvitz_thompson(
    gain: np.ndarray, population: np.ndarray, drawn: np.ndarray
) -> tuple[float, float, float]:
    """The mean gain over the ``population`` queries from the drawn ones, with a 95% interval
    (Wilson's for 0/1 gains, else normal) shrunk by the finite population correction."""
    seen = gain[drawn & population]
    n, size = seen.size, int(population.sum())
    mean = float(seen.mean())
    correction = np.sqrt(max(1.0 - n / size, 0.0))
    if np.isin(seen, (0.0, 1.0)).all():
        z2 = Z95**2
        centre = (mean + z2 / (2 * n)) / (1 + z2 / n)
        half = Z95 / (1 + z2 / n) * np.sqrt(mean * (1 - mean) / n + z2 / (4 * n * n))
        low, high = max(centre - half, 0.0), min(centre + half, 1.0)
        return mean, mean - (mean - low) * correction, mean + (high - mean) * correction
    spread = seen.var(ddof=1) if n > 1 else float("inf")
    half = Z95 * correction * float(np.sqrt(spread / n))
    return mean, mean - half, mean + half


@dataclass(frozen=True)
class PoolState:
    """What a label set made before judging ended knows of the pool, stored beside its arrays:
    unjudged pairs, pairs judged only for the sample, and the drawn queries' caption ids."""

    unjudged: tuple[np.ndarray, np.ndarray]
    sampled: tuple[np.ndarray, np.ndarray]
    drawn: np.ndarray

    KEYS = (
        "unjudged_caption_ids",
        "unjudged_video_ids",
        "sampled_caption_ids",
        "sampled_video_ids",
        "drawn_caption_ids",
    )

    def arrays(self) -> dict[str, np.ndarray]:
        values = (*self.unjudged, *self.sampled, self.drawn)
        return {
            key: np.asarray(v, dtype=np.int64) for key, v in zip(self.KEYS, values, strict=True)
        }

    @classmethod
    def from_bytes(cls, data: bytes) -> "PoolState | None":
        """The pool state stored in a label set's arrays, or None (a set made another way)."""
        with np.load(io.BytesIO(bytes(data))) as arrays:
            if cls.KEYS[0] not in arrays:
                return None
            values = [arrays[key] for key in cls.KEYS]
        return cls((values[0], values[1]), (values[2], values[3]), values[4])


def pair_mask(
    items: np.ndarray, caption_ids: np.ndarray, pairs: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """Queries x depth: whether (caption of the row, item) is one of ``pairs``."""
    items = np.asarray(items, dtype=np.int64)
    if len(pairs[0]) == 0 or items.size == 0:
        return np.zeros(items.shape, bool)
    rows = np.repeat(np.asarray(caption_ids, dtype=np.int64), items.shape[1])
    wanted = np.asarray(pairs[0], np.int64) * (1 << 32) + np.asarray(pairs[1], np.int64)
    keys = rows * (1 << 32) + items.reshape(-1)
    return np.isin(keys, wanted).reshape(items.shape) & (items >= 0)


def score_runs(
    runs: Mapping[str, np.ndarray],
    caption_ids: np.ndarray,
    positive: Mapping[str, np.ndarray],
    n_relevant: np.ndarray,
    n_sampled_relevant: np.ndarray,
    state: PoolState,
    ks: Sequence[int] = metrics.DEFAULT_KS,
) -> dict[str, dict[str, Score]]:
    """Every run's C@K and AP as exact, bounds or estimate, from a label set's pool state. ``runs``:
    item ids per row of ``caption_ids``; ``positive[name]``: known positives; ``n_relevant`` /
    ``n_sampled_relevant``: positives per row, all and among sampled pairs (the state before the
    sample treats sampled pairs as unjudged)."""
    caption_ids = np.asarray(caption_ids, dtype=np.int64)
    n_unjudged_now = _per_row(caption_ids, state.unjudged[0])
    n_sampled = _per_row(caption_ids, state.sampled[0])
    drawn = np.isin(caption_ids, state.drawn) & (n_unjudged_now == 0)
    scores = {}
    for name, items in runs.items():
        unjudged_now = pair_mask(items, caption_ids, state.unjudged)
        reopened = pair_mask(items, caption_ids, state.sampled)
        relevant = np.asarray(positive[name], bool) & ~unjudged_now
        before = RunJudgements(
            relevant & ~reopened,
            unjudged_now | reopened,
            n_relevant - n_sampled_relevant,
            n_unjudged_now + n_sampled,
        )
        sample = None
        if len(state.sampled[0]):
            sample = Sample(
                drawn, RunJudgements(relevant, unjudged_now, n_relevant, n_unjudged_now)
            )
        scores[name] = score_run(before, ks, sample=sample)
    return scores


def _per_row(caption_ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """How many of ``wanted`` name each of the (distinct) ``caption_ids``."""
    at = positions_of(caption_ids, wanted)
    return np.bincount(at[at >= 0], minlength=len(caption_ids))
