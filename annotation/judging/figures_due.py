"""When a campaign's live figures (agreement, annotator scores, judging status) are due to be
computed again, asked after a label is stored: cheaply, and never computing them in the
judging request (:mod:`annotation.campaign_read.live_figures` computes them in a job).

Refreshes are paced like the adaptive policy's refits (:mod:`annotation.judging.label_models`):
the next starts at least ``max(MIN_INTERVAL, seconds / DUTY)`` after the last was computed,
``seconds`` being how long the last took, so they hold at most a tenth of a core whatever
the label rate.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from jobs import runner
from jobs.models import Job, StoredFigure

JOB_KIND = "campaign-figures"
PACED_BY = "campaign-agreement"
"""The figure whose age and cost pace the refreshes (the slowest of them, computed last)."""
EVERY = 50
"""A submit looks at whether a refresh is due only when its judgement id is a multiple of this."""
MIN_INTERVAL = timedelta(seconds=30)
DUTY = 0.1


def subject(campaign_id: int) -> str:
    """The subject a campaign's live figures are stored under."""
    return f"campaign {campaign_id}"


def request_refresh(campaign, judgement_id: int, now: datetime | None = None) -> bool:
    """After a label is stored (in its transaction): queue the ``campaign-figures`` job when
    the campaign's figures were never computed or were computed long enough ago, and none
    is queued or running. Whether one was queued."""
    if judgement_id % EVERY or not settings.FIREPOOL_WARM_FIGURES:
        return False
    last = (
        StoredFigure.objects.filter(kind=PACED_BY, subject=subject(campaign.pk))
        .values_list("computed_at", "seconds")
        .first()
    )
    if last is not None:
        computed_at, seconds = last
        pause = max(MIN_INTERVAL, timedelta(seconds=max(seconds, 0.0) / DUTY))
        if computed_at > (now or timezone.now()) - pause:
            return False
    waiting = Job.objects.filter(
        kind=JOB_KIND,
        status__in=[Job.Status.QUEUED, Job.Status.RUNNING],
        arguments__campaign=campaign.name,
    )
    if waiting.exists():
        return False
    name = campaign.name
    transaction.on_commit(lambda: runner.submit(JOB_KIND, {"campaign": name}))
    return True
