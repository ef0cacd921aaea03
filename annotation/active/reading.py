"""What a campaign's active stages have stored, read for its pages and the API (computes
nothing; :mod:`.stages` draws and estimates them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from annotation.judging import pair_state
from annotation.models import ActiveStage, Campaign, Pair
from annotation.ordering.settle_width import ESTIMATE, Spread
from retrieval.scoring.score_intervals import dominant_part


def settled(estimates: dict, settle, half_width: float) -> bool:
    """Whether every run's every settled score's interval is within ``half_width`` points."""
    return all(
        (scores[metric]["high"] - scores[metric]["low"]) * 50 <= half_width + 1e-9
        for scores in estimates.values()
        for metric in settle
    )


def active_spreads(campaign: Campaign) -> dict[str, dict[str, Spread]]:
    """Run -> metric -> the last estimated stage's interval as a spread, with the part holding
    most of its variance (read only)."""
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
            metric: Spread.of_interval(
                ESTIMATE,
                value["low"],
                value["high"],
                dominant_part(value.get("labels_variance"), value.get("sampling_variance")),
            )
            for metric, value in scores.items()
        }
        for run, scores in found.items()
    }


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
    queries still with a pair to label, and the last estimated stage and its estimates."""

    stages: tuple[StageRow, ...]
    waiting: int
    estimated_stage: int | None
    settled: bool
    estimates: dict | None = None
    stopped: str = ""
    """Why no stage followed the last one (the stopping rule's words), blank while one may."""

    @property
    def last(self) -> StageRow:
        return self.stages[-1]


def stage_status(campaign: Campaign) -> StageStatus | None:
    """:class:`StageStatus` in three queries; None before the first stage."""
    rows = list(
        ActiveStage.objects.filter(campaign=campaign)
        .order_by("number")
        .values_list("number", "drawn", "pairs", "labels_before", "estimates", "stopped")
    )
    if not rows:
        return None
    drawn = np.array(campaign.settings.active_captions, dtype=np.int64)
    unfinished = (
        Pair.objects.filter(campaign=campaign)
        .filter(pair_state.unfinished_pairs())
        .values_list("caption_id", flat=True)
        .distinct()
    )
    waiting = np.isin(drawn, np.fromiter(unfinished, dtype=np.int64)).sum()
    estimated = [(number, found) for number, *_, found, _ in rows if found is not None]
    number, found = estimated[-1] if estimated else (None, None)
    settings = campaign.settings
    return StageStatus(
        tuple(StageRow(n, d, p, b, e is not None) for n, d, p, b, e, _ in rows),
        int(waiting),
        number,
        found is not None and settled(found, settings.settle, settings.half_width),
        found,
        rows[-1][-1],
    )


def stored_report(campaign: Campaign) -> dict:
    """The campaign's stages (queries drawn, pairs served, labels before each, whether
    estimated), the drawn queries still being judged, and the last estimates (scores in
    [0, 1]; ``settled``: every score to settle within the half-width), from what is stored:
    it computes nothing (the API's and the campaign page's read)."""
    status = stage_status(campaign) or StageStatus((), 0, None, False)
    settings = campaign.settings
    return {
        "campaign": campaign.name,
        "settle": list(settings.settle),
        "half_width": settings.half_width,
        "stages": [asdict(row) for row in status.stages],
        "unfinished": status.waiting,
        "estimates": status.estimates,
        "estimated_stage": status.estimated_stage,
        "settled": status.settled,
        "stopped": status.stopped,
    }
