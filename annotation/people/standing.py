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
    if found.paused_at is not None:
        return Pace(True)
    reason = _inaccurate(campaign, found.correct, found.total)
    if reason is None:
        threshold = campaign.settings.gold.threshold
        floor = campaign.settings.gold.floor_seconds
        recent = statements.recent_seconds(campaign.pk, annotator.pk, found.reinstated_at, RECENT)
        # NaN (no pause) while there are too few to judge a pace by.
        median = float(np.median(recent)) if len(recent) >= RECENT // 2 else float("nan")
        if not quality.should_pause(
            found.correct, found.total, median, threshold, floor_seconds=floor
        ):
            return Pace(False, annotator_state.speed_warning(recent, floor))
        reason = annotator_state.speed_reason(median, floor)
    _pause(campaign, annotator, reason, now)
    return Pace(True)


def check_gold(campaign: Campaign, annotator, evidence, now: datetime | None = None) -> bool:
    """After a queue answer on gold, pause the annotator if their gold accuracy (``evidence``,
    read with the answer) says so; returns whether they are paused now. No statement unless
    it pauses; a gold answer does not change the pace."""
    if evidence.paused:
        return True
    reason = _inaccurate(campaign, evidence.correct, evidence.total)
    if reason is None:
        return False
    _pause(campaign, annotator, reason, now)
    return True


def _inaccurate(campaign: Campaign, correct: int, total: int) -> str | None:
    """Why the gold answers alone pause the annotator, or None when they do not."""
    threshold = campaign.settings.gold.threshold
    if not quality.should_pause(correct, total, float("nan"), threshold):
        return None
    return annotator_state.gold_reason(correct, total, threshold)


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
