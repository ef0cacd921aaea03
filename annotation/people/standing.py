"""Pausing annotators who cannot be trusted, and discounting their labels.

An annotator is paused automatically (:func:`check`) when, after at least ten gold pairs in
the queue, the upper Wilson 95% bound of their gold accuracy is below the campaign's
threshold, or when their median time per judgement is below a floor (1 s by default:
nobody watches a video that fast); :func:`annotation.people.quality.should_pause` is the rule.
A paused annotator is served nothing and told why. What an admin does about it (pause by
hand, reinstate, after which only later evidence counts, discount labels) is
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


def _median(recent: list[float]) -> float:
    """The median of the recent times, or NaN while there are too few to judge a pace by."""
    return float(np.median(recent)) if len(recent) >= RECENT // 2 else float("nan")


def check(campaign: Campaign, annotator, now: datetime | None = None) -> bool:
    """Pause the annotator if the evidence says so; returns whether they are paused now
    (see :func:`check_pace`)."""
    return check_pace(campaign, annotator, now).paused


@dataclass(frozen=True)
class Pace:
    """What :func:`check_pace` found: whether the annotator is paused now, and a warning
    to show them when they are not but answer too fast (None: no warning)."""

    paused: bool
    warning: str | None = None


def check_pace(campaign: Campaign, annotator, now: datetime | None = None) -> Pace:
    """Pause the annotator if the evidence says so, or warn them before the speed rule does.

    Runs on every gold answer in the queue and every too-fast label, so it reads the
    standing and the gold evidence in one statement (:data:`gold_sql.GOLD_EVIDENCE`), and the
    recent pace only when the gold evidence alone does not pause; the warning counts the
    too-fast answers among those recent times, so it costs no statement more.
    """
    found = gold_sql.gold_evidence(campaign.pk, annotator.pk)
    if found.paused_at is not None:
        return Pace(True)
    reason = _inaccurate(campaign, found.correct, found.total)
    if reason is None:
        threshold = campaign.settings.gold.threshold
        floor = campaign.settings.gold.floor_seconds
        recent = statements.recent_seconds(campaign.pk, annotator.pk, found.reinstated_at, RECENT)
        median = _median(recent)
        if not quality.should_pause(
            found.correct, found.total, median, threshold, floor_seconds=floor
        ):
            return Pace(False, annotator_state.speed_warning(recent, floor))
        reason = annotator_state.speed_reason(median, floor)
    _pause(campaign, annotator, reason, now)
    return Pace(True)


def check_gold(campaign: Campaign, annotator, evidence, now: datetime | None = None) -> bool:
    """After a queue answer on gold, pause the annotator if their gold accuracy says so;
    returns whether they are paused now. ``evidence`` (a ``gold_queue.GoldEvidence``) was
    read with the answer, so this runs no statement unless it pauses. The pace is not looked
    at: it is the median time of the annotator's labels, which a gold answer does not
    change (a too-fast answer runs :func:`check`, as a too-fast label does)."""
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
    """Pause by a rule, and write the pause into the annotator's history (rare: once per
    pause, so the judging path pays for it only when it pauses)."""
    now = now or timezone.now()
    AnnotatorStanding.objects.update_or_create(
        campaign=campaign,
        annotator=annotator,
        defaults={"paused_at": now, "reason": reason, "paused_by": None},
    )
    StandingEvent.objects.create(
        campaign=campaign,
        annotator=annotator,
        action=StandingEvent.Action.PAUSED,
        at=now,
        reason=reason[:300],
    )
