"""Hand pairs to annotators, staying correct under many annotators.

Each annotator holds at most :data:`HOLD` leases in a campaign: the pair on screen and the
next one, whose video the browser preloads. A pair is never leased to more annotators at
once than its policy still needs (``Pair.open_slots``), never to someone who judged it,
and leases expire so abandoned work returns to the queue. On PostgreSQL the next-task
query locks its row and skips rows other transactions hold (``FOR UPDATE SKIP LOCKED``);
on SQLite every write transaction is ``IMMEDIATE`` (see settings), so they run one at a
time. The order pairs come in is :mod:`annotation.ordering.priorities`'s; answers are
:mod:`annotation.judging.submit`'s. Progress reads running totals that the database's
triggers keep (:class:`~annotation.models.CampaignTally`), not the pairs.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from annotation.gold import tasks as gold_queue
from annotation.judging import pair_state, statements, task_ids
from annotation.judging.pair_state import GRACE_SECONDS
from annotation.models import Campaign, GoldJudgement, GoldPair, Judgement, LapsedLease, Lease, Pair
from annotation.ordering import priorities
from annotation.people import standing
from config.batches import ID_BATCH
from retrieval.models import BROWSER_READY_STATES

HOLD = 2
"""Leases an annotator holds at once: the current pair and the preloaded next one."""


@dataclass(frozen=True)
class Task:
    """A leased pair, as the judging page shows it; ``token`` is the opaque id it is served
    under (:mod:`annotation.judging.task_ids`), never the pair's own id."""

    pair: Pair
    expires_at: datetime
    token: str
    roles: list = field(default_factory=list)
    """The caption's semantic-role spans the page underlines (none where the campaign shows
    none; set by :mod:`annotation.judging.answer`)."""
    segment: str = ""
    """Where a segment sits in its recording ("" for a whole video; set by
    :mod:`annotation.judging.answer`)."""


@dataclass(frozen=True)
class Assignment:
    """What an annotator works on now, and what comes next (to preload); ``paused`` says
    why nothing is served to a paused annotator."""

    current: Task | None
    upcoming: Task | None
    paused: str | None = None
    paused_since: datetime | None = None
    """When the annotator was paused (with ``paused``)."""
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
        ],
        batch_size=ID_BATCH,
    )


def _judged_by(annotator, pair: str = "pk") -> Exists:
    """Whether the outer pair (its field ``pair``) has a live judgement by ``annotator``.

    Checked per pair through the (pair, annotator) index rather than as ``NOT IN`` the
    annotator's judged pairs, whose cost grows with everything they have judged.
    """
    return Exists(
        Judgement.objects.filter(pair=OuterRef(pair), annotator=annotator, undone_at__isnull=True)
    )


def _candidate(campaign: Campaign, annotator, leases: list[Lease], keeps_captions: bool):
    """The first open pair in queue order the annotator may take besides their ``leases``;
    with ``keeps_captions`` (the judging order lets a caption's pairs come together), first
    one of their last lease's caption, else of the caption they judged last here.

    On PostgreSQL the row is locked, skipping rows other transactions hold.
    """
    caption_id = leases[-1].pair.caption_id if keeps_captions and leases else None
    if keeps_captions and not leases:
        judged = Judgement.objects.filter(annotator=annotator, pair__campaign=campaign)
        caption_id = (
            judged.order_by("-created_at").values_list("pair__caption_id", flat=True).first()
        )
    exclude = [lease.pair_id for lease in leases]
    for same_caption in ([caption_id] if caption_id is not None else []) + [None]:
        pair = statements.next_pair(campaign.pk, annotator.pk, exclude, same_caption)
        if pair is not None:
            return pair
    return None


def assign(campaign: Campaign, annotator, now: datetime | None = None) -> Assignment:
    """Top up the annotator's leases to :data:`HOLD` and return the current and next pair."""
    now = now or timezone.now()
    with transaction.atomic():
        found = statements.held_and_expired(campaign.pk, annotator.pk, now)
        paused = standing.paused(campaign, annotator)
        if paused is not None:
            # A paused annotator keeps no pair from the others: every lease found (theirs and
            # the expired ones) ends now, in one release, pairs locked in id order...
            _release_lapsed(found, now)
            # ...and no grace either: what they still had on screen is refused (submit).
            pair_state.forget_lapsed(campaign.pk, annotator.pk)
            leases = []
        else:
            _release_lapsed([lease for lease in found if lease.expires_at <= now], now)
            leases = [lease for lease in found if lease.expires_at > now]
        settings = campaign.settings.judging
        stopped = paused is not None or (
            settings.budget is not None and priorities.budget_spent(campaign)
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
                pair = None
                if gold.active:
                    held = [lease.pair_id for lease in leases]
                    pair = gold_queue.pick(campaign, annotator, held, now, training)
                    if pair is None and training:
                        break  # before admission only training pairs are served
                if pair is None:
                    pair = _candidate(campaign, annotator, leases, settings.order.keeps_captions)
                    if pair is None:
                        break
                leases.append(pair_state.take_lease(pair, annotator, campaign, now))
    if campaign.status != Campaign.Status.ACTIVE or stopped:
        # Paused or closed: nothing is served; leases held stay until they run out, so work
        # on screen can resume if the campaign does. A spent budget stops judging the same
        # way (a label already on screen may still be submitted).
        return Assignment(
            current=None,
            upcoming=None,
            paused=getattr(paused, "reason", None),
            paused_since=getattr(paused, "paused_at", None),
        )
    tasks = [
        Task(lease.pair, lease.expires_at, task_ids.encode(lease.annotator_id, lease.pair.pk))
        for lease in leases
    ]
    current, upcoming, *_ = [*tasks, None, None]
    return Assignment(current=current, upcoming=upcoming, qualification=qualified)


def has_work_for(campaign: Campaign, annotator) -> bool:
    """Whether any pair may still come to the annotator (now, once leases expire, or once a
    paused campaign resumes); a closed campaign has nothing more to give.

    The pairs are those the next-pair query would serve once every lease has ended
    (:func:`pair_state.servable`), less those the annotator judged."""
    if campaign.status == Campaign.Status.CLOSED or priorities.budget_spent(campaign):
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


def free_now(campaigns: Sequence[Campaign], annotator, now: datetime | None = None) -> set[int]:
    """The ids of the given campaigns where :func:`assign` would serve the annotator a pair
    now, read without touching a lease (a GET's question), in one query: an open playable
    pair they have not judged, a lapsed lease :func:`assign` would release, a live lease of
    theirs, or (gold in the queue) a gold pair they have not answered. Each test is an
    ``EXISTS`` that stops at its first row. The caller checks they may judge there."""
    now = now or timezone.now()
    ids = [campaign.pk for campaign in campaigns]
    if not ids:
        return set()
    open_pair = Pair.objects.filter(
        pair_state.servable(),
        campaign=OuterRef("pk"),
        video__media_state__in=BROWSER_READY_STATES,
    ).filter(~_judged_by(annotator))
    lapsed = Lease.objects.filter(
        pair_state.servable("pair__", once_leases_end=True),
        pair__campaign=OuterRef("pk"),
        pair__video__media_state__in=BROWSER_READY_STATES,
        expires_at__lte=now,
    ).filter(~_judged_by(annotator, "pair"))
    held = Lease.objects.filter(
        annotator=annotator, pair__campaign=OuterRef("pk"), expires_at__gt=now
    )
    free = Q(Exists(open_pair)) | Q(Exists(lapsed)) | Q(Exists(held))
    with_gold = [c.pk for c in campaigns if c.settings.gold.rate > 0]
    if with_gold:
        unanswered = GoldPair.objects.filter(campaign=OuterRef("pk")).filter(
            ~Exists(
                GoldJudgement.objects.filter(
                    gold_pair=OuterRef("pk"),
                    annotator=annotator,
                    purpose=GoldJudgement.Purpose.QUEUE,
                    undone_at__isnull=True,
                )
            )
        )
        free |= Q(pk__in=with_gold) & Q(Exists(unanswered))
    return set(Campaign.objects.filter(free, pk__in=ids).values_list("pk", flat=True))


@dataclass(frozen=True)
class Progress:
    judged_today: int
    judged_total: int
    labels_left: int
    pairs: int
    labels_given: int = 0
    """The campaign's live labels in all, the annotator's gold answers counted in (the
    judging page's meter and the home list's "labels given")."""


def campaign_totals(campaign: Campaign) -> tuple[int, int]:
    """(pairs not held, labels they still need): exact, from the triggers' running totals."""
    tally = statements.tallies(campaign.pk, None, timezone.now().astimezone(UTC).date())
    return tally.pairs, tally.labels_left


def judged_counts(campaign: Campaign, annotator, now: datetime) -> tuple[int, int]:
    """(live judgements of the annotator here today (UTC), in all), from the tallies."""
    tally = statements.tallies(campaign.pk, annotator.pk, now.astimezone(UTC).date())
    return tally.judged_today, tally.judged_total


def shown_progress(
    judged: tuple[int, int],
    gold: tuple[int, int],
    pairs: int,
    labels_left: int,
    labels_given: int = 0,
    steady: bool = True,
) -> Progress:
    """The figures an annotator is shown: the one rule of the judging page and the home list,
    so the two never disagree. ``judged`` and ``gold`` are their (today (UTC), in all) live
    judgements and gold queue answers. Every answer must move the figures alike, or they
    would tell which pairs were gold: a gold answer counts as a judgement, a label given
    and, where each label takes one off the labels still needed (``steady``), a label done.
    Whether the campaign has work left is read from its own figure, never this one."""
    judged_today, judged_total = judged
    gold_today, gold_total = gold
    return Progress(
        judged_today=judged_today + gold_today,
        judged_total=judged_total + gold_total,
        labels_left=max(labels_left - gold_total, 0) if steady else labels_left,
        pairs=pairs,
        labels_given=labels_given + gold_total,
    )


def steady(campaign: Campaign) -> bool:
    """Whether each ordinary label takes one off the campaign's labels still needed: FIRE's
    label policy in a fixed judging order (see :func:`shown_progress`)."""
    return not (campaign.settings.label_policy.adaptive or campaign.settings.judging.adaptive)


def progress(campaign: Campaign, annotator, now: datetime | None = None) -> Progress:
    """What the annotator did today (UTC) and what the campaign still needs, as
    :func:`shown_progress` counts them, from one read of the triggers' running totals
    (counting would read every pair: ~90 ms at 600,000 pairs)."""
    now = now or timezone.now()
    gold = campaign.settings.gold.rate > 0
    tally = statements.tallies(campaign.pk, annotator.pk, now.astimezone(UTC).date(), gold)
    return shown_progress(
        (tally.judged_today, tally.judged_total),
        (tally.gold_today, tally.gold_total) if gold else (0, 0),
        tally.pairs,
        tally.labels_left,
        tally.labels_given,
        steady(campaign),
    )
