"""Read what decides an annotator's state (:mod:`annotation.people.state`) from the database:
:func:`judging_state` for the judging API (which holds most inputs already) and
:func:`campaign_states` for the home list (a fixed number of queries for all campaigns).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from django.db.models import Count
from django.utils import timezone

from annotation.gold import tasks as gold_queue
from annotation.judging import queue
from annotation.models import AnnotatorStanding, Campaign, GoldPair
from annotation.ordering import priorities
from annotation.people.state import JUDGING, Inputs, State, state_of


def _qualification_inputs(state: gold_queue.Qualification) -> dict:
    return {
        "qualification_required": state.required,
        "admitted": state.admitted,
        "qualification_done": state.done,
        "qualification_total": state.total,
        "tries_used": state.tries_used,
        "tries": state.tries,
        "last_score": state.last_score,
        "retry_at": state.next_try_at,
        "out_of_tries": state.out_of_tries,
    }


def judging_state(
    campaign: Campaign,
    got: queue.Assignment,
    qualification: gold_queue.Qualification,
    work_left: bool,
) -> State:
    """The state the judging page shows after ``got`` (an assignment just made): no query with
    a pair served; ``work_left`` tells "nothing free" from "finished", and only a finished
    annotator costs two queries more (finished for everyone, or only for them)."""
    finished = budget = False
    left_for_me = True
    serving = got.current is not None
    active = campaign.status == Campaign.Status.ACTIVE
    if not serving and not work_left and active and got.paused_since is None:
        budget = priorities.budget_spent(campaign)
        finished = budget or queue.campaign_totals(campaign)[1] == 0
        left_for_me = False
    return state_of(
        Inputs(
            campaign_status=campaign.status,
            paused_at=got.paused_since,
            pause_reason=got.paused or "",
            finished=finished,
            budget_spent=budget,
            left_for_me=left_for_me,
            serving=serving,
            **_qualification_inputs(qualification),
        )
    )


def _qualifications(
    campaigns: list[Campaign], annotator, now: datetime
) -> dict[int, gold_queue.Qualification]:
    """Campaign id -> the annotator's qualification state (two queries)."""
    asking = [c for c in campaigns if c.settings.gold.qualification]
    found = {c.pk: gold_queue.Qualification(required=False, admitted=True) for c in campaigns}
    if not asking:
        return found
    ids = [c.pk for c in asking]
    gold_pairs = dict(
        GoldPair.objects.filter(campaign_id__in=ids)
        .order_by()
        .values("campaign_id")
        .annotate(n=Count("pk"))
        .values_list("campaign_id", "n")
    )
    attempts = gold_queue.attempts_by("campaign_id", campaign_id__in=ids, annotator=annotator)
    for campaign in asking:
        found[campaign.pk] = gold_queue.qualification_from(
            campaign.settings.gold, gold_pairs.get(campaign.pk, 0), attempts[campaign.pk], now
        )
    return found


def campaign_states(
    campaigns: Sequence[Campaign], annotator, progress: Sequence, now: datetime | None = None
) -> dict[int, State]:
    """Campaign id -> the annotator's state there, for the home list (``progress``: each
    campaign's :class:`~annotation.people.progress.CampaignProgress`). Three queries, and a
    fourth (:func:`queue.free_now`, no lease taken) where the annotator may judge somewhere."""
    now = now or timezone.now()
    campaigns = list(campaigns)
    ids = [c.pk for c in campaigns]
    paused = {
        row[0]: row[1:]
        for row in AnnotatorStanding.objects.filter(
            campaign_id__in=ids, annotator=annotator, paused_at__isnull=False
        ).values_list("campaign_id", "paused_at", "reason")
    }
    qualifications = _qualifications(campaigns, annotator, now)
    by_id = {item.campaign_id: item for item in progress}
    inputs = {}
    for campaign in campaigns:
        item = by_id[campaign.pk]
        paused_at, reason = paused.get(campaign.pk, (None, ""))
        inputs[campaign.pk] = Inputs(
            campaign_status=campaign.status,
            paused_at=paused_at,
            pause_reason=reason,
            finished=item.finished,
            budget_spent=item.budget_spent,
            left_for_me=item.left_for_me > 0,
            **_qualification_inputs(qualifications[campaign.pk]),
        )
    states = {pk: state_of(given) for pk, given in inputs.items()}
    judging = [c for c in campaigns if states[c.pk].key == JUDGING]
    free = queue.free_now(judging, annotator, now) if judging else set()
    for campaign in judging:
        if campaign.pk not in free:
            states[campaign.pk] = state_of(replace(inputs[campaign.pk], serving=False))
    return states
