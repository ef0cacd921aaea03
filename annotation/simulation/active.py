"""Pure: a campaign judged offline under the active policy, every score estimated with an
honest 95% interval from a few queries judged in full and a relevance predictor for the rest.

First the adaptive policy's value-driven labels (metric-first: only pairs deciding some run's
C@K while their posterior is unsure), which settle C@K on most queries for few labels. Then, in
stages, queries are the units: each query not yet judged is drawn independently (Poisson) with
a known probability, higher where its metrics are uncertain and lower where finishing it costs
more labels (:func:`retrieval.scoring.active_inference.inclusion_probabilities`), at the
smallest spend whose predicted interval meets the target (:func:`plan`), and judged in full
under the adaptive rules. After a stage every score is the active-inference mean (Zrnic &
Candès, ICML 2024) of the judged queries' values and every query's predicted value (its exact
expected metric under the posteriors and the cross-fitted predictor's probabilities), with the
judged values' label noise (Monte Carlo over the posteriors) in its variance.

Unbiased across stages: a stage's predictions and probabilities are fixed before its draw and
queries judged earlier enter it with probability 1, so conditional on the past it is a Poisson
design with known probabilities (Horvitz-Thompson), whatever the predictor. Judging stops when
every settled score is within the half-width, every query is judged, or the stages or the label
budget run out. With ``value_first=False`` the first stage is a uniform pilot instead, which
gives the predictor its labels.
"""

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.special import ndtri

from annotation.campaigns.settings import DEFAULT_HALF_WIDTH, DEFAULT_SETTLE
from annotation.policy import rules as policy
from annotation.simulation.estimates import METRICS, noise_variance, query_metrics
from annotation.simulation.model import Outcome, Rules, Tally, World, judge
from annotation.simulation.offline import (
    METRIC_FIRST,
    QualityControl,
    SimulatedCrowd,
    SimulatedSource,
    asker,
)
from retrieval.prediction.features import PairFeatures, shuffled
from retrieval.prediction.model import cross_fit
from retrieval.scoring.active_inference import (
    ActiveEstimates,
    active_means,
    inclusion_probabilities,
    poisson_draw,
)

PLAN_SHARE = 0.8
"""A stage plans for this share of the target half-width: label noise and a predictor less sure
than it says widen the interval the plan predicts."""
FIRST_LABELS_PER_PAIR = 1.5
"""Labels a pair is expected to take under the adaptive rules before any query is judged."""


@dataclass(frozen=True)
class ActiveSettings:
    """The active policy's settings: the scores to settle and their target ``half_width`` in
    points; the ``pilot`` share of queries drawn uniformly first; the ``random_share`` of every
    later design; at most ``stages`` stages and ``max_labels`` campaign labels (None: no cap);
    the adaptive rules' ``confidence``; ``shuffle``: predict from shuffled features (the
    useless-predictor control)."""

    settle: tuple[str, ...] = DEFAULT_SETTLE
    half_width: float = DEFAULT_HALF_WIDTH
    pilot: float = 0.1
    random_share: float = 0.1
    stages: int = 6
    max_labels: int | None = None
    confidence: float = policy.DEFAULT_CONFIDENCE
    level: float = 0.95
    folds: int = 5
    shuffle: bool = False
    value_first: bool = True

    def __post_init__(self) -> None:
        unknown = [metric for metric in self.settle if metric not in METRICS]
        if unknown or not self.settle:
            raise ValueError(f"settle must name some of {', '.join(METRICS)}")
        if not self.half_width > 0 or not 0 < self.pilot <= 1 or not 0 < self.random_share <= 1:
            raise ValueError("half_width must be positive, pilot and random_share in (0, 1]")
        if self.stages < 1 or (self.max_labels is not None and self.max_labels < 1):
            raise ValueError("stages and max_labels must be positive")


@dataclass(frozen=True)
class Stage:
    """One stage: queries drawn and judged, campaign labels after it, the widest settled
    half-width (points) and the predictor's method."""

    drawn: int
    labels: int
    widest: float
    predictor: str


@dataclass(frozen=True)
class ActiveOutcome:
    """The judged campaign (``outcome``), each metric's estimates (one column per run, in the
    world's run order), the judged queries, the last stage's inclusion probabilities and
    predicted values (per metric, queries x runs: what its estimates corrected), the stages,
    and whether every settled score reached the half-width."""

    outcome: Outcome
    estimates: dict[str, ActiveEstimates]
    judged: np.ndarray
    probability: np.ndarray
    predicted: dict[str, np.ndarray]
    stages: tuple[Stage, ...] = field(default=())
    settled: bool = False


def simulate_active(
    world: World,
    crowd: SimulatedCrowd,
    features: PairFeatures,
    *,
    settings: ActiveSettings | None = None,
    seed: int = 0,
    quality: QualityControl | None = None,
) -> ActiveOutcome:
    """Judge ``world`` with ``crowd`` under the active policy (module docstring); ``features``
    are the pool's pairs' predictor inputs, one row per pair in pool order."""
    settings = settings or ActiveSettings()
    if len(features) != len(world.pool):
        raise ValueError("one feature row per pooled pair is required")
    if settings.shuffle:
        features = shuffled(features, seed)
    source = SimulatedSource(world, crowd, quality, seed)
    rng = source.rng
    rules = Rules.of(policy.ADAPTIVE, len(world.pool), seed, confidence=settings.confidence)
    tally = Tally.empty(len(world.pool), source.spent)
    query_of = world.layout.query_of
    queries = world.layout.pair_of.shape[0]
    judged = np.zeros(queries, bool)
    target = settings.half_width / 100
    z = float(ndtri(0.5 + settings.level / 2))
    stages: list[Stage] = []
    estimates: dict[str, ActiveEstimates] = {}
    misjudged = Misjudged(world.pool.run_count, len(METRICS))
    reported_pi, reported, widest = np.ones(queries), {}, np.inf
    full_rules = replace(rules, confidence=max(rules.confidence, policy.IN_FULL_CONFIDENCE))

    def in_full(tally: Tally, free: np.ndarray) -> np.ndarray:
        """A drawn query is judged in full, each pair asked to IN_FULL_CONFIDENCE, as live."""
        return np.flatnonzero(full_rules.needed(tally) & free & judged[query_of])

    if settings.value_first:
        judge(rules, source, tally, asker(world, rules, source.strata, METRIC_FIRST))
    for stage in range(settings.stages):
        labelled, posterior = tally.total > 0, rules.posterior(tally)
        predictions = cross_fit(
            features, world.pool.caption_ids, np.where(labelled, posterior, np.nan),
            folds=settings.folds, seed=seed + stage,
        )  # fmt: skip
        known = np.where(labelled, posterior, predictions.probability)
        predicted = query_metrics(world, known)
        spent = int(tally.total.sum())
        left = None if settings.max_labels is None else settings.max_labels - spent
        if stage or settings.value_first:
            design = stage_design(
                world, known, labelled, spent, judged, posterior, settings.settle,
                (PLAN_SHARE * target / z) ** 2, settings.random_share, left, rng,
                ratio=misjudged.ratio(),
            )  # fmt: skip
            pi, spread_grid = design.probability, design.spread
            if estimates:
                current = score_variances(estimates, settings.settle)
                if not narrows(pi, judged, design.planned, float(current.max())):
                    break  # the labels left cannot narrow the widest interval: keep the last
                if only_noise_left(design.floor, current, (target / z) ** 2):
                    break  # label noise alone keeps the open scores wide: keep the last
        else:  # a uniform pilot gives the predictor its first labels
            pi = np.full(queries, settings.pilot)
            spread_grid = None
        pi = np.where(judged, 1.0, pi)
        drawn = poisson_draw(pi, rng) & ~judged
        if left is not None and left <= 0:
            drawn[:] = False
        judged |= drawn
        judge(rules, source, tally, in_full)
        # Values under the resolved labels, as a label set reads them: the posterior-expected
        # metric would count every irrelevant pair's small leftover probability in C@K.
        posterior = rules.posterior(tally)
        estimates, values = judged_estimates(
            world, (posterior > 0.5).astype(np.float64), posterior, judged, pi, predicted,
            settings.level, rng,
        )  # fmt: skip
        reported_pi, reported = pi, predicted
        if spread_grid is not None:
            misjudged.add(values, predicted, spread_grid, drawn, pi, METRICS)
        widest = max(
            float((estimates[m].high - estimates[m].low).max()) / 2 for m in settings.settle
        )
        stages.append(
            Stage(int(drawn.sum()), int(tally.total.sum()), 100 * widest, predictions.method)
        )
        out_of_labels = left is not None and int(tally.total.sum()) >= settings.max_labels
        if widest <= target or judged.all() or out_of_labels:
            break
    if tally.posterior is None:
        tally.posterior = source.fit(tally)
    outcome = rules.outcome(tally, source.admitted)
    return ActiveOutcome(
        outcome, estimates, judged, reported_pi, reported, tuple(stages), widest <= target
    )


@dataclass(frozen=True)
class StageDesign:
    """A stage's planned design: each query's inclusion ``probability`` (1 where judged), the
    ``spread`` of its predicted values (queries x runs x :data:`METRICS`: their variance under
    the pairs' probabilities), ``planned`` (queries x runs x settled metrics) the error a drawn
    value is planned with (the spread scaled by how much larger real errors were, plus the
    label noise it brings), ``cost`` the labels judging each query in full is expected to take
    (0 where judged), and ``floor`` (runs x settled metrics) each score's label-noise variance
    from the queries judged so far at weight 1 (what every later stage gives them): no stage
    can bring the score's variance below it, since each query drawn adds noise of its own. On
    a live seed whose last three stages drew new queries for about 900 labels, the widest
    interval stayed at 1.05 points, all of it label noise (``bench/RESULTS.md``)."""

    probability: np.ndarray
    spread: np.ndarray
    planned: np.ndarray
    cost: np.ndarray
    floor: np.ndarray

    @property
    def expected_labels(self) -> float:
        """The labels the queries drawn and not yet judged are expected to take."""
        return float((self.probability * self.cost).sum())


def stage_design(
    world: World,
    known: np.ndarray,
    labelled: np.ndarray,
    spent: int,
    judged: np.ndarray,
    posterior: np.ndarray,
    settle: tuple[str, ...],
    variance: float,
    random_share: float,
    budget: float | None,
    rng: np.random.Generator,
    *,
    ratio: np.ndarray | float = 1.0,
) -> StageDesign:
    """The next stage's design over the queries not yet ``judged``, offline and live alike.
    A query's cost is its pairs short of :data:`~annotation.policy.rules.IN_FULL_CONFIDENCE`
    (what judging it in full asks) at the labels a labelled pair took so far. A value's planned
    error is its prediction's spread under ``known`` (every pair's probability of relevance)
    times ``ratio`` (:class:`Misjudged`, runs x :data:`METRICS`), plus the mean label noise of
    the values judged so far under their ``posterior``: a drawn value counts with weight 1/pi,
    its noise with 1/pi^2, and planned without it, late stages drew a few queries at small
    probabilities and widened the widest interval from 1.6 to 3.4 points live
    (``bench/RESULTS.md``). :func:`plan` then finds the smallest spend meeting ``variance``,
    within ``budget`` labels."""
    queries = world.layout.pair_of.shape[0]
    unsure = ~labelled | (np.maximum(known, 1 - known) < policy.IN_FULL_CONFIDENCE)
    per_pair = spent / labelled.sum() if labelled.any() else FIRST_LABELS_PER_PAIR
    cost = np.bincount(world.layout.query_of, unsure, minlength=queries) * per_pair
    spread = noise_variance(world, known, np.arange(queries), rng)
    grid = np.stack([spread[m] for m in METRICS], axis=2)
    columns = [METRICS.index(m) for m in settle]
    # The mean label-noise variance of the values judged so far (zero before any): what a
    # query drawn now is expected to bring besides its prediction's error.
    noise = np.zeros((world.pool.run_count, len(settle)))
    if judged.any():
        judged_noise = noise_variance(world, posterior, np.flatnonzero(judged), rng)
        noise = np.stack([judged_noise[metric].mean(axis=0) for metric in settle], axis=1)
    planned = (grid * ratio)[:, :, columns] + noise
    pi = plan(planned, np.where(judged, 0.0, cost), variance, random_share, budget=budget)
    floor = noise * int(judged.sum()) / queries**2
    return StageDesign(np.where(judged, 1.0, pi), grid, planned, np.where(judged, 0.0, cost), floor)


def plan(
    spread: np.ndarray,
    cost: np.ndarray,
    variance: float,
    random_share: float,
    *,
    budget: float | None = None,
) -> np.ndarray:
    """Inclusion probabilities for the queries not yet judged (cost > 0; the others get 1): the
    smallest budget whose design variance ``(1/N^2) sum (1 - pi)/pi e`` is at most ``variance``
    for every column; ``spread`` (queries x runs x metrics) is e, each value's expected squared
    error (its variance under the pairs' probabilities, what a calibrated predictor leaves), and
    ``budget`` (labels, None: none) caps the spend."""
    n = spread.shape[0]
    error = spread.reshape(n, -1)
    unit_error = error.sum(axis=1)
    total = float(cost.sum())
    if total <= 0:
        return np.ones(n)
    cap = total if budget is None else min(total, max(float(budget), 0.0))
    if cap <= 0:
        return np.where(cost > 0, 0.0, 1.0)

    def design(spend: float) -> np.ndarray:
        return inclusion_probabilities(unit_error, cost, spend, random_share=random_share)

    def enough(pi: np.ndarray) -> bool:
        worst = (((1 - pi) / pi)[:, None] * error).sum(axis=0).max(initial=0.0) / n**2
        return worst <= variance

    if not enough(design(cap)):
        return design(cap)
    low, high = 0.0, cap
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (low, middle) if enough(design(middle)) else (middle, high)
    return design(high)


def score_variances(estimates: dict[str, ActiveEstimates], settle: tuple[str, ...]) -> np.ndarray:
    """Runs x settled metrics: each settled score's variance (label noise and sampling)."""
    return np.stack(
        [estimates[m].labels_variance + estimates[m].sampling_variance for m in settle], axis=1
    )


def only_noise_left(floor: np.ndarray, current: np.ndarray, variance: float) -> bool:
    """Whether every settled score still wider than ``variance`` (``current``, runs x settled)
    has a label-noise ``floor`` (:attr:`StageDesign.floor`) at least that wide: drawing more
    queries cannot settle any of them. More labels on the judged pairs narrow the floor but not
    the resolved values' error, so intervals narrowed that way under-covered offline
    (``bench/RESULTS.md``): the stages stop instead."""
    open_ = current > variance
    return bool(open_.any() and (floor[open_] >= variance).all())


def narrows(pi: np.ndarray, judged: np.ndarray, spread: np.ndarray, current: float) -> bool:
    """Whether a stage drawn with ``pi`` is expected to narrow the widest settled interval: its
    planned design variance (the spread of the queries not yet judged) below ``current``, the
    current estimates' largest variance (:func:`score_variances`). A stage starved by the label
    budget draws a few queries with tiny probabilities and huge weights; on the demo world at a
    quarter of FIRE's labels such a last stage widened the intervals to tens of points. Decided
    before the draw, from what is known then, so the stages stay a valid sequential design."""
    rest = ~judged
    with np.errstate(divide="ignore", invalid="ignore"):  # pi 0: no labels left to draw with
        weights = np.where(pi[rest] > 0, (1 - pi[rest]) / pi[rest], np.inf)[:, None, None]
        planned = np.nan_to_num((weights * spread[rest]).sum(axis=0), nan=np.inf) / pi.size**2
    return bool(planned.max(initial=0.0) < current)


def judged_estimates(
    world: World,
    resolved: np.ndarray,
    posterior: np.ndarray,
    judged: np.ndarray,
    pi: np.ndarray,
    predicted: dict[str, np.ndarray],
    level: float,
    rng: np.random.Generator,
) -> tuple[dict[str, ActiveEstimates], dict[str, np.ndarray]]:
    """Per metric of ``predicted`` (queries x runs), offline and live alike: the
    active-inference estimates (one column per run) from the judged queries' values under the
    ``resolved`` labels and their label noise under ``posterior``; and those values (queries x
    runs, 0 where not judged). The predictions' weight is PPI's, 1: tuned on a few heavily
    weighted queries it made the design variance look smaller than it was (AP covered 76% of
    30 replays with the features shuffled, ``bench/RESULTS.md``)."""
    rows = np.flatnonzero(judged)
    values = query_metrics(world, resolved, rows)
    noise = noise_variance(world, posterior, rows, rng)
    estimates, grids = {}, {}
    for metric, prediction in predicted.items():
        y = np.zeros(prediction.shape)
        y[rows] = values[metric]
        spread = np.zeros_like(y)
        spread[rows] = noise[metric]
        grids[metric] = y
        estimates[metric] = active_means(
            y, prediction, judged, pi, noise_variance=spread, level=level, lam=1.0
        )
    return estimates, grids


class Misjudged:
    """How much larger the predictions' real squared errors are than the spread that planned
    the draws (per run and metric, over every query drawn so far, Horvitz-Thompson
    weighted): the spread assumes the pairs of a query independent, but relevance clusters by
    query (a hard caption's pairs are all irrelevant), so a query's metric varies more than it
    says. Later plans scale the spread by this ratio (never below 1)."""

    def __init__(self, runs: int, metrics: int) -> None:
        self.error = np.zeros((runs, metrics))
        self.spread = np.zeros((runs, metrics))

    def add(self, values, predicted, spread_grid, drawn, pi, settle) -> None:
        weight = (1 / pi[drawn])[:, None, None]
        residual = np.stack([values[m][drawn] - predicted[m][drawn] for m in settle], axis=2)
        self.error[:, : len(settle)] += (weight * residual**2).sum(axis=0)
        self.spread[:, : len(settle)] += (weight * spread_grid[drawn][:, :, : len(settle)]).sum(0)

    def ratio(self) -> np.ndarray:
        safe = np.where(self.spread > 0, self.spread, 1.0)
        return np.maximum(np.where(self.spread > 0, self.error / safe, 1.0), 1.0)[None]
