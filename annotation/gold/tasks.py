"""Gold pairs in the judging queue, and the qualification an annotator passes before real work.

Each gold pair is served at the campaign's gold rate through a *task*: a hidden
:class:`~annotation.models.Pair` in a closed companion campaign, served under an opaque id
like any other; answers are :class:`~annotation.models.GoldJudgement` rows, never labels.
A campaign may require qualification: N training pairs drawn from its gold, with feedback
after each; at or above the threshold the annotator is admitted, else may retry after a
cool-down a limited number of times (or an admin admits them by hand).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery
from django.utils import timezone

from annotation.campaigns.settings import DEFAULT_TRIES
from annotation.gold import statements as gold_sql
from annotation.judging import pair_state
from annotation.judging import statements as sql
from annotation.models import (
    Campaign,
    GoldJudgement,
    GoldPair,
    Judgement,
    Lease,
    Pair,
    QualificationAttempt,
)
from annotation.people import quality
from config.errors import UserError


def gold_of(campaign: Campaign) -> int | None:
    """The campaign whose gold tasks this hidden companion serves (None: a real campaign)."""
    return campaign.gold_of_id


def visible(campaigns):
    """Leave hidden gold companions out of a campaign queryset (one from ``_base_manager``)."""
    return campaigns.filter(gold_of__isnull=True)


def ensure_tasks(campaign: Campaign) -> int:
    """Give every gold pair of the campaign its hidden task pair; returns how many were made.
    Run on import and promotion, so the judging request that first serves gold need not."""
    if not GoldPair.objects.filter(campaign=campaign, task__isnull=True).exists():
        return 0
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        # Read under the campaign's lock: two callers at once must not both make the tasks.
        missing = list(
            GoldPair.objects.filter(campaign=locked, task__isnull=True).values_list(
                "caption_id", "video_id"
            )
        )
        if not missing:
            return 0
        companion = Campaign._base_manager.filter(gold_of=locked).first()
        if companion is None:
            companion = Campaign._base_manager.create(
                dataset_id=campaign.dataset_id,
                name=f"{campaign.name[:60]} · gold tasks {campaign.pk}",
                depth=campaign.depth,
                status=Campaign.Status.CLOSED,
                gold_of=locked,
            )
        # Columns, not model instances: 100,000 of those cost seconds of a gold import's lock.
        sql.insert(
            Pair,
            {
                "campaign_id": companion.pk,
                "caption_id": [caption for caption, _ in missing],
                "video_id": [video for _, video in missing],
                "position": 0,
                "double": False,
                # Served by gold_queue.pick, never by the queue: nothing needed.
                **pair_state.initial(np.zeros(len(missing), dtype=np.int64)),
            },
        )
        # One statement, its parameters fixed (not a bulk_update's CASE of a branch a row):
        # each gold pair takes the companion's pair of its caption and video (pair_once).
        task = Pair.objects.filter(
            campaign=companion, caption_id=OuterRef("caption_id"), video_id=OuterRef("video_id")
        ).values("pk")[:1]
        GoldPair.objects.filter(campaign=locked, task__isnull=True).update(task=Subquery(task))
    return len(missing)


# -- qualification -------------------------------------------------------------------------


@dataclass(frozen=True)
class Qualification:
    """Where an annotator stands with a campaign's qualification (for the judging page)."""

    required: bool
    admitted: bool
    done: int = 0
    total: int = 0
    tries_used: int = 0
    tries: int = DEFAULT_TRIES
    last_score: float | None = None
    retry_at: datetime | None = None

    @property
    def blocked(self) -> bool:
        """Not admitted and may not start another try now."""
        return not self.admitted and self.retry_at is not None

    @property
    def out_of_tries(self) -> bool:
        return self.blocked and self.retry_at.year == datetime.max.year

    @property
    def next_try_at(self) -> datetime | None:
        """When the annotator may try again, as the judging page shows it (None: now, or
        never once out of tries)."""
        return None if self.retry_at is None or self.out_of_tries else self.retry_at


class QualificationError(UserError):
    """An admin's qualification action cannot be done."""


def qualification(campaign: Campaign, annotator, now: datetime | None = None) -> Qualification:
    """The annotator's qualification state (admitted at once when none is required)."""
    settings = campaign.settings.gold
    if not settings.qualification:
        return Qualification(required=False, admitted=True)
    gold_pairs, attempts = gold_sql.qualification(campaign.pk, annotator.pk)  # one statement
    return qualification_from(settings, gold_pairs, attempts, now or timezone.now())


def qualification_from(settings, gold_pairs: int, attempts, now: datetime) -> Qualification:
    """The qualification state from a campaign's gold settings, its number of gold pairs and
    one annotator's attempts there, oldest first (:class:`QualificationRow`-like)."""
    if not settings.qualification:
        return Qualification(required=False, admitted=True)
    admitted = any(a.passed or a.admitted_by for a in attempts)
    finished = [a for a in attempts if a.finished_at is not None]
    running = next((a for a in attempts if a.finished_at is None), None)
    last = finished[-1] if finished else None
    last_score = last.correct / last.total if last and last.total else None
    retry_at = None
    if not admitted and running is None and last is not None:
        if len(attempts) >= settings.tries:
            retry_at = datetime.max.replace(tzinfo=now.tzinfo)  # no tries left
        else:
            wait_until = last.finished_at + timedelta(seconds=settings.cooldown_seconds)
            retry_at = wait_until if wait_until > now else None
    return Qualification(
        required=True,
        admitted=admitted,
        done=running.answered if running else 0,
        total=min(settings.training_pairs, gold_pairs),
        tries_used=len(attempts),
        tries=settings.tries,
        last_score=last_score,
        retry_at=retry_at,
    )


def attempts_by(
    key: str, gold_pairs: int = 0, **where
) -> dict[int, list[gold_sql.QualificationRow]]:
    """The qualification attempts matching ``where``, oldest first, grouped by the column
    ``key``, with their live answers counted: one statement for many annotators or campaigns."""
    found: dict[int, list[gold_sql.QualificationRow]] = defaultdict(list)
    rows = (
        QualificationAttempt.objects.filter(**where)
        .annotate(answered=Count("judgements", filter=Q(judgements__undone_at__isnull=True)))
        .order_by("started_at", "pk")
        .values_list(
            key, "pk", "passed", "admitted_by", "finished_at", "correct", "total", "answered"
        )
    )
    for group, *fields in rows:
        found[group].append(gold_sql.QualificationRow(gold_pairs, *fields))
    return found


def _running_attempt(campaign: Campaign, annotator, now: datetime) -> QualificationAttempt | None:
    """The annotator's attempt in progress, starting one if they may."""
    state = qualification(campaign, annotator, now)
    if state.admitted or state.retry_at is not None or state.total == 0:
        return None
    running = (
        QualificationAttempt.objects.filter(
            campaign=campaign, annotator=annotator, finished_at__isnull=True
        )
        .order_by("pk")
        .first()
    )
    if running is None:
        running = QualificationAttempt.objects.create(
            campaign=campaign, annotator=annotator, total=state.total
        )
    return running


def admit(campaign: Campaign, annotator, admin) -> QualificationAttempt:
    """An admin admits the annotator by hand (recorded as an attempt they admitted)."""
    if not campaign.settings.gold.qualification:
        raise QualificationError(f"campaign {campaign.name!r} requires no qualification")
    return QualificationAttempt.objects.create(
        campaign=campaign, annotator=annotator, finished_at=timezone.now(), admitted_by=admin
    )


# -- serving -------------------------------------------------------------------------------


_TASK = ("task", "task__caption", "task__video")


def pick(
    campaign: Campaign,
    annotator,
    exclude: list[int],
    now: datetime,
    training: bool | None = None,
) -> Pair | None:
    """A gold task to serve now, or None: before admission the next training pair of the
    annotator's attempt; after, with probability ``rate``, a gold pair they have not met in the
    queue. ``training`` (still qualifying) is worked out here unless the caller knows."""
    settings = campaign.settings.gold
    if training is None:
        training = settings.qualification and not qualification(campaign, annotator, now).admitted
    if not training and (settings.rate <= 0 or random.random() >= settings.rate):
        return None
    if training:
        ensure_tasks(campaign)
        golds = GoldPair.objects.filter(campaign=campaign, task__isnull=False).exclude(
            task_id__in=exclude
        )
        attempt = _running_attempt(campaign, annotator, now)
        if attempt is None:
            return None
        order = _training_pairs(campaign, attempt)
        answered = set(attempt.judgements.values_list("gold_pair_id", flat=True))
        leased = set(
            Lease.objects.filter(annotator=annotator, pair__gold_task__isnull=False).values_list(
                "pair__gold_task", flat=True
            )
        )
        wanted = [pk for pk in order if pk not in answered and pk not in leased]
        chosen = golds.filter(pk__in=wanted[:1]).select_related(*_TASK).first()
        return chosen.task if chosen else None
    # One statement on the hot path; a gold pair added since the last pick gets its task
    # first, so it has its chance at once (and when nothing is left, one may be waiting).
    found = gold_sql.gold_task(campaign.pk, annotator.pk, exclude)
    if (found is None or found.untasked) and ensure_tasks(campaign):
        found = gold_sql.gold_task(campaign.pk, annotator.pk, exclude)
    if found is None:
        return None
    return sql.joined_pair(*sql.instances(sql.PAIR_ROW, found))


def _training_pairs(campaign: Campaign, attempt: QualificationAttempt) -> list[int]:
    """The attempt's training pairs in a seeded order, balanced as far as the gold allows
    (:func:`annotation.people.quality.training_split`)."""

    def key(pk: int) -> float:
        return random.Random(attempt.pk * 1_000_003 + pk).random()

    relevant, irrelevant = [], []
    for pk, label in GoldPair.objects.filter(campaign=campaign).values_list("pk", "label"):
        (relevant if label == Judgement.Label.RELEVANT else irrelevant).append(pk)
    relevant.sort(key=key)
    irrelevant.sort(key=key)
    total = attempt.total
    balanced, _ = quality.training_split(total)
    n_relevant = min(len(relevant), max(balanced, total - len(irrelevant)))
    return sorted(relevant[:n_relevant] + irrelevant[: total - n_relevant], key=key)


@dataclass(frozen=True)
class Feedback:
    """What a training answer earns: whether it was right, and why (qualification only)."""

    correct: bool
    label: str
    explanation: str
    guideline: str


@dataclass(frozen=True)
class GoldEvidence:
    """Just after a queue answer on gold: whether the annotator is paused already, and their
    live queue answers on gold since their reinstatement (the new one counted)."""

    paused: bool
    correct: int
    total: int


@dataclass(frozen=True)
class GoldAnswer:
    judgement: GoldJudgement | None
    """None when the gold pair was removed while on screen (``gone``)."""
    created: bool
    feedback: Feedback | None
    gone: bool = False
    evidence: GoldEvidence | None = None
    """Set when a queue answer was stored: what standing needs to score it."""


def answer(
    task: Pair,
    campaign: Campaign,
    annotator,
    label: str,
    client_uuid,
    seconds: float | None,
    now: datetime | None = None,
    played: float | None = None,
) -> GoldAnswer:
    """Store an answer on a gold task the annotator holds (idempotent by UUID, retries as a
    judgement's); the caller holds the task's row locked. One statement reads all it needs. A
    task whose gold pair is gone only has its lease ended (``gone``): the caller then refuses."""
    from annotation.judging.errors import ID_USED, AssignmentError, same_answer

    found, stored = gold_sql.gold_answer(task.pk, annotator.pk, client_uuid)
    if found.gold is None:  # an admin removed the gold pair while it was on screen
        pair_state.end_lease(task.pk, annotator.pk)  # kept: the caller refuses after commit
        return GoldAnswer(None, False, None, gone=True)
    gold = GoldPair(
        pk=found.gold,
        campaign_id=found.campaign,
        label=found.label,
        explanation=found.explanation,
        guideline=found.guideline,
    )
    if found.label_uses is not None:
        raise AssignmentError("conflict", ID_USED)
    if stored is not None:
        if stored.gold_pair_id != gold.pk or not same_answer(
            stored, annotator.pk, label, seconds, played
        ):
            raise AssignmentError("conflict", ID_USED)
        if stored.undone_at is not None:
            raise AssignmentError(
                "undone", "this judgement was taken back; judge again with a new id"
            )
        return GoldAnswer(stored, False, _feedback(gold, stored))
    if not pair_state.end_lease(task.pk, annotator.pk):
        raise AssignmentError("not_leased", "this pair is not leased to you")
    purpose = GoldJudgement.Purpose.QUALIFICATION if found.attempt else GoldJudgement.Purpose.QUEUE
    if purpose == GoldJudgement.Purpose.QUEUE and found.answered:
        raise AssignmentError("conflict", "you have already judged this pair")
    now = now or timezone.now()
    judgement = gold_sql.insert_gold_judgement(
        client_uuid,
        gold.pk,
        annotator.pk,
        label,
        seconds,
        now,
        purpose.value,
        found.attempt,
        played,
    )
    if found.attempt is not None:
        _score(found.attempt, campaign, gold, label, now)
        return GoldAnswer(judgement, True, _feedback(gold, judgement))
    evidence = GoldEvidence(
        paused=found.paused_at is not None,
        correct=found.gold_correct + (label == gold.label),
        total=found.gold_total + 1,
    )
    return GoldAnswer(judgement, True, None, evidence=evidence)


def _score(attempt_id: int, campaign: Campaign, gold: GoldPair, label: str, now: datetime) -> None:
    """Count one training answer; the last one finishes the attempt, passed or not."""
    attempt = QualificationAttempt.objects.get(pk=attempt_id)
    attempt.correct += label == gold.label
    answered = attempt.judgements.count()
    fields = ["correct"]
    if answered >= attempt.total:
        attempt.finished_at = now
        threshold = campaign.settings.gold.threshold
        attempt.passed = attempt.total > 0 and attempt.correct / attempt.total >= threshold
        fields += ["finished_at", "passed"]
    attempt.save(update_fields=fields)


def _feedback(gold: GoldPair, judgement: GoldJudgement) -> Feedback | None:
    if judgement.purpose != GoldJudgement.Purpose.QUALIFICATION:
        return None
    return Feedback(
        correct=judgement.label == gold.label,
        label=gold.label,
        explanation=gold.explanation,
        guideline=gold.guideline,
    )


def release(task: Pair, annotator) -> None:
    """Give back a gold task without an answer (an escalation): it may come again later."""
    pair_state.end_lease(task.pk, annotator.pk)
