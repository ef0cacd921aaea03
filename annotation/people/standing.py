"""Pausing annotators who cannot be trusted automatically (:func:`check_pace`, :func:`check_gold`), by the rule
:func:`annotation.people.quality.should_pause`; an admin's remedies are
:mod:`annotation.people.service`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.utils import timezone

from annotation.gold import statements as gold_sql
from annotation.judging import statements
from annotation.models import AnnotatorStanding, Campaign, StandingEvent
from annotation.people import quality
from annotation.people import state as annotator_state

RECENT = 25
"""Judgements whose median time decides the speed rule."""


def paused(campaign: Campaign, annotator) -> AnnotatorStanding | None:
    """The annotator's standing if they are paused in the campaign."""
    return statements.paused(campaign.pk, annotator.pk)


@dataclass(frozen=True)
class Pace:
    """Whether the annotator is paused now, and else a warning to slow down (or None)."""

    paused: bool
    warning: str | None = None


def check_pace(campaign: Campaign, annotator, now: datetime | None = None) -> Pace:
    """Pause the annotator if the evidence says so, or warn them before the speed rule does:
    one statement for the standing and gold evidence, one more for the recent pace when the
    gold alone does not pause."""
    found = gold_sql.gold_evidence(campaign.pk, annotator.pk)
    if check_gold(campaign, annotator, found, now):
        return Pace(True)
    floor = campaign.settings.gold.floor_seconds
    recent = statements.recent_seconds(campaign.pk, annotator.pk, found.reinstated_at, RECENT)
    # NaN (no pause) while there are too few to judge a pace by.
    median = float(np.median(recent)) if len(recent) >= RECENT // 2 else float("nan")
    threshold = campaign.settings.gold.threshold
    if not quality.should_pause(found.correct, found.total, median, threshold, floor_seconds=floor):
        return Pace(False, annotator_state.speed_warning(recent, floor))
    _pause(campaign, annotator, annotator_state.speed_reason(median, floor), now)
    return Pace(True)


def check_gold(
    campaign: Campaign, annotator, evidence: gold_sql.GoldEvidence, now: datetime | None = None
) -> bool:
    """Pause the annotator if their gold accuracy (``evidence``: read by :func:`check_pace`, or
    with a queue answer on gold) says so; returns whether they are paused now. No statement
    unless it pauses; a gold answer does not change the pace."""
    if evidence.paused_at is not None:
        return True
    threshold = campaign.settings.gold.threshold
    if not quality.should_pause(evidence.correct, evidence.total, float("nan"), threshold):
        return False
    reason = annotator_state.gold_reason(evidence.correct, evidence.total, threshold)
    _pause(campaign, annotator, reason, now)
    return True


def _pause(campaign: Campaign, annotator, reason: str, now: datetime | None) -> None:
    """Pause by a rule, and write the pause into the annotator's history."""
    now = now or timezone.now()
    AnnotatorStanding.objects.update_or_create(
        campaign=campaign,
        annotator=annotator,
        defaults={"paused_at": now, "reason": reason, "paused_by": None},
    )
    paused = StandingEvent.Action.PAUSED
    StandingEvent.objects.create(
        campaign=campaign, annotator=annotator, action=paused, at=now, reason=reason[:300]
    )
