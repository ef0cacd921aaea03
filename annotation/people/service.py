"""A campaign's people: who judges it, how far each can be trusted, and an admin's remedies.

:func:`campaign_people` lists everyone with a part in a campaign in a fixed number of
statements; the actions (admit, pause, reinstate, discount, invite, create_annotator) are the
one implementation behind the people page, the admin's actions and the ``annotators``
command, and each writes a :class:`~annotation.models.StandingEvent`. An invitation does not
gate judging: it lists an annotator before their first label, so an admin can act first.
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotation.gold import tasks as gold_queue
from annotation.judging import pair_state
from annotation.models import (
    AnnotatorStanding,
    AnnotatorTally,
    Campaign,
    GoldJudgement,
    Judgement,
    StandingEvent,
)
from annotation.people.progress import sums_by
from annotation.people.quality import AnnotatorScore
from annotation.people.scores import CampaignScores, campaign_scores
from annotation.people.state import pause_rule
from config import roles
from config.accounts.names import UsernameTaken, case_twin
from config.batches import id_filters
from config.errors import NotFound, UserError
from config.text_rule import text_problem

ADMIN_PAUSE = "paused by an admin"
"""The reason an annotator paused by hand is shown, before the admin's own words."""
PAUSE_REASON_LENGTH = 200
"""Longest reason an admin gives for a pause (after :data:`ADMIN_PAUSE` it fits 300)."""


class PeopleError(UserError):
    """An admin's action on a campaign's annotator cannot be done as asked."""


class AccountError(PeopleError):
    """A new account cannot be made as asked; ``field`` (``username``, ``email``) is at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Event:
    """One step of an annotator's history in a campaign (``by``: empty for a rule)."""

    action: str
    at: datetime
    by: str
    reason: str = ""
    labels: int = 0
    since: datetime | None = None

    @property
    def rule(self) -> str | None:
        """The automatic rule (``speed``, ``gold``) behind a pause no admin made, else None."""
        if self.action != StandingEvent.Action.PAUSED or self.by:
            return None
        return pause_rule(self.reason)


@dataclass(frozen=True)
class Person:
    """One annotator of a campaign: qualification, scores, and where they stand now."""

    id: int
    username: str
    qualification: gold_queue.Qualification
    score: AnnotatorScore | None
    paused_at: datetime | None
    paused_reason: str
    paused_by: str | None
    reinstated_at: datetime | None
    reinstated_by: str | None
    discounted_labels: int
    history: tuple[Event, ...]
    labels: int = 0
    """Campaign labels that count now, read live: the stored scores may be older."""

    @property
    def pause_rule(self) -> str | None:
        """The automatic rule (``speed``, ``gold``) that paused them, else None."""
        if self.paused_at is None or self.paused_by:
            return None
        return pause_rule(self.paused_reason)

    @property
    def status(self) -> str:
        """``active``, ``paused by an admin``, ``paused by the <rule> rule`` or ``paused by a rule``."""
        if self.paused_at is None:
            return "active"
        if self.paused_by or self.paused_reason.startswith(ADMIN_PAUSE):
            return "paused by an admin"
        rule = self.pause_rule
        return f"paused by the {rule} rule" if rule else "paused by a rule"

    @property
    def pause_note(self) -> str:
        """Why they are paused, without the "paused by an admin" the status already says."""
        return self.paused_reason.removeprefix(ADMIN_PAUSE).removeprefix(":").strip()

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    @property
    def qualification_state(self) -> str:
        """The qualification in a few words: not required, admitted, qualifying, failed."""
        q = self.qualification
        if not q.required:
            return "not required"
        if q.admitted:
            return "admitted"
        if q.out_of_tries:
            return "failed, no tries left"
        if q.blocked:
            return "failed, may retry"
        if q.done or q.tries_used:
            return "qualifying"
        return "not started"


@dataclass(frozen=True)
class CampaignPeople:
    """The people page of one campaign."""

    campaign: str
    qualification_required: bool
    gold_pairs: int
    gold_answers: int
    people: tuple[Person, ...]
    invitable: tuple[tuple[int, str], ...]
    """Annotators (those who may judge) not on the list yet: (id, username)."""


def _username(user) -> str:
    return getattr(user, get_user_model().USERNAME_FIELD)


def _name(user) -> str | None:
    return None if user is None else _username(user)


def campaign_people(
    campaign: Campaign, now: datetime | None = None, scores: CampaignScores | None = None
) -> CampaignPeople:
    """Everyone with a part in ``campaign``, in username order, in a fixed number of
    statements (``scores``: the page's stored ones, else computed)."""
    now = now or timezone.now()
    scores = scores if scores is not None else campaign_scores(campaign)
    by_name = {score.annotator: score for score in scores.annotators}
    live = sums_by(
        AnnotatorTally.objects.filter(campaign=campaign), "annotator_id", n=Sum("judged")
    )
    labelled = _annotator_ids(Judgement.objects.filter(pair__campaign=campaign))
    answered = _annotator_ids(GoldJudgement._base_manager.filter(gold_pair__campaign=campaign))
    attempts = gold_queue.attempts_by("annotator_id", scores.gold_pairs, campaign=campaign)
    standings = {
        row.annotator_id: row
        for row in AnnotatorStanding.objects.filter(campaign=campaign).select_related(
            "paused_by", "reinstated_by"
        )
    }
    history = _history(campaign)
    ids = labelled | answered | set(attempts) | set(standings)
    users = sorted(get_user_model().objects.filter(pk__in=ids), key=_username)
    settings = campaign.settings.gold
    people = []
    for user in users:
        standing = standings.get(user.pk) or AnnotatorStanding()  # unsaved: nothing set
        paused_at = standing.paused_at
        people.append(
            Person(
                id=user.pk,
                username=_username(user),
                qualification=gold_queue.qualification_from(
                    settings, scores.gold_pairs, attempts.get(user.pk, []), now
                ),
                score=by_name.get(_username(user)),
                paused_at=paused_at,
                paused_reason=standing.reason if paused_at else "",
                paused_by=_name(standing.paused_by) if paused_at else None,
                reinstated_at=standing.reinstated_at,
                reinstated_by=_name(standing.reinstated_by),
                discounted_labels=standing.discounted_labels,
                history=tuple(reversed(history.get(user.pk, []))),
                labels=live.get(user.pk, (0,))[0],
            )
        )
    return CampaignPeople(
        campaign=campaign.name,
        qualification_required=settings.qualification,
        gold_pairs=scores.gold_pairs,
        gold_answers=scores.gold_answers,
        people=tuple(people),
        invitable=tuple(judge for judge in judges() if judge[0] not in ids),
    )


def _annotator_ids(rows) -> set[int]:
    """The distinct annotators of ``rows`` (labels, gold answers or standings)."""
    return set(rows.order_by().values_list("annotator_id", flat=True).distinct())


def _history(campaign: Campaign) -> dict[int, list[Event]]:
    """Each annotator's standing events in the campaign, oldest first: one statement."""
    history: dict[int, list[Event]] = defaultdict(list)
    for event in (
        StandingEvent.objects.filter(campaign=campaign).select_related("by").order_by("at", "pk")
    ):
        copied = {
            name: getattr(event, name) for name in ("action", "at", "reason", "labels", "since")
        }
        history[event.annotator_id].append(Event(**copied, by=_name(event.by) or ""))
    return history


def judges() -> list[tuple[int, str]]:
    """Everyone who may judge, as (id, username): whom an invitation may name."""
    User = get_user_model()
    found = roles.users_with(roles.JUDGE_PAIRS).order_by(User.USERNAME_FIELD)
    return list(found.values_list("pk", User.USERNAME_FIELD))


def annotator(annotator_id: int):
    """The user ``annotator_id`` if they may judge; NotFound (a 404) for any other id."""
    found = roles.users_with(roles.JUDGE_PAIRS).filter(pk=annotator_id).first()
    if found is None:
        raise NotFound(f"no annotator has id {annotator_id}")
    return found


def _event(campaign: Campaign, annotator, action: str, by, now: datetime, **fields) -> None:
    StandingEvent.objects.create(
        campaign=campaign, annotator=annotator, action=action, at=now, by=by, **fields
    )


def admit(campaign: Campaign, annotator, admin) -> None:
    """Let the annotator judge without (or after failing) the campaign's qualification."""
    name = _username(annotator)
    if not campaign.settings.gold.qualification:
        raise PeopleError(
            f"campaign {campaign.name!r} requires no qualification: {name} may judge already"
        )
    if gold_queue.qualification(campaign, annotator).admitted:
        raise PeopleError(f"{name} is admitted already")
    with transaction.atomic():
        attempt = gold_queue.admit(campaign, annotator, admin)
        _event(campaign, annotator, StandingEvent.Action.ADMITTED, admin, attempt.finished_at)


def pause(campaign: Campaign, annotator, admin, reason: str = "") -> None:
    """Stop serving the annotator in the campaign until reinstated: their held pairs go back
    to the queue and they see ``reason`` after "paused by an admin"."""
    name = _username(annotator)
    reason = reason.strip()
    problem = text_problem(reason, PAUSE_REASON_LENGTH)
    if problem is not None:
        raise PeopleError(f"the pause reason {problem}")
    shown = f"{ADMIN_PAUSE}: {reason}" if reason else ADMIN_PAUSE
    now = timezone.now()
    with transaction.atomic():
        standing, _ = AnnotatorStanding.objects.select_for_update().get_or_create(
            campaign=campaign, annotator=annotator
        )
        if standing.paused_at is not None:
            raise PeopleError(f"{name} is paused already ({standing.reason})")
        standing.paused_at, standing.paused_by, standing.reason = now, admin, shown[:300]
        standing.save(update_fields=["paused_at", "paused_by", "reason"])
        # What they have on screen is refused from now (annotation.judging.submit).
        pair_state.release_annotator(campaign.pk, annotator.pk)
        _event(campaign, annotator, StandingEvent.Action.PAUSED, admin, now, reason=shown[:300])


REINSTATED = (
    "the pause rules look only at their answers from now on; their earlier labels still "
    "count (discount them to take them back)"
)
"""What reinstating changes, as every door that reinstates says it."""


def reinstate(campaign: Campaign, annotator, admin) -> None:
    """An admin lets a paused annotator judge again (see :data:`REINSTATED`); the event names
    the reason of the pause it ended."""
    name = _username(annotator)
    now = timezone.now()
    with transaction.atomic():
        standing = (
            AnnotatorStanding.objects.select_for_update()
            .filter(campaign=campaign, annotator=annotator, paused_at__isnull=False)
            .first()
        )
        if standing is None:
            raise PeopleError(f"{name} is not paused in {campaign.name!r}")
        ended = standing.reason
        standing.paused_at, standing.paused_by, standing.reason = None, None, ""
        standing.reinstated_at, standing.reinstated_by = now, admin
        standing.save(
            update_fields=["paused_at", "paused_by", "reason", "reinstated_at", "reinstated_by"]
        )
        _event(campaign, annotator, StandingEvent.Action.REINSTATED, admin, now, reason=ended)


def _discountable(campaign: Campaign, annotator, since: datetime | None):
    """The annotator's live labels in the campaign (since ``since``): what the preview counts
    and the discount takes back."""
    labels = Judgement.objects.filter(
        pair__campaign=campaign, annotator=annotator, undone_at__isnull=True
    )
    return labels if since is None else labels.filter(created_at__gte=since)


@dataclass(frozen=True)
class DiscountPreview:
    """What a discount would do now: how many labels stop counting, on how many pairs."""

    annotator: str
    labels: int
    pairs: int
    since: datetime | None


def discount_preview(campaign: Campaign, annotator, since: datetime | None = None):
    """Count what :func:`discount` would change, writing nothing (the confirmation page)."""
    found = _discountable(campaign, annotator, since).aggregate(
        labels=Count("pk"), pairs=Count("pair_id", distinct=True)
    )
    return DiscountPreview(_username(annotator), found["labels"], found["pairs"], since)


@transaction.atomic
def discount(campaign: Campaign, annotator, since: datetime | None = None, by=None) -> int:
    """Stop counting the annotator's labels in the campaign (since ``since``), kept but marked,
    and send their pairs back to the queue; returns how many labels were discounted. The
    pairs are locked in id order before their counts are recomputed, so concurrent submits
    wait and then see the new counts."""
    now = timezone.now()
    labels = _discountable(campaign, annotator, since)
    pair_ids = sorted(set(labels.values_list("pair_id", flat=True)))
    if not pair_ids:
        return 0
    pair_state.lock_pairs(pair_ids)
    discounted = sum(
        labels.filter(**where).update(undone_at=now, discounted_at=now)
        for where in id_filters("pair_id", pair_ids)
    )
    pair_state.recount_labels(pair_ids, campaign)
    standing, _ = AnnotatorStanding.objects.get_or_create(campaign=campaign, annotator=annotator)
    standing.discounted_at = now
    standing.discounted_labels += discounted
    standing.save(update_fields=["discounted_at", "discounted_labels"])
    _event(
        campaign,
        annotator,
        StandingEvent.Action.DISCOUNTED,
        by,
        now,
        labels=discounted,
        since=since,
    )
    return discounted


def invite(campaign: Campaign, annotator_ids: list[int], admin) -> list[str]:
    """Put annotators who may judge on the campaign's list (those listed already left as they
    are); returns the usernames invited."""
    User = get_user_model()
    wanted = roles.users_with(roles.JUDGE_PAIRS).filter(pk__in=annotator_ids)
    listed = _annotator_ids(
        AnnotatorStanding.objects.filter(campaign=campaign, annotator__in=wanted)
    ) | _annotator_ids(Judgement.objects.filter(pair__campaign=campaign, annotator__in=wanted))
    judges = list(wanted.order_by(User.USERNAME_FIELD))
    if not judges:
        raise PeopleError("nobody named may judge: invite annotators")
    new = [user for user in judges if user.pk not in listed]
    if not new:
        raise PeopleError("everyone named is on this campaign's list already")
    now = timezone.now()
    with transaction.atomic():
        AnnotatorStanding.objects.bulk_create(
            [AnnotatorStanding(campaign=campaign, annotator=user) for user in new],
            ignore_conflicts=True,
        )
        invited = StandingEvent.Action.INVITED
        StandingEvent.objects.bulk_create(
            [
                StandingEvent(campaign=campaign, annotator=u, action=invited, at=now, by=admin)
                for u in new
            ]
        )
    return [_username(user) for user in new]


PASSWORD_BYTES = 12
"""Random bytes in a new account's password (16 URL-safe characters, 96 bits)."""


@dataclass(frozen=True)
class NewAnnotator:
    """An annotator account just made and invited: ``password`` is the only copy in clear."""

    id: int
    username: str
    email: str
    password: str
    campaign: str


def _new_username(username: str) -> str:
    """``username`` normalised as Django stores it, if its validators take it and no account
    has it in any letter case (as ``UserCreationForm``); else AccountError."""
    User = get_user_model()
    field = User._meta.get_field(User.USERNAME_FIELD)
    username = User.normalize_username(username)
    if not username:
        raise AccountError("username", "a username is needed")
    try:
        field.run_validators(username)
    except ValidationError as exc:
        raise AccountError("username", " ".join(exc.messages)) from None
    twin = case_twin(username)
    if twin is not None:
        raise _taken(username, twin)
    return username


def _taken(username: str, twin: str | None = None) -> AccountError:
    return AccountError("username", str(UsernameTaken(username, twin)))


def _new_email(email: str) -> str:
    if not email:
        return ""
    User = get_user_model()
    email = User._default_manager.normalize_email(email.strip())
    try:
        validate_email(email)
        User._meta.get_field("email").run_validators(email)
    except ValidationError as exc:
        raise AccountError("email", " ".join(exc.messages)) from None
    return email


def create_annotator(campaign: Campaign, username: str, email: str, admin) -> NewAnnotator:
    """Make an annotator account with a generated password and invite it to ``campaign``, in
    one transaction (a refused or taken name leaves no account); raises :class:`AccountError`.
    The password is returned in clear once to show (firepool sends no mail) and stored hashed."""
    User = get_user_model()
    username = _new_username(username)
    email = _new_email(email)
    password = secrets.token_urlsafe(PASSWORD_BYTES)
    try:
        with transaction.atomic():
            user = User._default_manager.create_user(username, email=email, password=password)
            user.groups.add(roles.ensure_groups()[roles.ANNOTATOR])
            invite(campaign, [user.pk], admin)
    except IntegrityError:
        raise _taken(username) from None
    return NewAnnotator(user.pk, username, email, password, campaign.name)


def standings(campaign: Campaign) -> list[AnnotatorStanding]:
    """Paused or discounted annotators of the campaign (the ``annotators`` command's list)."""
    return list(
        AnnotatorStanding.objects.filter(campaign=campaign)
        .filter(Q(paused_at__isnull=False) | Q(discounted_labels__gt=0))
        .select_related("annotator", "reinstated_by")
        .order_by("annotator__username")
    )
