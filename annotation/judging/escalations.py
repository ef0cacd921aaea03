"""Escalations: an annotator sends the pair on screen to the admins (or reports its video
broken) instead of labelling it, and an admin closes the escalation, adjudicating the pair
or returning it to the queue. An escalated pair is held from annotators meanwhile; the
rules an annotator's answer follows (active campaign, not paused, one UUID per body) are
:mod:`annotation.judging.submit`'s.
"""

from datetime import datetime
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from annotation.gold import tasks as gold_queue
from annotation.judging import pair_state, task_ids
from annotation.judging import statements as sql
from annotation.judging.errors import AssignmentError
from annotation.judging.queue import Assignment, assign
from annotation.judging.submit import (
    UNDO_SECONDS,
    latest_answer,
    lock_query,
    refuse_paused,
    require_active,
)
from annotation.models import Campaign, Escalation, GoldJudgement, Judgement, Lease, Pair
from annotation.ordering import priorities
from config.text_rule import check_text, text_problem

MAX_OPEN_ESCALATIONS = 5
"""Escalations an annotator may have waiting for an admin in one campaign."""
REASON_LENGTH = 2000
"""Longest reason an annotator gives for an escalation."""
NOTE_LENGTH = 1000
"""Longest note an admin leaves when closing an escalation."""


def _may_escalate(pair: Pair, campaign: Campaign, annotator, now: datetime) -> bool:
    """Whether the annotator holds a lease on the pair or answered it last, moments ago
    (their latest answer of any kind: a gold task is no exception)."""
    if Lease.objects.filter(pair=pair, annotator=annotator).exists():
        return True
    latest = latest_answer(campaign, annotator)
    if latest is None or (now - latest.created_at).total_seconds() > UNDO_SECONDS:
        return False
    answered = latest.gold_pair.task_id if isinstance(latest, GoldJudgement) else latest.pair_id
    return answered == pair.pk


def _judged_in(campaign: Campaign) -> Campaign:
    """The campaign whose queue a pair of ``campaign`` is judged in: for a gold task, the
    campaign its gold companion serves."""
    main_id = gold_queue.gold_of(campaign)
    return campaign if main_id is None else Campaign.objects.get(pk=main_id)


BROKEN_VIDEO_REASON = "the video does not play"
"""The reason of a broken-video report that names none."""


def escalate(
    annotator,
    pair_id: int,
    reason: str,
    client_uuid: UUID,
    now: datetime | None = None,
    *,
    kind: str = Escalation.Kind.OTHER,
    media_error: str = "",
) -> Assignment:
    """Send the pair on screen to the admins (not a label); it is held from annotators meanwhile.

    ``kind`` :attr:`~Escalation.Kind.BROKEN_VIDEO` is the judging page's report of a video
    that would not play, ``media_error`` what the browser said (the reason may then be
    empty: :data:`BROKEN_VIDEO_REASON`).

    Only a pair leased to the annotator, or the one they just judged, may be escalated, and
    at most :data:`MAX_OPEN_ESCALATIONS` of theirs may wait per campaign: otherwise one
    script could hold back a whole campaign. A gold task follows the same rules and is
    recorded the same way (so a retried or reused id is answered alike), but it is given
    back rather than held, and its escalation is closed at once: nothing waits on it.
    A retry with the same id, pair and reason counts once; the same id with another body
    is a conflict. A paused annotator's escalation, a retry included, is refused like
    their answers (:func:`refuse_paused`): nothing is stored and no pair is held.
    """
    if kind not in Escalation.Kind.values:
        raise AssignmentError("invalid", f"kind must be one of {Escalation.Kind.values}")
    reason = (reason or "").strip()[:REASON_LENGTH]
    media_error = (media_error or "").strip()[:REASON_LENGTH]
    if not reason and kind == Escalation.Kind.BROKEN_VIDEO:
        reason = BROKEN_VIDEO_REASON
    if not reason:
        raise AssignmentError("invalid", "say why the pair cannot be judged")
    problem = text_problem(reason, REASON_LENGTH, lines=True)
    if problem is not None:
        raise AssignmentError("invalid", f"the reason {problem}")
    if not 0 < pair_id <= task_ids.MAX_ID:  # no row has it; the driver would overflow
        raise AssignmentError("not_found", "no such pair")
    target = sql.pair_target(pair_id, annotator.pk)
    if target is not None:  # a retry of one stored before the pause included
        refuse_paused(target.gold_of or target.campaign, annotator, target.paused)
    now = now or timezone.now()
    sent = {  # what the annotator sent: a retry must send the same
        "annotator_id": annotator.pk,
        "pair_id": pair_id,
        "reason": reason,
        "kind": kind,
        "media_error": media_error,
    }
    with transaction.atomic():
        existing = (
            Escalation.objects.filter(uuid=client_uuid)
            .select_related("pair__campaign")
            .defer("pair__campaign__provenance")
            .first()
        )
        if existing is not None:
            if any(getattr(existing, name) != value for name, value in sent.items()):
                raise AssignmentError("conflict", "this escalation id was already used")
            return assign(_judged_in(existing.pair.campaign), annotator, now)
        pair = sql.locked_pair(pair_id)
        if pair is None:
            raise AssignmentError("not_found", "no such pair")
        campaign = _judged_in(pair.campaign)
        require_active(campaign)
        if pair.held or not _may_escalate(pair, campaign, annotator, now):
            raise AssignmentError(
                "not_leased", "only the pair you are judging (or just judged) can be escalated"
            )
        waiting = Escalation.objects.filter(
            annotator=annotator, pair__campaign=campaign, resolved_at__isnull=True
        ).count()
        if waiting >= MAX_OPEN_ESCALATIONS:
            raise AssignmentError(
                "too_many_escalations",
                f"you have {waiting} escalations waiting for an admin; judge on meanwhile",
            )
        report = Escalation(uuid=client_uuid, **sent)
        gold_task = campaign.pk != pair.campaign_id
        if gold_task:  # given back; it may come again later
            gold_queue.release(pair, annotator)
            report.resolved_at, report.resolution = now, "gold task: given back to the queue"
        report.save()
        if not gold_task:
            pair_state.hold(pair.pk)
    return assign(campaign, annotator, now)


def resolve_escalation(
    escalation: Escalation, admin, *, label: str | None = None, note: str = ""
) -> None:
    """Close an escalation: adjudicate the pair with ``label``, or return it to the queue."""
    check_text(note, "note", NOTE_LENGTH)
    now = timezone.now()
    with transaction.atomic():
        pair = Pair.objects.select_related("campaign").get(pk=escalation.pair_id)
        if label is not None:
            adjudicate(pair, admin, label)
        Escalation.objects.filter(pair=pair, resolved_at__isnull=True).update(
            resolved_at=now,
            resolved_by=admin,
            resolution=note or (label or "returned to the queue"),
        )
        pair_state.unhold(pair.pk)


def adjudicate(pair: Pair, admin, label: str) -> None:
    """Store an admin's final label for the pair; it wins over the annotators' labels."""
    if label not in Judgement.Label.values:
        raise AssignmentError("invalid", f"label must be one of {Judgement.Label.values}")
    with transaction.atomic():
        lock_query(sql.pair_target(pair.pk))
        pair_state.adjudicate(pair, admin, label)
        priorities.reprioritise(pair.campaign, pair.caption_id)
