"""A campaign's active stages, live (Zrnic & Candès, ICML 2024: active statistical inference;
the offline replay of the same design is :mod:`annotation.simulation.active`, whose planning
and metrics this module shares).

:func:`draw_stage` reads every pooled pair's probability of relevance (its label posterior
where it has labels, else the campaign's cross-fitted relevance predictor, else the labelled
pairs' mean) and from them each run's expected metric per query (the predictions). It plans
every query's inclusion probability: the smallest expected label spend whose design variance
meets the campaign's half-width for every settled score, higher where a query's metrics are
uncertain and lower where finishing it costs more labels, with a 10% uniform share
(:func:`annotation.simulation.active.plan`). It draws queries independently (Poisson) and
stores the probabilities and predictions, frozen, before any drawn pair is served again; drawn
queries are then served first and judged in full. Once every drawn query is,
:func:`estimate_stage` stores each run's active-inference mean of the judged queries' values
under their resolved labels and everyone's frozen predictions, with the label noise of the
judged values (Monte Carlo over their posteriors) in its interval: unbiased whatever the
predictor, since the predictions and probabilities were fixed before the draw. Queries judged
in earlier stages enter later ones with probability 1. Means are over the pooled queries.
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass, replace

import numpy as np
from django.db import transaction
from django.db.models import Case, IntegerField, Q, Value, When
from django.utils import timezone
from scipy.special import ndtri

from annotation.campaigns.pooling import Pool
from annotation.campaigns.provenance import provenance
from annotation.judging import pair_state
from annotation.judging.statements import queryset_array
from annotation.models import ActiveStage, Campaign, CampaignRun, Judgement, Pair
from annotation.ordering.settle_width import ESTIMATE, Spread
from annotation.policy import label_models
from annotation.prediction.stored import stored_predictions
from annotation.simulation.active import FIRST_LABELS_PER_PAIR, PLAN_SHARE, narrows, plan
from annotation.simulation.estimates import METRICS, noise_variance, query_metrics
from annotation.simulation.model import World
from config.batches import rows_in
from config.errors import UserError
from retrieval.ids import positions_of
from retrieval.models import Caption
from retrieval.scoring.active_inference import ActiveEstimates, active_means, poisson_draw
from retrieval.scoring.metrics import align_rows
from retrieval.scoring.score_intervals import query_key
from retrieval.search.runs_service import load_run

JOB_KIND = "active-stage"
"""The job kind that estimates a campaign's last stage and draws the next (:mod:`annotation.jobs`)."""
LEVEL = 0.95
RANDOM_SHARE = 0.1
"""The uniform share of every stage's design: every query keeps a chance to be drawn."""

_PAIR_ROW = np.dtype(
    [
        ("id", np.int64),
        ("pool_row", np.int64),
        ("caption_id", np.int64),
        ("video_id", np.int64),
        ("needed", np.int64),
        ("label_count", np.int64),
        ("fixed", np.int64),
        ("relevant", np.int64),
    ]
)


class ActiveError(UserError):
    """A stage cannot be drawn now (the last one is still being judged, every score is
    settled, no labels are left to narrow an interval...)."""


@dataclass(frozen=True)
class LiveCampaign:
    """A campaign's pool as a :class:`~annotation.simulation.model.World` (pairs grouped by
    caption, its truth unknown and left all irrelevant), and what is known of each pair:
    ``known`` its probability of relevance, ``posterior`` that of its labels (certain where
    adjudicated, auto-labelled or resolved without a model), ``resolved`` how the label set
    reads it, ``labelled`` whether it has a label, ``unfinished`` whether it still needs one."""

    world: World
    pair_ids: np.ndarray
    known: np.ndarray
    posterior: np.ndarray
    resolved: np.ndarray
    labelled: np.ndarray
    unfinished: np.ndarray
    labels_spent: int
    fixed: np.ndarray
    label_counts: np.ndarray

    @property
    def queries(self) -> np.ndarray:
        return self.world.layout.caption_ids


@dataclass(frozen=True)
class StageSummary:
    """What one stage drew, for the command and the job."""

    campaign: str
    stage: int
    queries: int
    drawn: int
    judged: int
    pairs: int
    expected_labels: float
    seed: int
    asked_again: int = 0
    """Labelled pairs of judged queries asked for one more label (:func:`_ask_again`)."""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _full_ranks(
    campaign: Campaign, queries: np.ndarray, captions: np.ndarray, videos: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each pooled pair's rank in each pooled run's whole ranked list (0: not listed), and per
    query x run x rank whether the caption's own video is there: what a rescoring reads, so
    that AP counts a pooled pair a run ranks below the pooling depth (cutting the lists at
    the depth put every run's live AP estimate 3 to 6 points below its rescored value on the
    demo world, ``bench/crowd_bench.py --only E``)."""
    pooled = list(
        CampaignRun.objects.filter(campaign=campaign).order_by("position").select_related("run")
    )
    lists = [align_rows(*_ids_items(entry.run), queries) for entry in pooled]
    depth = max([int(campaign.depth)] + [items.shape[1] for items in lists])
    own_of = dict(rows_in(Caption.objects.values_list("pk", "video_id"), "pk", queries.tolist()))
    own = np.array([own_of.get(int(q), -1) for q in queries], dtype=np.int64)
    query_of = np.searchsorted(queries, captions)
    ranks = np.zeros((captions.size, len(lists)), dtype=np.int64)
    known_positive = np.zeros((queries.size, len(lists), depth), dtype=bool)
    for r, items in enumerate(lists):
        known_positive[:, r, : items.shape[1]] = (items == own[:, None]) & (items >= 0)
        row, rank = np.nonzero(items >= 0)
        keys = row * (1 << 32) + items[row, rank]
        order = np.argsort(keys, kind="stable")
        wanted = query_of * (1 << 32) + videos
        at = np.minimum(np.searchsorted(keys[order], wanted), max(keys.size - 1, 0))
        found = keys.size > 0 and keys[order][at] == wanted
        ranks[:, r] = np.where(found, rank[order][at] + 1, 0)
    return ranks, known_positive


def _ids_items(run) -> tuple[np.ndarray, np.ndarray]:
    lists = load_run(run)
    return lists.query_ids, lists.item_ids


def live_campaign(campaign: Campaign) -> LiveCampaign:
    """The campaign's pool and each pair's probabilities, in a constant number of queries."""
    names = campaign.run_names()
    source = provenance(campaign)
    if not names or source.ranks.shape[1] != len(names):
        raise ActiveError(f"campaign {campaign.name!r} has no pooled runs to estimate")
    rows = queryset_array(
        Pair.objects.filter(campaign=campaign)
        .order_by("caption_id", "pool_row", "pk")
        .annotate(
            fixed=Case(
                When(~Q(adjudicated="") | ~Q(auto_label=""), then=Value(1)),
                default=Value(0),
                output_field=IntegerField(),
            ),
            relevant=Case(
                When(status=Pair.Status.RELEVANT, then=Value(1)),
                default=Value(0),
                output_field=IntegerField(),
            ),
        )
        .values_list(
            "id", "pool_row", "caption_id", "video_id", "needed", "label_count", "fixed", "relevant"
        ),
        _PAIR_ROW,
    )
    if not len(rows):
        raise ActiveError(f"campaign {campaign.name!r} has no pooled pairs")
    queries = np.unique(rows["caption_id"])
    ranks, known_positive = _full_ranks(campaign, queries, rows["caption_id"], rows["video_id"])
    pool = Pool(rows["caption_id"], rows["video_id"], ranks)
    world = World(
        pool,
        np.zeros(len(pool), bool),
        tuple(names),
        known_positive.shape[2],
        known_positive,
        np.ones(queries.size, np.int64),
    )
    fixed, relevant = rows["fixed"] == 1, (rows["relevant"] == 1).astype(np.float64)
    labelled = (rows["label_count"] > 0) | fixed
    posterior = relevant.copy()
    if label_models.is_adaptive(campaign):  # FIRE's policy resolves without a label model
        seen = label_models.snapshot(
            campaign,
            zip(rows["id"].tolist(), rows["pool_row"].tolist(), strict=True),
            Judgement.objects.filter(pair__campaign=campaign),
        )
        posterior = np.where(labelled & ~fixed, seen.posterior, relevant)
    prior = float(posterior[labelled].mean()) if labelled.any() else 0.5
    predicted = np.full(len(rows), prior)
    stored = stored_predictions(campaign)
    if stored is not None:
        where = positions_of(stored[0], rows["id"])
        found = where >= 0
        predicted[found] = np.clip(stored[1][where[found]].astype(np.float64), 0.0, 1.0)
    known = np.where(labelled, posterior, predicted)
    unfinished = (rows["needed"] > 0) | ~labelled
    return LiveCampaign(
        world,
        rows["id"],
        known,
        np.where(labelled, posterior, known),
        relevant,
        labelled,
        unfinished,
        int(rows["label_count"].sum()),
        fixed,
        rows["label_count"],
    )


@dataclass(frozen=True)
class StageArrays:
    """A stage's frozen design over the pooled queries: inclusion ``probability``, ``judged``
    (in full once the stage is), ``predicted`` (queries x runs x ``metrics``)."""

    caption_ids: np.ndarray
    probability: np.ndarray
    judged: np.ndarray
    predicted: np.ndarray

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez(
            buffer,
            caption_ids=self.caption_ids.astype(np.int64),
            probability=self.probability.astype(np.float64),
            judged=self.judged.astype(bool),
            predicted=self.predicted.astype(np.float64),
        )
        return buffer.getvalue()

    @classmethod
    def of(cls, stage: ActiveStage) -> StageArrays:
        with np.load(io.BytesIO(bytes(stage.arrays))) as arrays:
            return cls(
                arrays["caption_ids"], arrays["probability"], arrays["judged"], arrays["predicted"]
            )


def _z() -> float:
    return float(ndtri(0.5 + LEVEL / 2))


def _stages(campaign: Campaign) -> list[ActiveStage]:
    return list(ActiveStage.objects.filter(campaign=campaign).order_by("number"))


def _checked(arrays: StageArrays, live: LiveCampaign, number: int) -> None:
    if not np.array_equal(arrays.caption_ids, live.queries):
        raise ActiveError(f"stage {number} was drawn over other queries than the pool has now")


def unfinished_queries(
    arrays: StageArrays, live: LiveCampaign, *, unlabelled_only: bool = False
) -> int:
    """Queries judged in full by the stage that still have a pair to label (with
    ``unlabelled_only``, a pair with no label at all: a query whose pairs a later stage asks
    again still has a value to estimate with)."""
    waiting = live.unfinished if not unlabelled_only else ~live.labelled
    counts = np.bincount(live.world.layout.query_of, waiting, minlength=live.queries.size)
    return int(np.count_nonzero(arrays.judged & (counts > 0)))


def stage_estimates(
    live: LiveCampaign, arrays: StageArrays, metrics: list[str], seed: int
) -> dict[str, ActiveEstimates]:
    """Per metric (one column per run): the active-inference means of a finished stage, with
    the predictions' weight 1 (PPI's; tuned on a few heavily weighted queries it understated
    the variance offline, ``bench/RESULTS.md``)."""
    world = live.world
    rows = np.flatnonzero(arrays.judged)
    values = query_metrics(world, live.resolved, rows)
    noise = noise_variance(world, live.posterior, rows, np.random.default_rng(seed))
    result = {}
    for m, metric in enumerate(metrics):
        y = np.zeros(arrays.predicted.shape[:2])
        spread = np.zeros_like(y)
        y[rows], spread[rows] = values[metric], noise[metric]
        result[metric] = active_means(
            y,
            arrays.predicted[:, :, m],
            arrays.judged,
            arrays.probability,
            noise_variance=spread,
            level=LEVEL,
            lam=1.0,
        )
    return result


def _as_json(estimates: dict[str, ActiveEstimates], runs: list[str]) -> dict:
    return {
        run: {
            metric: {
                "estimate": float(found.estimate[r]),
                "low": float(found.low[r]),
                "high": float(found.high[r]),
                "labels_variance": float(found.labels_variance[r]),
                "sampling_variance": float(found.sampling_variance[r]),
            }
            for metric, found in estimates.items()
        }
        for r, run in enumerate(runs)
    }


def estimate_stage(campaign: Campaign) -> ActiveStage | None:
    """The campaign's last stage, its estimates computed and stored once every query it drew
    is judged in full (a stage still being judged is returned without them); None before any
    stage. A write: the command's and the jobs' work, never a page's."""
    stages = _stages(campaign)
    if not stages:
        return None
    last = stages[-1]
    if last.estimates is not None:
        return last
    live = live_campaign(campaign)
    arrays = StageArrays.of(last)
    _checked(arrays, live, last.number)
    if unfinished_queries(arrays, live):
        return last
    found = stage_estimates(live, arrays, list(last.metrics), last.seed)
    last.estimates = _as_json(found, list(last.run_names))
    last.estimated_at = timezone.now()
    ActiveStage.objects.filter(pk=last.pk, estimates__isnull=True).update(
        estimates=last.estimates, estimated_at=last.estimated_at
    )
    return last


def settled(estimates: dict, settle, half_width: float) -> bool:
    """Whether every run's every settled score's interval is within ``half_width`` points."""
    return all(
        (scores[metric]["high"] - scores[metric]["low"]) * 50 <= half_width + 1e-9
        for scores in estimates.values()
        for metric in settle
    )


def draw_stage(campaign: Campaign, *, seed: int | None = None) -> StageSummary:
    """Draw the campaign's next stage (module docstring) and serve its queries first;
    :class:`ActiveError` when the last stage is still being judged, every settled score is
    within the half-width, every query is judged or the labels left cannot narrow the widest
    interval."""
    last = estimate_stage(campaign)
    settings = campaign.settings
    live = live_campaign(campaign)
    queries = live.queries.size
    judged, current = np.zeros(queries, bool), None
    if last is not None:
        arrays = StageArrays.of(last)
        _checked(arrays, live, last.number)
        left = unfinished_queries(arrays, live)
        if left:
            raise ActiveError(
                f"stage {last.number} is still being judged: {left} of its queries have "
                "pairs to label"
            )
        if last.estimates is not None and settled(
            last.estimates, settings.settle, settings.half_width
        ):
            raise ActiveError(
                f"every settled score is within ±{settings.half_width:g} points: nothing to draw"
            )
        judged = arrays.judged.copy()
        current = stage_estimates(live, arrays, list(last.metrics), last.seed)
    if judged.all():
        raise ActiveError("every pooled query is judged in full: nothing to draw")
    number = 1 if last is None else last.number + 1
    seed = int(campaign.seed) * 1000 + number if seed is None else int(seed)
    rng = np.random.default_rng(seed)
    world = live.world
    predicted = query_metrics(world, live.known)
    confidence = settings.label_policy.confidence
    unsure = ~live.labelled | (np.maximum(live.known, 1 - live.known) < confidence)
    per_pair = (
        live.labels_spent / live.labelled.sum() if live.labelled.any() else FIRST_LABELS_PER_PAIR
    )
    cost = np.bincount(world.layout.query_of, unsure, minlength=queries) * per_pair
    spread = noise_variance(world, live.known, np.arange(queries), rng)
    grid = np.stack([spread[metric] for metric in settings.settle], axis=2)
    budget = settings.judging.budget
    left = None if budget is None else budget - live.labels_spent
    target = (PLAN_SHARE * settings.half_width / 100 / _z()) ** 2
    again = _ask_again(live, judged, settings.settle, target, campaign.max_labels, rng)
    if left is not None:
        left -= int(again.sum())
    pi = plan(grid, np.where(judged, 0.0, cost), target, RANDOM_SHARE, budget=left)
    if (
        current is not None
        and not again.any()
        and not narrows(pi, judged, grid, current, settings.settle)
    ):
        raise ActiveError("the labels left in the budget cannot narrow the widest interval")
    pi = np.where(judged, 1.0, pi)
    drawn = poisson_draw(pi, rng) & ~judged
    arrays = StageArrays(
        live.queries,
        pi,
        judged | drawn,
        np.stack([predicted[metric] for metric in METRICS], axis=2),
    )
    chosen = np.isin(world.pool.caption_ids, live.queries[drawn])
    served = (chosen & live.unfinished) | again
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if ActiveStage.objects.filter(campaign=locked, number__gte=number).exists():
            raise ActiveError("another stage was drawn meanwhile: look at it first")
        pair_state.reopen(live.pair_ids[(chosen & ~live.labelled) | again].tolist())
        pair_state.move({int(pk): 0 for pk in live.pair_ids[served]})
        now = locked.settings
        captions = set(now.active_captions) | set(live.queries[drawn].tolist())
        locked.set_settings(replace(now, active_captions=tuple(sorted(captions))))
        ActiveStage.objects.create(
            campaign=locked,
            number=number,
            seed=seed,
            drawn_at=timezone.now(),
            arrays=arrays.to_bytes(),
            run_names=list(world.run_names),
            metrics=list(METRICS),
            drawn=int(drawn.sum()),
            pairs=int(np.count_nonzero(served)),
            labels_before=live.labels_spent,
        )
    return StageSummary(
        campaign.name,
        number,
        queries,
        int(drawn.sum()),
        int(judged.sum()),
        int(np.count_nonzero(served)),
        float((pi * np.where(judged, 0.0, cost)).sum() + again.sum()),
        seed,
        int(again.sum()),
    )


NOISE_SHARE = 0.5
"""The share of a settled score's target variance its label noise may take before a stage asks
judged queries' unsure pairs again: the rest is the sampling's."""
SURE = 0.995
"""A pair at least this sure of its label is not asked again."""


def _ask_again(
    live: LiveCampaign,
    judged: np.ndarray,
    settle: tuple[str, ...],
    target: float,
    cap: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Per pair, whether the stage asks for one more label: where the label noise of the
    judged queries' values alone takes more than :data:`NOISE_SHARE` of a settled score's
    target variance (drawing more queries cannot narrow that), the unsure labelled pairs
    (below :data:`SURE`, under the label cap) that carry most of it, each pair's part being
    ``p (1 - p) d^2`` per run and score, d what flipping its label moves the query's value
    (exact for C@K, AP and nDCG: a query's expected metric is multilinear in its pairs'
    probabilities), taken in order until what is left fits. Asking the unsure pairs of the
    noisiest queries instead spent 3,000 labels a stage for a tenth of a point live."""
    again = np.zeros(len(live.pair_ids), bool)
    rows = np.flatnonzero(judged)
    if not rows.size:
        return again
    noise = noise_variance(live.world, live.posterior, rows, rng)
    total = np.stack([noise[metric].sum(axis=0) for metric in settle], axis=1)  # runs x settled
    n = judged.size
    allowed = NOISE_SHARE * target * n**2
    if total.max(initial=0.0) <= allowed:
        return again
    certainty = np.maximum(live.posterior, 1 - live.posterior)
    eligible = live.labelled & ~live.fixed & (certainty < SURE) & (live.label_counts < cap)
    eligible &= np.isin(live.world.layout.query_of, rows)
    part = _flip_parts(live, rows, settle, eligible)  # pairs x runs x settled
    excess = np.maximum(total - allowed, 0.0)
    weight = np.where(excess > 0, 1.0 / allowed, 0.0)
    order = np.argsort(-(part * weight).sum(axis=(1, 2)), kind="stable")
    order = order[eligible[order]]
    if not order.size:
        return again
    removed = np.cumsum(part[order], axis=0)
    fits = (total - removed <= allowed).all(axis=(1, 2))
    count = int(np.argmax(fits)) + 1 if fits.any() else order.size
    again[order[:count]] = True
    return again


def _flip_parts(
    live: LiveCampaign, rows: np.ndarray, settle: tuple[str, ...], eligible: np.ndarray
) -> np.ndarray:
    """Pairs x runs x settled metrics: ``p (1 - p) d^2`` for the ``eligible`` pairs (0
    elsewhere), d the change in the query's value when the pair's label flips, every other
    pair at its posterior. One slot of every query at a time: two metric passes a slot."""
    world = live.world
    layout = world.layout
    parts = np.zeros((len(live.pair_ids), world.pool.run_count, len(settle)))
    slots = layout.pair_of[rows]
    for slot in range(slots.shape[1]):
        pairs = slots[:, slot]
        take = pairs >= 0
        take[take] = eligible[pairs[take]]
        if not take.any():
            continue
        chosen = pairs[take]
        high, low = live.posterior.copy(), live.posterior.copy()
        high[chosen], low[chosen] = 1.0, 0.0
        up = query_metrics(world, high, rows[take])
        down = query_metrics(world, low, rows[take])
        p = live.posterior[chosen][:, None]
        for m, metric in enumerate(settle):
            parts[chosen, :, m] = p * (1 - p) * (up[metric] - down[metric]) ** 2
    return parts


def active_spreads(campaign: Campaign) -> dict[str, dict[str, Spread]]:
    """Run -> metric -> the last estimated stage's interval as a spread (read only)."""
    found = (
        ActiveStage.objects.filter(campaign=campaign, estimates__isnull=False)
        .order_by("-number")
        .values_list("estimates", flat=True)
        .first()
    )
    if not found:
        return {}
    return {
        run: {
            metric: Spread.of_interval(ESTIMATE, value["low"], value["high"])
            for metric, value in scores.items()
        }
        for run, scores in found.items()
    }


def stage_report(campaign: Campaign) -> dict:
    """:func:`stored_report` after :func:`estimate_stage` (the job's and the command's)."""
    estimate_stage(campaign)
    return stored_report(campaign)


def export_estimates(campaign: Campaign) -> dict | None:
    """The estimates of the campaign's last stage whose queries all have labels, from the
    labels as they are now, for the label set its resolution writes
    (``retrieval.scoring.score_intervals.stored_active`` reads them back): None without one."""
    found = _stages(campaign)
    if not found:
        return None
    live = live_campaign(campaign)
    for stage in reversed(found):
        arrays = StageArrays.of(stage)
        if not np.array_equal(arrays.caption_ids, live.queries):
            return None
        if unfinished_queries(arrays, live, unlabelled_only=True):
            continue
        estimates = stage_estimates(live, arrays, list(stage.metrics), stage.seed)
        return {
            "stage": stage.number,
            "queries": int(live.queries.size),
            "key": query_key(live.queries),
            "estimates": _as_json(estimates, list(stage.run_names)),
        }
    return None


@dataclass(frozen=True)
class StageRow:
    number: int
    drawn: int
    pairs: int
    labels_before: int
    estimated: bool


@dataclass(frozen=True)
class StageStatus:
    """The campaign page's view of its active stages (read only): each stage, the drawn
    queries still with a pair to label, and the last estimated stage."""

    stages: tuple[StageRow, ...]
    waiting: int
    estimated_stage: int | None
    settled: bool

    @property
    def last(self) -> StageRow:
        return self.stages[-1]


def stage_status(campaign: Campaign) -> StageStatus | None:
    """:class:`StageStatus` in three queries; None before the first stage."""
    rows = list(
        ActiveStage.objects.filter(campaign=campaign)
        .order_by("number")
        .values_list("number", "drawn", "pairs", "labels_before", "estimates")
    )
    if not rows:
        return None
    drawn = np.array(campaign.settings.active_captions, dtype=np.int64)
    unfinished = (
        Pair.objects.filter(campaign=campaign)
        .filter(Q(needed__gt=0) | Q(label_count=0, adjudicated="", auto_label=""))
        .values_list("caption_id", flat=True)
        .distinct()
    )
    waiting = np.isin(drawn, np.fromiter(unfinished, dtype=np.int64)).sum()
    estimated = [row for row in rows if row[4] is not None]
    settings = campaign.settings
    return StageStatus(
        tuple(StageRow(n, d, p, b, e is not None) for n, d, p, b, e in rows),
        int(waiting),
        estimated[-1][0] if estimated else None,
        bool(estimated) and settled(estimated[-1][4], settings.settle, settings.half_width),
    )


def stored_report(campaign: Campaign) -> dict:
    """The campaign's stages (queries drawn, pairs served, labels before each, whether
    estimated), the drawn queries still being judged, and the last estimates (scores in
    [0, 1]; ``settled``: every score to settle within the half-width), from what is stored:
    it computes nothing (the API's and the campaign page's read)."""
    status = stage_status(campaign)
    settings = campaign.settings
    found = (
        ActiveStage.objects.filter(campaign=campaign, estimates__isnull=False)
        .order_by("-number")
        .values_list("estimates", flat=True)
        .first()
    )
    return {
        "campaign": campaign.name,
        "settle": list(settings.settle),
        "half_width": settings.half_width,
        "stages": [] if status is None else [asdict(row) for row in status.stages],
        "unfinished": 0 if status is None else status.waiting,
        "estimates": found,
        "estimated_stage": None if status is None else status.estimated_stage,
        "settled": bool(status and status.settled),
    }
