"""Hand pairs to annotators and take their labels, staying correct under many annotators.

Each annotator holds at most :data:`HOLD` leases in a campaign: the pair on screen and the
next one, whose video the browser preloads. A pair is never leased to more annotators at
once than its policy still needs (``Pair.open_slots``), never to someone who judged it,
and leases expire so abandoned work returns to the queue. On PostgreSQL the next-task
query locks its row and skips rows other transactions hold (``FOR UPDATE SKIP LOCKED``);
on SQLite every write transaction is ``IMMEDIATE`` (see settings), so they run one at a
time. Submits are idempotent: the client's UUID makes a retry return the stored judgement.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

import numpy as np
from django.db import connection, transaction
from django.db.models import Case, Count, F, OuterRef, Subquery, Sum, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation import policy
from annotation.models import Campaign, Escalation, Judgement, Lease, Pair

HOLD = 2
"""Leases an annotator holds at once: the current pair and the preloaded next one."""
UNDO_SECONDS = 120
"""How long after submitting an annotator may take a judgement back."""


class AssignmentError(Exception):
    """A request the queue cannot honour; ``code`` tells clients what happened."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Task:
    """A leased pair, as the judging page shows it."""

    pair: Pair
    expires_at: datetime


@dataclass(frozen=True)
class Assignment:
    """What an annotator works on now, and what comes next (to preload)."""

    current: Task | None
    upcoming: Task | None


def skip_locked() -> bool:
    return connection.features.has_select_for_update_skip_locked


def refresh_slots(pair_ids: list[int]) -> None:
    """Recount live leases of ``pair_ids`` and recompute how many more may be leased."""
    if not pair_ids:
        return
    live = (
        Lease.objects.filter(pair=OuterRef("pk"))
        .order_by()
        .values("pair")
        .annotate(n=Count("pk"))
        .values("n")
    )
    pairs = Pair.objects.filter(pk__in=pair_ids)
    pairs.update(leased=Coalesce(Subquery(live), Value(0)))
    pairs.update(open_slots=Case(When(held=True, then=Value(0)), default=F("needed") - F("leased")))


def release_expired(campaign: Campaign, now: datetime) -> int:
    """Delete expired leases of the campaign and free their slots."""
    expired = list(
        Lease.objects.filter(pair__campaign=campaign, expires_at__lte=now).values_list(
            "pk", "pair_id"
        )
    )
    if expired:
        Lease.objects.filter(pk__in=[pk for pk, _ in expired]).delete()
        refresh_slots([pair_id for _, pair_id in expired])
    return len(expired)


def _candidate(campaign: Campaign, annotator, exclude: list[int], caption_id: int | None):
    """The first open pair in queue order the annotator may take (same caption first)."""
    judged = Judgement.objects.filter(
        annotator=annotator, pair__campaign=campaign, undone_at__isnull=True
    ).values("pair_id")
    queue = (
        Pair.objects.filter(campaign=campaign, open_slots__gt=0)
        .exclude(pk__in=judged)
        .exclude(pk__in=exclude)
        .order_by("position")
    )
    if skip_locked():
        queue = queue.select_for_update(skip_locked=True, of=("self",))
    if caption_id is not None:
        pair = queue.filter(caption_id=caption_id).first()
        if pair is not None:
            return pair
    return queue.first()


def _lease(pair: Pair, annotator, campaign: Campaign, now: datetime) -> Lease:
    lease = Lease.objects.create(
        pair=pair, annotator=annotator, expires_at=now + timedelta(seconds=campaign.lease_seconds)
    )
    Pair.objects.filter(pk=pair.pk).update(leased=F("leased") + 1, open_slots=F("open_slots") - 1)
    return lease


def _task(lease: Lease) -> Task:
    return Task(pair=lease.pair, expires_at=lease.expires_at)


def assign(campaign: Campaign, annotator, now: datetime | None = None) -> Assignment:
    """Top up the annotator's leases to :data:`HOLD` and return the current and next pair."""
    now = now or timezone.now()
    with transaction.atomic():
        release_expired(campaign, now)
        leases = list(
            Lease.objects.filter(pair__campaign=campaign, annotator=annotator)
            .select_related("pair", "pair__caption", "pair__video")
            .order_by("created_at", "pk")
        )
        if campaign.status == Campaign.Status.ACTIVE:
            last = (
                Judgement.objects.filter(annotator=annotator, pair__campaign=campaign)
                .order_by("-created_at")
                .values_list("pair__caption_id", flat=True)
                .first()
            )
            while len(leases) < HOLD:
                caption_id = leases[-1].pair.caption_id if leases else last
                pair = _candidate(
                    campaign, annotator, [lease.pair_id for lease in leases], caption_id
                )
                if pair is None:
                    break
                lease = _lease(pair, annotator, campaign, now)
                lease.pair = Pair.objects.select_related("caption", "video").get(pk=pair.pk)
                leases.append(lease)
    tasks = [_task(lease) for lease in leases]
    return Assignment(
        current=tasks[0] if tasks else None, upcoming=tasks[1] if len(tasks) > 1 else None
    )


def _apply_counts(pair: Pair, campaign: Campaign) -> None:
    """Recompute ``needed``, ``status`` and ``open_slots`` from the pair's label counts."""
    relevant = np.array([pair.relevant_count])
    total = np.array([pair.label_count])
    pair.needed = int(policy.labels_needed(relevant, total, pair.double, campaign.max_labels)[0])
    adjudicated = np.array([{"relevant": 1, "irrelevant": 0}.get(pair.adjudicated, -1)])
    code = int(policy.resolve(relevant, total, pair.double, campaign.max_labels, adjudicated)[0])
    pair.status = policy.Status(code).label
    if pair.adjudicated:
        pair.needed = 0
    pair.open_slots = 0 if pair.held else pair.needed - pair.leased


@dataclass(frozen=True)
class SubmitResult:
    judgement: Judgement
    created: bool
    assignment: Assignment


def submit(
    annotator,
    pair_id: int,
    label: str,
    client_uuid: UUID,
    seconds: float | None = None,
    now: datetime | None = None,
) -> SubmitResult:
    """Store one label (once per UUID), free its lease, and return the next assignment."""
    if label not in Judgement.Label.values:
        raise AssignmentError("invalid", f"label must be one of {Judgement.Label.values}")
    if seconds is not None and not (0 <= seconds < 24 * 3600):
        raise AssignmentError("invalid", "seconds must be between 0 and 86400")
    now = now or timezone.now()
    with transaction.atomic():
        existing = (
            Judgement.objects.filter(uuid=client_uuid).select_related("pair__campaign").first()
        )
        if existing is not None:
            if existing.annotator_id != annotator.pk or existing.pair_id != pair_id:
                raise AssignmentError("conflict", "this judgement id was already used")
            created = False
            judgement = existing
            campaign = existing.pair.campaign
        else:
            pairs = Pair.objects.select_related("campaign")
            if connection.features.has_select_for_update:
                pairs = pairs.select_for_update(of=("self",))
            pair = pairs.filter(pk=pair_id).first()
            if pair is None:
                raise AssignmentError("not_found", "no such pair")
            campaign = pair.campaign
            if Judgement.objects.filter(
                pair=pair, annotator=annotator, undone_at__isnull=True
            ).exists():
                raise AssignmentError("conflict", "you have already judged this pair")
            lease = Lease.objects.filter(pair=pair, annotator=annotator).first()
            if lease is not None:
                lease.delete()
                pair.leased -= 1
            elif pair.open_slots <= 0 or campaign.status == Campaign.Status.CLOSED:
                raise AssignmentError(
                    "lease_expired",
                    "your time on this pair ran out and it no longer needs a label",
                )
            judgement = Judgement.objects.create(
                uuid=client_uuid, pair=pair, annotator=annotator, label=label, seconds=seconds
            )
            pair.label_count += 1
            pair.relevant_count += label == Judgement.Label.RELEVANT
            _apply_counts(pair, campaign)
            pair.save(
                update_fields=[
                    "label_count",
                    "relevant_count",
                    "needed",
                    "leased",
                    "open_slots",
                    "status",
                ]
            )
            created = True
    return SubmitResult(judgement, created, assign(campaign, annotator, now))


def undo(annotator, campaign: Campaign, now: datetime | None = None) -> Assignment:
    """Take back the annotator's latest judgement (within :data:`UNDO_SECONDS`) and show it again."""
    now = now or timezone.now()
    with transaction.atomic():
        judgement = (
            Judgement.objects.filter(
                annotator=annotator, pair__campaign=campaign, undone_at__isnull=True
            )
            .select_related("pair")
            .order_by("-created_at", "-pk")
            .first()
        )
        if judgement is None:
            raise AssignmentError("not_found", "there is nothing to undo")
        if (now - judgement.created_at).total_seconds() > UNDO_SECONDS:
            raise AssignmentError(
                "undo_window", f"judgements can be undone for {UNDO_SECONDS} s only"
            )
        judgement.undone_at = now
        judgement.save(update_fields=["undone_at"])
        pair = judgement.pair
        # Give back the annotator's other leases so the undone pair comes first.
        others = list(
            Lease.objects.filter(annotator=annotator, pair__campaign=campaign).values_list(
                "pair_id", flat=True
            )
        )
        Lease.objects.filter(annotator=annotator, pair__campaign=campaign).delete()
        refresh_slots(others)
        pair.refresh_from_db()
        pair.label_count -= 1
        pair.relevant_count -= judgement.label == Judgement.Label.RELEVANT
        _apply_counts(pair, campaign)
        pair.save(update_fields=["label_count", "relevant_count", "needed", "open_slots", "status"])
        if pair.open_slots > 0 and not pair.held:
            _lease(pair, annotator, campaign, now)
    return assign(campaign, annotator, now)


def escalate(
    annotator, pair_id: int, reason: str, client_uuid: UUID, now: datetime | None = None
) -> Assignment:
    """Send a pair to the admins (not a label); it is held from annotators meanwhile."""
    reason = (reason or "").strip()
    if not reason:
        raise AssignmentError("invalid", "say why the pair cannot be judged")
    now = now or timezone.now()
    with transaction.atomic():
        existing = (
            Escalation.objects.filter(uuid=client_uuid).select_related("pair__campaign").first()
        )
        if existing is not None:
            campaign = existing.pair.campaign
        else:
            pair = Pair.objects.select_related("campaign").filter(pk=pair_id).first()
            if pair is None:
                raise AssignmentError("not_found", "no such pair")
            campaign = pair.campaign
            Escalation.objects.create(
                uuid=client_uuid, pair=pair, annotator=annotator, reason=reason[:2000]
            )
            Lease.objects.filter(pair=pair, annotator=annotator).delete()
            Pair.objects.filter(pk=pair.pk).update(held=True)
            refresh_slots([pair.pk])
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
        Pair.objects.filter(pk=pair.pk).update(held=False)
        refresh_slots([pair.pk])


def adjudicate(pair: Pair, admin, label: str) -> None:
    """Store an admin's final label for the pair; it wins over the annotators' labels."""
    if label not in Judgement.Label.values:
        raise AssignmentError("invalid", f"label must be one of {Judgement.Label.values}")
    with transaction.atomic():
        pair.adjudicated = label
        pair.adjudicated_by = admin
        pair.adjudicated_at = timezone.now()
        _apply_counts(pair, pair.campaign)
        pair.save(
            update_fields=[
                "adjudicated",
                "adjudicated_by",
                "adjudicated_at",
                "needed",
                "open_slots",
                "status",
            ]
        )


def has_work_for(campaign: Campaign, annotator) -> bool:
    """Whether any pair may still come to the annotator (now or once leases expire)."""
    if campaign.status != Campaign.Status.ACTIVE:
        return False
    judged = Judgement.objects.filter(
        annotator=annotator, pair__campaign=campaign, undone_at__isnull=True
    ).values("pair_id")
    return (
        Pair.objects.filter(campaign=campaign, needed__gt=0, held=False)
        .exclude(pk__in=judged)
        .exists()
    )


@dataclass(frozen=True)
class Progress:
    judged_today: int
    judged_total: int
    labels_left: int
    pairs: int


def progress(campaign: Campaign, annotator, now: datetime | None = None) -> Progress:
    """What the annotator did today and how much the campaign still needs."""
    now = now or timezone.now()
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    mine = Judgement.objects.filter(
        annotator=annotator, pair__campaign=campaign, undone_at__isnull=True
    )
    pairs = Pair.objects.filter(campaign=campaign, held=False)
    totals = pairs.aggregate(left=Coalesce(Sum("needed"), Value(0)), n=Count("pk"))
    return Progress(
        judged_today=mine.filter(created_at__gte=start).count(),
        judged_total=mine.count(),
        labels_left=int(totals["left"]),
        pairs=int(totals["n"]),
    )
