"""Take an annotator's answer (a label, on a pair or a gold task) and its undo.

Submits are idempotent: the client's UUID makes a retry return the stored judgement, and
the same UUID with another body is a conflict (:func:`annotation.judging.errors.same_answer`).
Every write an annotator sends (answer, undo, escalation) is refused while the campaign is
not active or they are paused in it (:func:`refusal`, :func:`refuse_paused`).
A label is taken only for a pair leased to its annotator (or whose lease lapsed less than
:data:`~annotation.judging.pair_state.GRACE_SECONDS` ago while a slot is free). Writers lock a
pair's row before its leases' rows (several pairs in id order), so a submit and the release
of the same expired lease cannot deadlock. Every answer returns the next assignment
(:func:`annotation.judging.queue.assign`).
"""

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from annotation.campaign_read import figures_due
from annotation.campaigns.settings import CampaignSettings
from annotation.gold import tasks as gold_queue
from annotation.judging import pair_state, task_ids
from annotation.judging import statements as sql
from annotation.judging.errors import ID_USED, AssignmentError, same_answer
from annotation.judging.queue import Assignment, assign
from annotation.models import Campaign, GoldJudgement, Judgement, Pair
from annotation.ordering import priorities
from annotation.people import standing
from annotation.policy import label_models

UNDO_SECONDS = 120
"""How long after submitting an annotator may take a judgement back."""


@dataclass(frozen=True)
class SubmitResult:
    judgement: Judgement | GoldJudgement
    created: bool
    assignment: Assignment
    feedback: gold_queue.Feedback | None = None
    """Set after a qualification training answer: whether it was right, and why."""
    warning: str | None = None
    """Set when the answer came too fast and more like it would pause the annotator."""
    campaign: Campaign | None = None
    """The campaign as the answer read it, under the pair's lock (what the answer shows)."""


def require_active(campaign: Campaign) -> None:
    """Paused and closed campaigns take no submit, undo or escalation."""
    refused = refusal(campaign.status, None)
    if refused is not None:
        raise refused


def refusal(campaign_status: str, paused_reason: str | None) -> AssignmentError | None:
    """The error the judging API answers every write with (an answer, an undo, an
    escalation) while the campaign is not active (``inactive``) or the annotator is paused
    in it (``paused``, with the pause's reason), else None: the judging page's standing
    poll asks it without writing, so it shows the state a refused answer shows."""
    if campaign_status != Campaign.Status.ACTIVE:
        return AssignmentError(
            "inactive", f"this campaign is {campaign_status}: it takes no judgements now"
        )
    if paused_reason is not None:
        return AssignmentError(
            "paused",
            f"you are paused in this campaign ({paused_reason}): nothing you submit is taken "
            "until an admin reinstates you",
        )
    return None


def lock_query(target: sql.PairTarget | None) -> list[pair_state.QueryPair] | None:
    """Before a label on a pair changes its query's order, lock the query's pairs in id
    order (and their tally rows), so two labels on one query (and lease releases, which lock
    in id order too) cannot deadlock; the pairs as read under the lock. Nothing to do (None)
    for a static order."""
    if target is not None and CampaignSettings.from_options(target.options).judging.adaptive:
        return pair_state.lock_query(target.campaign, target.caption)
    return None


def submit(
    annotator,
    pair_id: int,
    label: str,
    client_uuid: UUID,
    seconds: float | None = None,
    now: datetime | None = None,
    campaign: Campaign | None = None,
    played: float | None = None,
) -> SubmitResult:
    """Store one label (once per UUID) for a pair leased to the annotator, and return the
    next assignment. With ``campaign`` (the API's URL names one), a pair of another
    campaign is not found.

    A gold task's answer runs as many statements as a label (nothing the annotator
    receives, response time included, may tell the kinds apart): the campaign named is not read again, and the
    gold evidence comes with the answer's own statement (:data:`gold_sql.GOLD_ANSWER`); the
    pace is looked at, as after a label, only when the answer came too fast.

    ``played`` is how many seconds of the video played before the answer (the judging page
    always sends it; a script may leave it out, stored as unknown).

    A retry with the same UUID and the same pair, label and seconds returns the stored
    judgement (``created`` false); the same UUID with anything else is a conflict, whether
    it named a judgement or a gold answer (one rule for every task, so a reused id tells
    nothing about the task it is sent for)."""
    _check_answer(pair_id, label, seconds, played)
    now = now or timezone.now()
    target = sql.pair_target(pair_id, annotator.pk)
    main_id = target.gold_of if target is not None else None
    if campaign is not None and (target is None or campaign.pk not in (target.campaign, main_id)):
        raise AssignmentError("not_found", "pair is not in this campaign")
    if target is not None:  # one check for every answer, a retry's and a gold task's alike
        refuse_paused(main_id if main_id is not None else target.campaign, annotator, target.paused)
    if main_id is not None:  # a gold task: an answer that scores the annotator
        return _submit_gold(
            annotator, pair_id, main_id, label, client_uuid, seconds, now, campaign, played
        )
    return _submit_label(annotator, pair_id, target, label, client_uuid, seconds, now, played)


def _check_answer(pair_id: int, label: str, seconds: float | None, played: float | None) -> None:
    """Refuse an answer no pair can take (an ``invalid`` or ``not_found`` AssignmentError)."""
    if label not in Judgement.Label.values:
        raise AssignmentError("invalid", f"label must be one of {Judgement.Label.values}")
    for name, value in (("seconds", seconds), ("seconds_played", played)):
        if value is not None and not (0 <= value < 24 * 3600):
            raise AssignmentError("invalid", f"{name} must be between 0 and 86400")
    if not 0 < pair_id <= task_ids.MAX_ID:  # no row has it; the driver would overflow
        raise AssignmentError("not_found", "no such pair")


def _submit_gold(
    annotator,
    pair_id: int,
    main_id: int,
    label: str,
    client_uuid: UUID,
    seconds: float | None,
    now: datetime,
    campaign: Campaign | None,
    played: float | None,
) -> SubmitResult:
    """A gold task's answer (to campaign ``main_id``): it scores the annotator, and checks
    their gold accuracy, or their pace when it came too fast."""
    with transaction.atomic():
        pair = sql.locked_pair(pair_id)
        if campaign is None:
            campaign = sql.campaign(main_id)
        if pair is None or campaign is None:  # deleted while on screen
            raise AssignmentError("not_found", "this pair is no longer in the campaign")
        require_active(campaign)
        got = gold_queue.answer(pair, campaign, annotator, label, client_uuid, seconds, now, played)
        warning = None
        if got.created and got.judgement.purpose == GoldJudgement.Purpose.QUEUE:
            if _too_fast(seconds, played, campaign):
                # too fast, as after any label
                warning = standing.check_pace(campaign, annotator, now).warning
            else:
                standing.check_gold(campaign, annotator, got.evidence, now)
        if got.created:  # the annotator scores follow gold answers (no statement)
            figures_due.request_refresh(campaign)
    if got.gone:  # its lease ended above, committed; the answer has nowhere to go
        raise AssignmentError("not_found", "this pair is no longer in the campaign")
    return SubmitResult(
        got.judgement,
        got.created,
        assign(campaign, annotator, now),
        got.feedback,
        warning,
        campaign,
    )


def _submit_label(
    annotator,
    pair_id: int,
    target,
    label: str,
    client_uuid: UUID,
    seconds: float | None,
    now: datetime,
    played: float | None,
) -> SubmitResult:
    """A label on a pair of the campaign, once per UUID: stored under the pair's lock, with
    the pair's counters, its query's priorities and the requests for a refit and for fresh
    figures, in one transaction."""
    warning = None
    with transaction.atomic():
        query = lock_query(target)
        pair = sql.locked_pair(pair_id)
        # Read under the pair's lock, so a retry racing its own first attempt (a client that
        # gave up waiting) finds the stored judgement instead of a conflict.
        earlier, gold_uses = sql.earlier_judgements(client_uuid, pair_id, annotator.pk)
        existing = next((j for j in earlier if str(j.uuid) == str(client_uuid)), None)
        if gold_uses:
            raise AssignmentError("conflict", ID_USED)
        if existing is not None:
            if not same_answer(existing, annotator.pk, label, seconds, played) or (
                existing.pair_id != pair_id
            ):
                raise AssignmentError("conflict", ID_USED)
            if existing.undone_at is not None:
                raise AssignmentError(
                    "undone", "this judgement was taken back; judge again with a new id"
                )
            created = False
            judgement = existing
            campaign = pair.campaign
        else:
            if pair is None:
                raise AssignmentError("not_found", "no such pair")
            campaign = pair.campaign
            require_active(campaign)
            if earlier:
                raise AssignmentError("conflict", "you have already judged this pair")
            judgement, read = pair_state.add_label(
                pair, campaign, annotator.pk, label, client_uuid, seconds, played, now
            )
            # re-ranked from the pairs read under the lock, when the order is adaptive
            locked = None if query is None else (query, pair)
            priorities.reprioritise(campaign, pair.caption_id, read, locked)
            # The adaptive policy's refit runs as a job once this commits, if it is due.
            label_models.request_refit(campaign, judgement.pk, now)
            # So do the campaign's stored figures (agreement, scores), paced by their cost.
            figures_due.request_refresh(campaign)
            created = True
            if _too_fast(seconds, played, campaign):
                # too fast to have watched?
                warning = standing.check_pace(campaign, annotator, now).warning
    return SubmitResult(
        judgement, created, assign(campaign, annotator, now), warning=warning, campaign=campaign
    )


def _too_fast(seconds: float | None, played: float | None, campaign: Campaign) -> bool:
    """Whether an answer came faster than the speed rule's floor: the time on the pair, or
    the seconds its video played where fewer (:data:`statements.RECENT_SECONDS` reads the
    same)."""
    if seconds is None:
        return False
    watched = seconds if played is None else min(seconds, played)
    return watched < campaign.settings.gold.floor_seconds


def refuse_paused(campaign_id: int, annotator, known: bool | None = None) -> None:
    """The one check of every write a judging annotator sends (an answer or its retry, on a
    pair or a gold task; an undo; an escalation or a broken-video report): refused with 409
    ``paused`` while they are paused in the campaign, before anything of it is done. Runs
    before the write's own transaction, in one statement while they are not paused, or none
    where the write's first statement already said (``known``: :func:`sql.pair_target`
    reads it with the pair); when they are, every lease they hold there ends first and stays
    ended (an admin's pause ends them too; this covers one taken as the pause came)."""
    if known is False:
        return
    paused = sql.paused(campaign_id, annotator.pk)
    if paused is None:
        return
    with transaction.atomic():
        pair_state.release_annotator(campaign_id, annotator.pk)
    raise refusal(Campaign.Status.ACTIVE, paused.reason)


def latest_answer(campaign: Campaign, annotator) -> Judgement | GoldJudgement | None:
    """The annotator's latest live answer in the campaign: a judgement, or an answer on a
    gold task in the queue (training answers, given with their feedback, stay)."""
    judgement = (
        Judgement.objects.filter(
            annotator=annotator, pair__campaign=campaign, undone_at__isnull=True
        )
        .select_related("pair")
        .order_by("-created_at", "-pk")
        .first()
    )
    gold = (
        GoldJudgement.objects.filter(
            annotator=annotator,
            gold_pair__campaign=campaign,
            purpose=GoldJudgement.Purpose.QUEUE,
        )
        .select_related("gold_pair")
        .order_by("-created_at", "-pk")
        .first()
    )
    if gold is None or (judgement is not None and judgement.created_at > gold.created_at):
        return judgement
    return gold


def undo(annotator, campaign: Campaign, now: datetime | None = None) -> Assignment:
    """Take back the annotator's latest answer (within :data:`UNDO_SECONDS`) and show its
    task again.

    The same for every task: after an answer on a gold task it is that answer that is
    taken back (it no longer scores the annotator, who may answer the task again), never
    the judgement before it, which would tell the annotator that the task they just
    answered was gold. A careful annotator who slipped on a gold pair corrects it as they
    would any label; nothing is learnt by undoing, since queue answers get no feedback.
    A paused annotator's undo is refused like their answers (:func:`refuse_paused`): a
    label given before the pause stays as it is until an admin discounts it.
    """
    now = now or timezone.now()
    require_active(campaign)
    refuse_paused(campaign.pk, annotator)
    with transaction.atomic():
        judgement = latest_answer(campaign, annotator)
        if judgement is None:
            raise AssignmentError("not_found", "there is nothing to undo")
        if (now - judgement.created_at).total_seconds() > UNDO_SECONDS:
            raise AssignmentError(
                "undo_window", f"judgements can be undone for {UNDO_SECONDS} s only"
            )
        # Give back the annotator's other leases so the undone pair comes first.
        held = pair_state.held_leases(campaign.pk, annotator.pk)
        if isinstance(judgement, GoldJudgement):
            _undo_gold(judgement, annotator, campaign, held, now)
            return assign(campaign, annotator, now)
        query = []
        if campaign.settings.judging.adaptive:
            query = list(
                Pair.objects.filter(
                    campaign=campaign, caption_id=judgement.pair.caption_id
                ).values_list("pk", flat=True)
            )
        pair_state.lock_pairs([*query, judgement.pair_id, *(pair_id for _, pair_id in held)])
        pair_state.lock_tallies(campaign.pk, [judgement.pair.caption_id] if query else [])
        if not Judgement.objects.filter(pk=judgement.pk, undone_at__isnull=True).update(
            undone_at=now
        ):
            raise AssignmentError("conflict", "this judgement was already taken back")
        pair_state.release_leases(held, locked=True)
        pair = judgement.pair
        pair.refresh_from_db()
        read = pair_state.count_label(pair, campaign, judgement.label, -1)
        priorities.reprioritise(campaign, pair.caption_id, read)
        pair.refresh_from_db(fields=["needed", "leased", "open_slots"])
        if pair.open_slots > 0:
            pair_state.take_lease(pair, annotator, campaign, now)
    return assign(campaign, annotator, now)


def _undo_gold(
    answer: GoldJudgement, annotator, campaign: Campaign, held: list[tuple[int, int]], now
) -> None:
    """Take back a queue answer on a gold task and lease the task to the annotator again."""
    task_id = answer.gold_pair.task_id
    pair_state.lock_pairs([pk for pk in (task_id,) if pk is not None] + [p for _, p in held])
    taken = GoldJudgement.objects.filter(pk=answer.pk).update(undone_at=now)
    if not taken:
        raise AssignmentError("conflict", "this judgement was already taken back")
    pair_state.release_leases(held, locked=True)
    task = Pair.objects.filter(pk=task_id).first() if task_id is not None else None
    if task is not None:
        pair_state.take_lease(task, annotator, campaign, now)
