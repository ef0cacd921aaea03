"""A campaign's active stages, live (Zrnic & Candès, ICML 2024: active statistical inference):
the design of :mod:`annotation.simulation.active`, whose planning and estimates it shares, on
the campaign's pool (read by :mod:`.live`; what pages read is :mod:`.reading`).

:func:`draw_stage` predicts each run's metric per query from every pooled pair's probability
of relevance (its label posterior, else the cross-fitted relevance predictor, else the
labelled pairs' mean), plans the queries' inclusion probabilities (10% uniform share,
:func:`annotation.simulation.active.plan`), draws them (Poisson) and stores probabilities and
predictions, frozen, before any drawn pair is served again; drawn queries are served first
and judged in full, each pair asked to :data:`annotation.policy.rules.IN_FULL_CONFIDENCE`.
Once every drawn query is, :func:`estimate_stage` stores each run's active-inference mean
over the pooled queries, the judged values' label noise in its interval: unbiased whatever
the predictor, since predictions and probabilities were fixed before the draw. Earlier
stages' queries enter with probability 1.
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass, replace

import numpy as np
from django.db import transaction
from django.utils import timezone
from scipy.special import ndtri

from annotation.active.live import ActiveError, LiveCampaign, live_campaign
from annotation.active.reading import settled, stored_report
from annotation.judging import pair_state
from annotation.models import ActiveStage, Campaign
from annotation.policy.rules import IN_FULL_CONFIDENCE
from annotation.simulation.active import (
    PLAN_SHARE,
    Misjudged,
    judged_estimates,
    narrows,
    only_noise_left,
    stage_design,
)
from annotation.simulation.estimates import METRICS, query_metrics
from retrieval.scoring.active_inference import ActiveEstimates, poisson_draw
from retrieval.scoring.score_intervals import query_key

JOB_KIND = "active-stage"
"""The job kind that estimates a campaign's last stage and draws the next (:mod:`annotation.active.jobs`)."""
LEVEL = 0.95
_Z = float(ndtri(0.5 + LEVEL / 2))
RANDOM_SHARE = 0.1
"""The uniform share of every stage's design: every query keeps a chance to be drawn."""


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

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class StageArrays:
    """A stage's frozen design over the pooled queries: inclusion ``probability``, ``judged``
    (in full once the stage is), ``predicted`` (queries x runs x ``metrics``) and the
    ``spread`` that planned it (the same shape; None in a stage stored before it was kept)."""

    caption_ids: np.ndarray
    probability: np.ndarray
    judged: np.ndarray
    predicted: np.ndarray
    spread: np.ndarray | None = None

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        extra = {} if self.spread is None else {"spread": self.spread.astype(np.float64)}
        np.savez(
            buffer,
            caption_ids=self.caption_ids.astype(np.int64),
            probability=self.probability.astype(np.float64),
            judged=self.judged.astype(bool),
            predicted=self.predicted.astype(np.float64),
            **extra,
        )
        return buffer.getvalue()

    @classmethod
    def of(cls, stage: ActiveStage) -> StageArrays:
        with np.load(io.BytesIO(bytes(stage.arrays))) as arrays:
            return cls(
                arrays["caption_ids"],
                arrays["probability"],
                arrays["judged"],
                arrays["predicted"],
                arrays["spread"] if "spread" in arrays.files else None,
            )


def _stages(campaign: Campaign) -> list[ActiveStage]:
    return list(ActiveStage.objects.filter(campaign=campaign).order_by("number"))


def _checked(arrays: StageArrays, live: LiveCampaign, number: int) -> None:
    if not np.array_equal(arrays.caption_ids, live.queries):
        raise ActiveError(f"stage {number} was drawn over other queries than the pool has now")


def unfinished_queries(
    arrays: StageArrays, live: LiveCampaign, *, unlabelled_only: bool = False
) -> int:
    """Queries judged in full by the stage that still have a pair to label (with
    ``unlabelled_only``, a pair with no label at all: a query whose pairs still want a label
    to reach the higher confidence has a value to estimate with)."""
    waiting = live.unfinished if not unlabelled_only else ~live.labelled
    counts = np.bincount(live.world.layout.query_of, waiting, minlength=live.queries.size)
    return int(np.count_nonzero(arrays.judged & (counts > 0)))


def stage_estimates(
    live: LiveCampaign, arrays: StageArrays, metrics: list[str], seed: int
) -> dict[str, ActiveEstimates]:
    """Per metric (one column per run): the active-inference means of a finished stage
    (:func:`annotation.simulation.active.judged_estimates`)."""
    predicted = {metric: arrays.predicted[:, :, m] for m, metric in enumerate(metrics)}
    return judged_estimates(
        live.world, live.resolved, live.posterior, arrays.judged, arrays.probability, predicted,
        LEVEL, np.random.default_rng(seed),
    )[0]  # fmt: skip


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


def estimate_stage(campaign: Campaign, live: LiveCampaign | None = None) -> ActiveStage | None:
    """The campaign's last stage, its estimates computed and stored once every query it drew
    is judged in full (a stage still being judged is returned without them); None before any
    stage. ``live``: the campaign's pool, when the caller has read it. A write: the command's
    and the jobs' work, never a page's."""
    stages = _stages(campaign)
    if not stages:
        return None
    last = stages[-1]
    if last.estimates is not None:
        return last
    live = live or live_campaign(campaign)
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


def _misjudged(stages: list[ActiveStage], live: LiveCampaign) -> np.ndarray | float:
    """:class:`annotation.simulation.active.Misjudged`'s ratio over the queries every stored
    stage drew, their values under the labels as they are now: offline, plans that did not
    scale their spread by it drew too few queries stage after stage (AP covered 76% of 30
    replays, ``bench/RESULTS.md``). 1 before any stage stored its spread."""
    found = Misjudged(live.world.pool.run_count, len(METRICS))
    before = np.zeros(live.queries.size, bool)
    for stage in stages:
        arrays = StageArrays.of(stage)
        drawn, before = arrays.judged & ~before, arrays.judged
        if arrays.spread is None or not drawn.any() or list(stage.metrics) != list(METRICS):
            continue
        rows = np.flatnonzero(drawn)
        judged = query_metrics(live.world, live.resolved, rows)
        values, predicted = {}, {}
        for m, metric in enumerate(METRICS):
            values[metric] = np.zeros(arrays.predicted.shape[:2])
            values[metric][rows] = judged[metric]
            predicted[metric] = arrays.predicted[:, :, m]
        found.add(values, predicted, arrays.spread, drawn, arrays.probability, METRICS)
    return found.ratio()


def _stored_variances(estimates: dict, runs: list[str], settle: tuple[str, ...]) -> np.ndarray:
    """:func:`annotation.simulation.active.score_variances` of a stage's stored estimates."""
    return np.array(
        [
            [
                float(estimates[run][metric]["labels_variance"])
                + float(estimates[run][metric]["sampling_variance"])
                for metric in settle
            ]
            for run in runs
        ]
    )


def _stop(last: ActiveStage | None, reason: str) -> None:
    """Refuse the next draw for ``reason``, kept on the last stage (if any) for the campaign
    page, the API and the command to say (the latest refusal replaces an earlier one; a draw
    clears it)."""
    if last is not None:
        ActiveStage.objects.filter(pk=last.pk).update(stopped=reason)
    raise ActiveError(reason)


def _after_last_stage(
    campaign: Campaign, live: LiveCampaign
) -> tuple[ActiveStage | None, np.ndarray, np.ndarray | None]:
    """The last stage (estimated once judged in full), the queries judged so far and the
    settled scores' current variances (None before any estimate); :class:`ActiveError`, kept
    on the last stage, when it is still being judged, every settled score is within the
    half-width or every query is judged."""
    settings = campaign.settings
    last = estimate_stage(campaign, live)
    judged, current = np.zeros(live.queries.size, bool), None
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
            _stop(
                last,
                f"every settled score is within ±{settings.half_width:g} points: nothing to draw",
            )
        judged = arrays.judged.copy()
        if last.estimates:
            current = _stored_variances(last.estimates, list(last.run_names), settings.settle)
    if judged.all():
        _stop(last, "every pooled query is judged in full: nothing to draw")
    return last, judged, current


def draw_stage(campaign: Campaign, *, seed: int | None = None) -> StageSummary:
    """Draw the campaign's next stage (module docstring) and serve its queries first;
    :class:`ActiveError` when the last stage is still being judged, every settled score is
    within the half-width, every query is judged, or neither the labels left nor any draw can
    narrow the widest interval (:attr:`~annotation.simulation.active.StageDesign.floor`)."""
    settings = campaign.settings
    live = live_campaign(campaign)
    last, judged, current = _after_last_stage(campaign, live)
    queries = live.queries.size
    ratio = _misjudged(_stages(campaign), live) if last is not None else 1.0
    number = 1 if last is None else last.number + 1
    seed = int(campaign.seed) * 1000 + number if seed is None else int(seed)
    rng = np.random.default_rng(seed)
    world = live.world
    predicted = query_metrics(world, live.known)
    budget = settings.judging.budget
    design = stage_design(
        world, live.known, live.labelled, live.labels_spent, judged, live.posterior,
        settings.settle, (PLAN_SHARE * settings.half_width / 100 / _Z) ** 2, RANDOM_SHARE,
        None if budget is None else budget - live.labels_spent, rng, ratio=ratio,
    )  # fmt: skip
    pi = design.probability
    if current is not None and not narrows(pi, judged, design.planned, float(current.max())):
        _stop(last, "the labels left in the budget cannot narrow the widest interval")
    if current is not None and only_noise_left(
        design.floor, current, (settings.half_width / 100 / _Z) ** 2
    ):
        _stop(
            last,
            f"every open score's label noise alone is wider than ±{settings.half_width:g} "
            "points: more queries cannot narrow it",
        )
    drawn = poisson_draw(pi, rng) & ~judged
    arrays = StageArrays(
        live.queries,
        pi,
        judged | drawn,
        np.stack([predicted[metric] for metric in METRICS], axis=2),
        design.spread,
    )
    chosen = np.isin(world.pool.caption_ids, live.queries[drawn])
    # a drawn query's labelled pairs the value order parked still unsure are asked again
    unsure = np.maximum(live.posterior, 1 - live.posterior) < IN_FULL_CONFIDENCE
    again = (
        chosen & live.labelled & ~live.fixed & unsure & (live.label_counts < campaign.max_labels)
    )
    served = (chosen & live.unfinished) | again
    n_drawn, n_served = int(drawn.sum()), int(np.count_nonzero(served))
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if ActiveStage.objects.filter(campaign=locked, number__gte=number).exists():
            raise ActiveError("another stage was drawn meanwhile: look at it first")
        pair_state.place(
            reopen_ids=live.pair_ids[(chosen & ~live.labelled) | again].tolist(),
            positions={int(pk): 0 for pk in live.pair_ids[served]},
        )
        now = locked.settings
        captions = set(now.active_captions) | set(live.queries[drawn].tolist())
        judging = now.judging
        if judging.budget is not None:  # a drawn query is judged in full, budget or not
            short = n_served - max(judging.budget - live.labels_spent, 0)
            judging = replace(judging, budget=judging.budget + max(short, 0))
        locked.set_settings(replace(now, active_captions=tuple(sorted(captions)), judging=judging))
        ActiveStage.objects.filter(campaign=locked, number=number - 1).update(stopped="")
        ActiveStage.objects.create(
            campaign=locked,
            number=number,
            seed=seed,
            drawn_at=timezone.now(),
            arrays=arrays.to_bytes(),
            run_names=list(world.run_names),
            metrics=list(METRICS),
            drawn=n_drawn,
            pairs=n_served,
            labels_before=live.labels_spent,
        )
    return StageSummary(
        campaign.name, number, queries, n_drawn, int(judged.sum()), n_served,
        design.expected_labels, seed,
    )  # fmt: skip


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
