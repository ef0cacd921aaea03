"""Pure: which of a campaign's scores judging has settled to its target half-width. Each score's
spread is the one its page already has: an exact score has half-width 0, bounds their half
range, an estimate its 95% interval's half-width; a score with none is "no interval yet", never
settled. Widths are in points (percentage points of the score). AP and nDCG take their bounds
from the queries judging has decided in full, as C@K from those whose C@K is exact.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

EXACT, BOUNDS, ESTIMATE = "exact", "bounds", "estimate"
_TOLERANCE = 1e-9  # a half-width this close above the target is the target (float sums)


def points(value: float) -> str:
    """A half-width as the page writes it: one decimal (1.0), more only when it has them."""
    return f"{value:.1f}" if round(value, 1) == value else f"{value:g}"


@dataclass(frozen=True)
class Spread:
    """How far a score may be from its value: ``kind`` (exact, bounds or estimate), the
    half-width in points and, for an active estimate, the part holding most of its variance."""

    kind: str
    half_width: float
    dominant: str = ""

    @classmethod
    def of_interval(cls, kind: str, low: float, high: float, dominant: str = "") -> Spread:
        """The spread of ``[low, high]`` on a score in [0, 1]: half its range, in points."""
        return cls(kind, max(high - low, 0.0) * 50.0, dominant)


@dataclass(frozen=True)
class ScoreWidth:
    """One run's score of one metric against the target: its spread (None: no interval yet)."""

    metric: str
    spread: Spread | None
    settled: bool

    @property
    def now(self) -> str:
        """The spread's half-width to one decimal (two under 0.1), rounded up: one precision
        down the table, and a score not settled never reads as its target or under it."""
        if self.spread is None:
            return ""
        half = self.spread.half_width
        if not math.isfinite(half):
            return f"{half:.1f}"
        places = 1 if half >= 0.1 else 2
        return f"{math.ceil(half * 10**places - _TOLERANCE) / 10**places:.{places}f}"


@dataclass(frozen=True)
class RunWidths:
    run: str
    scores: tuple[ScoreWidth, ...]


@dataclass(frozen=True)
class SettledToWidth:
    """Per run, each metric to settle against the target half-width, and how many are settled."""

    metrics: tuple[str, ...]
    target: float
    runs: tuple[RunWidths, ...]

    @property
    def target_text(self) -> str:
        return points(self.target)

    @property
    def settled(self) -> int:
        return sum(score.settled for run in self.runs for score in run.scores)

    @property
    def total(self) -> int:
        return sum(len(run.scores) for run in self.runs)


def correct_at_spreads(shares: Sequence[tuple[int, float]]) -> dict[str, Spread]:
    """C@K's spread from the share of queries whose Correct@K judging can no longer change
    (FIRE §2.1: a query's C@K is 0 or 1): :func:`whole_query_spread` of that share."""
    return {f"C@{k}": whole_query_spread(share) for k, share in shares}


def settled_to_width(
    spreads: Mapping[str, Mapping[str, Spread]],
    metrics: Sequence[str],
    target: float,
) -> SettledToWidth:
    """Run name -> metric -> spread, judged for each of ``metrics`` against ``target`` points
    (runs in the mapping's order; a metric a run has no spread for is not settled)."""
    runs = []
    for run, known in spreads.items():
        scores = []
        for metric in metrics:
            spread = known.get(metric)
            settled = spread is not None and spread.half_width <= target + _TOLERANCE
            scores.append(ScoreWidth(metric, spread, settled))
        runs.append(RunWidths(run, tuple(scores)))
    return SettledToWidth(tuple(metrics), float(target), tuple(runs))


def whole_query_spread(decided_share: float) -> Spread:
    """A mean's spread over queries a share of which is decided (exact), each other one's
    score anywhere in [0, 1] (a C@K, or AP and nDCG, which hang on every positive of the
    query, listed or not): bounds ``1 - share`` wide; every query decided: exact. Every query
    keeps its own video as a positive (FIRE §2.1), so every query counts in the mean whatever
    the labels."""
    if decided_share >= 1.0:
        return Spread(EXACT, 0.0)
    return Spread(BOUNDS, (1.0 - decided_share) * 50.0)


def from_exactness(
    runs: Sequence,
    metrics: Sequence[str],
    target: float,
    estimated: Mapping[str, Mapping[str, Spread]] | None = None,
    decided_share: float = 0.0,
) -> SettledToWidth:
    """:func:`settled_to_width` from the judging status's runs (each with ``run`` and ``shares``,
    K -> share of queries with an exact C@K, as :class:`~annotation.ordering.settled.RunExactness`):
    C@K spreads from their exactness, every other score's from ``decided_share`` (the share of
    queries decided in full: :func:`whole_query_spread`); ``estimated`` (run -> metric ->
    spread: the active stages' intervals) gives the narrower where a score has both (the
    bounds always hold the score, so the narrower of the two still covers it as often as the
    interval does)."""
    whole = whole_query_spread(decided_share)
    spreads: dict[str, dict[str, Spread]] = {}
    for run in runs:
        known = correct_at_spreads(run.shares)
        known.update((metric, whole) for metric in metrics if not metric.startswith("C@"))
        for metric, spread in (estimated or {}).get(run.run, {}).items():
            if metric not in known or spread.half_width < known[metric].half_width:
                known[metric] = spread
        spreads[run.run] = known
    return settled_to_width(spreads, metrics, target)
