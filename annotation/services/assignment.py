"""Hand pairs to annotators and take their labels, staying correct under many annotators.

Each annotator holds at most :data:`HOLD` leases in a campaign: the pair on screen and the
next one, whose video the browser preloads. A pair is never leased to more annotators at
once than its policy still needs (``Pair.open_slots``), never to someone who judged it,
and leases expire so abandoned work returns to the queue. On PostgreSQL the next-task
query locks its row and skips rows other transactions hold (``FOR UPDATE SKIP LOCKED``);
on SQLite every write transaction is ``IMMEDIATE`` (see settings), so they run one at a
time. Submits are idempotent: the client's UUID makes a retry return the stored judgement.
Writers lock a pair's row before its leases' rows (several pairs in id order), so a submit
and the release of the same expired lease cannot deadlock. Progress reads running totals
that the database's triggers keep (:class:`~annotation.models.CampaignTally`), not the pairs.
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from uuid import UUID

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from annotation.models import (
    Campaign,
    Escalation,
    GoldJudgement,
    Judgement,
    LapsedLease,
    Lease,
    Pair,
)
from annotation.services import gold_queue, judging_queue, pair_state, sql, standing, task_ids
from config.errors import UserError

HOLD = 2
"""Leases an annotator holds at once: the current pair and the preloaded next one."""
UNDO_SECONDS = 120
"""How long after submitting an annotator may take a judgement back."""
GRACE_SECONDS = 120
"""How long after a lease ran out its annotator may still submit (while a slot is free)."""
MAX_OPEN_ESCALATIONS = 5
"""Escalations an annotator may have waiting for an admin in one campaign."""


class AssignmentError(UserError):
    """A request the queue cannot honour; ``code`` tells clients what happened.

    The status fits the code: 404 for a pair or campaign not found, 400 for invalid
    input, 409 for every conflict with the queue's state (an expired lease, an undo
    window passed, too many escalations, ...).
    """

    STATUS = {"not_found": 404, "invalid": 400}

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code, status=self.STATUS.get(code, 409))
        self.message = message


@dataclass(frozen=True)
class Task:
    """A leased pair, as the judging page shows it; ``token`` is the opaque id it is served
    under (:mod:`annotation.services.task_ids`), never the pair's own id."""

    pair: Pair
    expires_at: datetime
    token: str


@dataclass(frozen=True)
class Assignment:
    """What an annotator works on now, and what comes next (to preload); ``paused`` says
    why nothing is served to a paused annotator."""

    current: Task | None
    upcoming: Task | None
    paused: str | None = None
    qualification: gold_queue.Qualification | None = None
    """The annotator's qualification state when this assignment found it settled (read
    once per request); None when the caller must read it."""


def release_expired(campaign: Campaign, now: datetime) -> int:
    """Delete expired leases of the campaign, free their slots and remember them as lapsed."""
    with transaction.atomic():
        expired = list(Lease.objects.filter(pair__campaign=campaign, expires_at__lte=now))
        _release_lapsed(expired, now)
    return len(expired)


def _release_lapsed(expired: list[Lease], now: datetime) -> None:
    """Release leases that ran out; their annotators may still submit for a grace period."""
    if not expired:
        return
    pair_state.release_leases([(lease.pk, lease.pair_id) for lease in expired])
    LapsedLease.objects.filter(expired_at__lte=now - timedelta(seconds=GRACE_SECONDS)).delete()
    LapsedLease.objects.bulk_create(
        [
            LapsedLease(
                pair_id=lease.pair_id, annotator_id=lease.annotator_id, expired_at=lease.expires_at
            )
            for lease in expired
        ]
    )


def _judged_by(annotator) -> Exists:
    """Whether the outer pair has a live judgement by ``annotator``.

    Checked per pair through the (pair, annotator) index rather than as ``NOT IN`` the
    annotator's judged pairs, whose cost grows with everything they have judged.
    """
    return Exists(
        Judgement.objects.filter(pair=OuterRef("pk"), annotator=annotator, undone_at__isnull=True)
    )


def _held_and_expired(campaign: Campaign, annotator, now: datetime) -> list[Lease]:
    """The annotator's leases in the campaign and everyone's expired ones, oldest first,
    with pair, caption and video loaded (one raw query, :data:`sql.HELD_AND_EXPIRED`)."""
    leases = []
    for row in sql.held_and_expired(campaign.pk, annotator.pk, now):
        lease, *pair = sql.instances(sql.LEASE_ROW, row)
        lease.pair = sql.joined_pair(*pair)
        leases.append(lease)
    return leases


def _candidate(campaign: Campaign, annotator, exclude: list[int], caption_id: int | None):
    """The first open pair in queue order the annotator may take (``caption_id``'s first,
    when the judging order lets a caption's pairs come together).

    On PostgreSQL the row is locked, skipping rows other transactions hold.
    """
    for same_caption in ([caption_id] if caption_id is not None else []) + [None]:
        row = sql.next_pair(campaign.pk, annotator.pk, exclude, same_caption)
        if row is not None:
            return sql.joined_pair(*sql.instances(sql.PAIR_ROW, row))
    return None


def _last_caption(campaign: Campaign, annotator) -> int | None:
    """The caption the annotator judged last here: its other pairs come next."""
    return (
        Judgement.objects.filter(annotator=annotator, pair__campaign=campaign)
        .order_by("-created_at")
        .values_list("pair__caption_id", flat=True)
        .first()
    )


def _task(lease: Lease) -> Task:
    return Task(
        pair=lease.pair,
        expires_at=lease.expires_at,
        token=task_ids.encode(lease.annotator_id, lease.pair.pk),
    )


def assign(campaign: Campaign, annotator, now: datetime | None = None) -> Assignment:
    """Top up the annotator's leases to :data:`HOLD` and return the current and next pair."""
    now = now or timezone.now()
    with transaction.atomic():
        found = _held_and_expired(campaign, annotator, now)
        paused = standing.paused(campaign, annotator)
        if paused is not None:
            # A paused annotator keeps no pair from the others: every lease they hold ends
            # now (with the expired ones, one release, pairs locked in id order).
            mine = [lease for lease in found if lease.annotator_id == annotator.pk]
            _release_lapsed(
                [lease for lease in found if lease.expires_at <= now]
                + [lease for lease in mine if lease.expires_at > now],
                now,
            )
            leases = []
        else:
            _release_lapsed([lease for lease in found if lease.expires_at <= now], now)
            leases = [lease for lease in found if lease.expires_at > now]
        settings = campaign.settings.judging
        stopped = paused is not None or (
            settings.budget is not None and judging_queue.budget_spent(campaign)
        )
        qualified = None
        if campaign.status == Campaign.Status.ACTIVE and len(leases) < HOLD and not stopped:
            gold = campaign.settings.gold
            if gold.qualification:
                state = gold_queue.qualification(campaign, annotator, now)
                # Admitted stays admitted; a training pick may start an attempt, so an
                # annotator still qualifying has their state read again afterwards.
                qualified = state if state.admitted else None
            training = gold.qualification and qualified is None
            while len(leases) < HOLD:
                if gold.active:
                    pair = gold_queue.pick(
                        campaign, annotator, [lease.pair_id for lease in leases], now, training
                    )
                    if pair is not None:
                        lease = pair_state.take_lease(pair, annotator, campaign, now)
                        lease.pair = pair
                        leases.append(lease)
                        continue
                    if training:  # before admission only training pairs are served
                        break
                caption_id = None
                if settings.order.keeps_captions:
                    caption_id = (
                        leases[-1].pair.caption_id if leases else _last_caption(campaign, annotator)
                    )
                pair = _candidate(
                    campaign, annotator, [lease.pair_id for lease in leases], caption_id
                )
                if pair is None:
                    break
                lease = pair_state.take_lease(pair, annotator, campaign, now)
                lease.pair = pair
                leases.append(lease)
    if campaign.status != Campaign.Status.ACTIVE or stopped:
        # Paused or closed: nothing is served; leases held stay until they run out, so work
        # on screen can resume if the campaign does. A spent budget stops judging the same
        # way (a label already on screen may still be submitted).
        return Assignment(current=None, upcoming=None, paused=getattr(paused, "reason", None))
    tasks = [_task(lease) for lease in leases]
    return Assignment(
        current=tasks[0] if tasks else None,
        upcoming=tasks[1] if len(tasks) > 1 else None,
        qualification=qualified,
    )


ID_USED = "this id was already used for another answer; send a new id with a new answer"


def same_answer(stored, annotator_id: int, label: str, seconds: float | None) -> bool:
    """Whether a stored answer (a judgement or a gold answer) is the one a retry resends:
    the same annotator, label and seconds (its pair the caller compares)."""
    return (
        stored.annotator_id == annotator_id
        and stored.label == label
        and (stored.seconds is None) == (seconds is None)
        and (seconds is None or float(stored.seconds) == float(seconds))
    )


@dataclass(frozen=True)
class SubmitResult:
    judgement: Judgement | GoldJudgement
    created: bool
    assignment: Assignment
    feedback: gold_queue.Feedback | None = None
    """Set after a qualification training answer: whether it was right, and why."""


def require_active(campaign: Campaign) -> None:
    """Paused and closed campaigns take no submit, undo or escalation."""
    if campaign.status != Campaign.Status.ACTIVE:
        raise AssignmentError(
            "inactive", f"this campaign is {campaign.status}: it takes no judgements now"
        )


def _locked_pair(pair_id: int) -> Pair | None:
    """The pair with its campaign, row-locked on PostgreSQL (the pair before its leases)."""
    return sql.locked_pair(pair_id)


def _take_back_lease(pair: Pair, annotator, now: datetime) -> None:
    """End the annotator's lease on the pair before their label is stored.

    A live lease is given back. Without one, the label is taken only if the annotator's
    lease lapsed less than :data:`GRACE_SECONDS` ago and the pair still has a free slot;
    a pair never leased to the annotator is refused, so nobody picks pairs by hand.
    """
    if pair_state.give_back_lease(pair, annotator.pk):
        return
    lapsed = LapsedLease.objects.filter(
        pair=pair, annotator=annotator, expired_at__gt=now - timedelta(seconds=GRACE_SECONDS)
    ).exists()
    if not lapsed:
        raise AssignmentError("not_leased", "this pair is not leased to you")
    if pair.open_slots <= 0:
        raise AssignmentError(
            "lease_expired", "your time on this pair ran out and it no longer needs a label"
        )


def submit(
    annotator,
    pair_id: int,
    label: str,
    client_uuid: UUID,
    seconds: float | None = None,
    now: datetime | None = None,
    campaign: Campaign | None = None,
) -> SubmitResult:
    """Store one label (once per UUID) for a pair leased to the annotator, and return the
    next assignment. With ``campaign`` (the API's URL names one), a pair of another
    campaign is not found.

    A gold task's answer runs as many statements as a label (nothing the annotator
    receives, response time included, may tell the kinds apart): the campaign named is not read again, and the
    gold evidence comes with the answer's own statement (:data:`sql.GOLD_ANSWER`); the
    pace is looked at, as after a label, only when the answer came too fast.

    A retry with the same UUID and the same pair, label and seconds returns the stored
    judgement (``created`` false); the same UUID with anything else is a conflict, whether
    it named a judgement or a gold answer (one rule for every task, so a reused id tells
    nothing about the task it is sent for)."""
    if label not in Judgement.Label.values:
        raise AssignmentError("invalid", f"label must be one of {Judgement.Label.values}")
    if seconds is not None and not (0 <= seconds < 24 * 3600):
        raise AssignmentError("invalid", "seconds must be between 0 and 86400")
    if not 0 < pair_id <= task_ids.MAX_PAIR_ID:  # no row has it; the driver would overflow
        raise AssignmentError("not_found", "no such pair")
    now = now or timezone.now()
    target = judging_queue.target_of(pair_id)
    main_id = target.gold_of if target is not None else None
    if campaign is not None and (target is None or campaign.pk not in (target.campaign, main_id)):
        raise AssignmentError("not_found", "pair is not in this campaign")
    if main_id is not None:  # a gold task: an answer that scores the annotator
        with transaction.atomic():
            pair = _locked_pair(pair_id)
            if campaign is None:
                campaign = sql.campaign(main_id)
            if pair is None or campaign is None:  # deleted while on screen
                raise AssignmentError("not_found", "this pair is no longer in the campaign")
            require_active(campaign)
            got = gold_queue.answer(pair, campaign, annotator, label, client_uuid, seconds, now)
            if got.created and got.judgement.purpose == GoldJudgement.Purpose.QUEUE:
                if seconds is not None and seconds < campaign.settings.gold.floor_seconds:
                    standing.check(campaign, annotator, now)  # too fast, as after any label
                else:
                    standing.check_gold(campaign, annotator, got.evidence, now)
        if got.gone:  # its lease ended above, committed; the answer has nowhere to go
            raise AssignmentError("not_found", "this pair is no longer in the campaign")
        return SubmitResult(
            got.judgement, got.created, assign(campaign, annotator, now), got.feedback
        )
    with transaction.atomic():
        judging_queue.lock_query_of(pair_id, target)
        pair = _locked_pair(pair_id)
        # Read under the pair's lock, so a retry racing its own first attempt (a client that
        # gave up waiting) finds the stored judgement instead of a conflict.
        earlier, gold_uses = sql.earlier_judgements(client_uuid, pair_id, annotator.pk)
        existing = next((j for j in earlier if str(j.uuid) == str(client_uuid)), None)
        if gold_uses:
            raise AssignmentError("conflict", ID_USED)
        if existing is not None:
            if not same_answer(existing, annotator.pk, label, seconds) or (
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
            _take_back_lease(pair, annotator, now)
            judgement = sql.insert_judgement(
                client_uuid, pair.pk, annotator.pk, label, seconds, now
            )
            pair_state.count_label(pair, campaign, label, +1)
            judging_queue.reprioritise(campaign, pair.caption_id)
            created = True
            if seconds is not None and seconds < campaign.settings.gold.floor_seconds:
                standing.check(campaign, annotator, now)  # too fast to have watched?
    return SubmitResult(judgement, created, assign(campaign, annotator, now))


def _latest_answer(campaign: Campaign, annotator) -> Judgement | GoldJudgement | None:
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


def _held_in(campaign: Campaign, annotator) -> list[tuple[int, int]]:
    """(lease id, pair id) of every lease the annotator holds in the campaign, its gold
    tasks' included."""
    return list(
        Lease.objects.filter(
            Q(pair__campaign=campaign) | Q(pair__gold_task__campaign=campaign),
            annotator=annotator,
        ).values_list("pk", "pair_id")
    )


def undo(annotator, campaign: Campaign, now: datetime | None = None) -> Assignment:
    """Take back the annotator's latest answer (within :data:`UNDO_SECONDS`) and show its
    task again.

    The same for every task: after an answer on a gold task it is that answer that is
    taken back (it no longer scores the annotator, who may answer the task again), never
    the judgement before it, which would tell the annotator that the task they just
    answered was gold. A careful annotator who slipped on a gold pair corrects it as they
    would any label; nothing is learnt by undoing, since queue answers get no feedback.
    """
    now = now or timezone.now()
    require_active(campaign)
    with transaction.atomic():
        judgement = _latest_answer(campaign, annotator)
        if judgement is None:
            raise AssignmentError("not_found", "there is nothing to undo")
        if (now - judgement.created_at).total_seconds() > UNDO_SECONDS:
            raise AssignmentError(
                "undo_window", f"judgements can be undone for {UNDO_SECONDS} s only"
            )
        # Give back the annotator's other leases so the undone pair comes first.
        held = _held_in(campaign, annotator)
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
        pair_state.lock_tallies(campaign.pk, query)
        if not Judgement.objects.filter(pk=judgement.pk, undone_at__isnull=True).update(
            undone_at=now
        ):
            raise AssignmentError("conflict", "this judgement was already taken back")
        judgement.undone_at = now
        pair_state.release_leases(held, locked=True)
        pair = judgement.pair
        pair.refresh_from_db()
        pair_state.count_label(pair, campaign, judgement.label, -1)
        judging_queue.reprioritise(campaign, pair.caption_id)
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


def _may_escalate(pair: Pair, campaign: Campaign, annotator, now: datetime) -> bool:
    """Whether the annotator holds a lease on the pair or answered it last, moments ago
    (their latest answer of any kind: a gold task is no exception)."""
    if Lease.objects.filter(pair=pair, annotator=annotator).exists():
        return True
    latest = _latest_answer(campaign, annotator)
    if latest is None or (now - latest.created_at).total_seconds() > UNDO_SECONDS:
        return False
    if isinstance(latest, GoldJudgement):
        return latest.gold_pair.task_id == pair.pk
    return latest.pair_id == pair.pk


def escalate(
    annotator, pair_id: int, reason: str, client_uuid: UUID, now: datetime | None = None
) -> Assignment:
    """Send the pair on screen to the admins (not a label); it is held from annotators meanwhile.

    Only a pair leased to the annotator, or the one they just judged, may be escalated, and
    at most :data:`MAX_OPEN_ESCALATIONS` of theirs may wait per campaign: otherwise one
    script could hold back a whole campaign. A gold task follows the same rules and is
    recorded the same way (so a retried or reused id is answered alike), but it is given
    back rather than held, and its escalation is closed at once: nothing waits on it.
    A retry with the same id, pair and reason counts once; the same id with another body
    is a conflict.
    """
    reason = (reason or "").strip()[:2000]
    if not reason:
        raise AssignmentError("invalid", "say why the pair cannot be judged")
    if not 0 < pair_id <= task_ids.MAX_PAIR_ID:  # no row has it; the driver would overflow
        raise AssignmentError("not_found", "no such pair")
    now = now or timezone.now()
    with transaction.atomic():
        existing = (
            Escalation.objects.filter(uuid=client_uuid)
            .select_related("pair__campaign")
            .defer("pair__campaign__provenance")
            .first()
        )
        if existing is not None:
            if (
                existing.annotator_id != annotator.pk
                or existing.pair_id != pair_id
                or existing.reason != reason
            ):
                raise AssignmentError("conflict", "this escalation id was already used")
            campaign = existing.pair.campaign
            main_id = gold_queue.gold_of(campaign)
            if main_id is not None:
                campaign = Campaign.objects.get(pk=main_id)
            return assign(campaign, annotator, now)
        pair = _locked_pair(pair_id)
        if pair is None:
            raise AssignmentError("not_found", "no such pair")
        main_id = gold_queue.gold_of(pair.campaign)
        campaign = pair.campaign if main_id is None else Campaign.objects.get(pk=main_id)
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
        if main_id is not None:  # a gold task: given back; it may come again later
            gold_queue.release(pair, annotator)
            Escalation.objects.create(
                uuid=client_uuid,
                pair=pair,
                annotator=annotator,
                reason=reason,
                resolved_at=now,
                resolution="gold task: given back to the queue",
            )
        else:
            Escalation.objects.create(
                uuid=client_uuid, pair=pair, annotator=annotator, reason=reason
            )
            pair_state.hold(pair.pk)
    return assign(campaign, annotator, now)


def resolve_escalation(
    escalation: Escalation, admin, *, label: str | None = None, note: str = ""
) -> None:
    """Close an escalation: adjudicate the pair with ``label``, or return it to the queue."""
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
        judging_queue.lock_query_of(pair.pk)
        pair_state.adjudicate(pair, admin, label)
        judging_queue.reprioritise(pair.campaign, pair.caption_id)


def has_work_for(campaign: Campaign, annotator) -> bool:
    """Whether any pair may still come to the annotator (now, once leases expire, or once a
    paused campaign resumes); a closed campaign has nothing more to give.

    The pairs are those the next-pair query would serve once every lease has ended
    (:func:`pair_state.servable`), less those the annotator judged."""
    if campaign.status == Campaign.Status.CLOSED or judging_queue.budget_spent(campaign):
        return False
    if standing.paused(campaign, annotator) is not None:
        return False
    if campaign.settings.gold.qualification:
        trained = gold_queue.qualification(campaign, annotator)
        if not trained.admitted:
            return not trained.out_of_tries
    return (
        Pair.objects.filter(pair_state.servable(once_leases_end=True), campaign=campaign)
        .filter(~_judged_by(annotator))
        .exists()
    )


@dataclass(frozen=True)
class Progress:
    judged_today: int
    judged_total: int
    labels_left: int
    pairs: int


def _utc_day(now: datetime) -> date:
    return now.astimezone(UTC).date()


def campaign_totals(campaign: Campaign) -> tuple[int, int]:
    """(pairs not held, labels they still need): exact, from the triggers' running totals."""
    tally = sql.tallies(campaign.pk, None, _utc_day(timezone.now()))
    return tally.pairs, tally.labels_left


def judged_counts(campaign: Campaign, annotator, now: datetime) -> tuple[int, int]:
    """(live judgements of the annotator here today (UTC), in all), from the tallies."""
    tally = sql.tallies(campaign.pk, annotator.pk, _utc_day(now))
    return tally.judged_today, tally.judged_total


def progress(campaign: Campaign, annotator, now: datetime | None = None) -> Progress:
    """What the annotator did today (UTC) and how much the campaign still needs.

    Gold answers in the queue count as judgements here, so a gold pair changes nothing the
    annotator can see: each also counts as a label done in the annotator's ``labels_left``
    (the campaign's labels still needed less their live gold answers, at least 0), which
    would otherwise stay put after a gold answer and fall after any other. One query
    (:func:`annotation.services.sql.tallies_statement`) reads the running totals the
    database's triggers keep (on PostgreSQL and SQLite alike), gold answers included:
    a few index lookups however large the campaign, where counting would read every pair
    (~90 ms at 600,000 pairs) and every judgement of the annotator.
    """
    now = now or timezone.now()
    gold = campaign.settings.gold.rate > 0
    tally = sql.tallies(campaign.pk, annotator.pk, _utc_day(now), gold)
    gold_total = tally.gold_total if gold else 0
    return Progress(
        judged_today=tally.judged_today + (tally.gold_today if gold else 0),
        judged_total=tally.judged_total + gold_total,
        labels_left=max(tally.labels_left - gold_total, 0),
        pairs=tally.pairs,
    )
