"""The judging queue as a state machine: random sequences of claims, submits, retries,
undos, escalations, admin decisions, pauses and lease expiry, checked against a model.

The model is plain Python (judgements by UUID, leases, lapsed leases, open escalations,
adjudications, the campaign's status); the FIRE §3.1 policy of :mod:`annotation.policy.rules`
says what each pair still needs. Every operation's outcome (stored or refused, and why)
is predicted by the model, and after every step the database must agree with it. The
clock is the test's: every call passes ``now=``, and ``timezone.now`` reads the same
clock so that ``created_at`` columns (which the undo window reads) agree with it.
"""

import itertools
import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from annotation.judging import escalations, queue, submit
from annotation.judging.errors import AssignmentError
from annotation.models import Campaign, Escalation, Judgement, Lease, Pair
from annotation.policy import rules as policy
from retrieval.label_sets.status import LabelStatus
from tests.factories import make_campaign

SCALE = float(os.environ.get("FIREPOOL_FUZZ_SCALE", "1"))
"""Multiplies the example budget: ``FIREPOOL_FUZZ_SCALE=20`` for a long bug hunt."""

PHASES = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
"""No shrinking: each example builds a campaign, and shrinking a long run took minutes."""
ANNOTATORS = 3
LEASE_SECONDS = 30
SECOND_LABEL_RATE = 0.3
MAX_LABELS = 3
START = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
ACTIVE, PAUSED, CLOSED = Campaign.Status.values
LABELS = Judgement.Label.values
_names = itertools.count()


class Clock:
    """The time every call sees: advanced only by the machine's rules."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Label:
    """A judgement the service acknowledged, as the model remembers it."""

    annotator: int
    pair: int
    label: str
    at: datetime
    order: int
    undone: bool = False


@dataclass
class Escalated:
    annotator: int
    pair: int
    open: bool = True


def snapshot(campaign_id: int) -> tuple:
    """Every row of the campaign the queue writes: a refused call must leave it as it was."""
    pairs = list(Pair.objects.filter(campaign_id=campaign_id).order_by("pk").values())
    leases = list(
        Lease.objects.filter(pair__campaign_id=campaign_id)
        .order_by("pk")
        .values_list("pk", "pair_id", "annotator_id", "expires_at")
    )
    judgements = list(
        Judgement.objects.filter(pair__campaign_id=campaign_id)
        .order_by("pk")
        .values_list("uuid", "pair_id", "annotator_id", "label", "undone_at")
    )
    escalations = list(
        Escalation.objects.filter(pair__campaign_id=campaign_id)
        .order_by("pk")
        .values_list("uuid", "pair_id", "resolved_at")
    )
    return pairs, leases, judgements, escalations


class JudgingQueue(RuleBasedStateMachine):
    """Annotators and an admin working one small FIRE-policy campaign."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        clock.now = START
        self.clock = clock
        # Each example runs in its own savepoint, rolled back at teardown: a fresh database.
        self.savepoint = transaction.atomic()
        self.savepoint.__enter__()
        campaign = make_campaign(
            n_queries=3, depth=3, rate=SECOND_LABEL_RATE, lease_seconds=LEASE_SECONDS
        )
        assert campaign.max_labels == MAX_LABELS
        self.campaign_id = campaign.pk
        User = get_user_model()
        run = next(_names)
        self.users = [User.objects.create_user(f"sm{run}-{i}") for i in range(ANNOTATORS)]
        self.admin = User.objects.create_user(f"sm{run}-admin", is_staff=True, is_superuser=True)
        self.pairs = list(campaign.pairs.order_by("position").values_list("pk", flat=True))
        self.double = dict(campaign.pairs.values_list("pk", "double"))
        self.status = ACTIVE
        self.judgements: dict[uuid.UUID, Label] = {}
        self.escalations: dict[uuid.UUID, Escalated] = {}
        self.adjudicated: dict[int, str] = {}
        self.leases: dict[tuple[int, int], datetime] = {}
        self.lapsed: dict[tuple[int, int], datetime] = {}
        self.screen: dict[int, list[int]] = {a: [] for a in range(ANNOTATORS)}
        self.order = itertools.count()

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self.savepoint.__exit__(None, None, None)

    # The model: what each pair should look like.

    @property
    def now(self) -> datetime:
        return self.clock.now

    def live(self, pair: int) -> list[Label]:
        return sorted(
            (j for j in self.judgements.values() if j.pair == pair and not j.undone),
            key=lambda j: j.order,
        )

    def votes(self, pair: int) -> list[bool]:
        return [j.label == Judgement.Label.RELEVANT for j in self.live(pair)]

    def held(self, pair: int) -> bool:
        return any(e.open and e.pair == pair for e in self.escalations.values())

    def policy_needs(self, pair: int) -> int:
        """Labels the FIRE policy still asks for, from the live labels alone."""
        return policy.needed_for(self.votes(pair), self.double[pair], MAX_LABELS)

    def needed(self, pair: int) -> int:
        return 0 if pair in self.adjudicated else self.policy_needs(pair)

    def pair_status(self, pair: int) -> str:
        code = {"relevant": 1, "irrelevant": 0}.get(
            self.adjudicated.get(pair, ""), policy.NOT_ADJUDICATED
        )
        relevant, total = policy.tally(self.votes(pair))
        status = policy.resolve(
            np.array([relevant]), np.array([total]), self.double[pair], MAX_LABELS, np.array([code])
        )[0]
        return LabelStatus(int(status)).label

    def leased(self, pair: int) -> int:
        return sum(1 for (_, p) in self.leases if p == pair)

    def open_slots(self, pair: int) -> int:
        return 0 if self.held(pair) else max(self.needed(pair) - self.leased(pair), 0)

    def live_by(self, a: int, pair: int) -> bool:
        return any(j.annotator == a for j in self.live(pair))

    def latest(self, a: int) -> Label | None:
        mine = [j for j in self.judgements.values() if j.annotator == a and not j.undone]
        return max(mine, key=lambda j: (j.at, j.order), default=None)

    def expire(self) -> None:
        """Leases past their time are released (and remembered as lapsed) by any claim."""
        for key, expires_at in list(self.leases.items()):
            if expires_at <= self.now:
                del self.leases[key]
                self.lapsed[key] = max(self.lapsed.get(key, expires_at), expires_at)

    def drop_leases_of(self, a: int) -> None:
        for key in [key for key in self.leases if key[0] == a]:
            del self.leases[key]

    # Calling the service.

    def campaign(self) -> Campaign:
        return Campaign.objects.get(pk=self.campaign_id)

    def attempt(self, expected: str | None, call):
        """Run ``call``; it must fail with the ``expected`` code (changing nothing) or succeed."""
        before = snapshot(self.campaign_id)
        try:
            result = call()
        except AssignmentError as error:
            assert error.code == expected, (error.code, error.message, expected)
            assert snapshot(self.campaign_id) == before, "a refused call changed the queue"
            return None
        assert expected is None, f"expected {expected!r}, the call succeeded"
        return result

    def served(self, a: int, got: queue.Assignment) -> None:
        """Check an assignment handed to annotator ``a`` and record its new leases."""
        self.expire()
        tasks = [task for task in (got.current, got.upcoming) if task is not None]
        assert got.current is not None or got.upcoming is None
        returned = {task.pair.pk: task.expires_at for task in tasks}
        assert len(returned) == len(tasks) <= queue.HOLD
        kept = {p: e for (b, p), e in self.leases.items() if b == a}
        if self.status == ACTIVE:  # paused or closed campaigns show nothing, leases or not
            assert kept.items() <= returned.items(), "a live lease went missing from the screen"
        else:
            assert not returned, f"pair served in a {self.status} campaign"
        for pair, expires_at in returned.items():
            if pair in kept:
                continue
            assert self.status == ACTIVE, "a new lease in a campaign that is not active"
            assert not self.live_by(a, pair), "a pair handed back to someone who judged it"
            assert self.open_slots(pair) > 0, "a lease beyond the pair's open slots"
            assert expires_at == self.now + timedelta(seconds=LEASE_SECONDS)
            self.leases[(a, pair)] = expires_at
        for pair in returned:
            assert not self.held(pair), f"held pair {pair} served to annotator {a}"
        self.screen[a] = list(returned)

    def pick(self, a: int, where: str, index: int) -> int:
        """A pair id: one on the annotator's screen, one whose lease lapsed, or any."""
        lapsed = sorted(p for (b, p) in self.lapsed if b == a)
        choices = {"screen": self.screen[a], "lapsed": lapsed}.get(where) or self.pairs
        return choices[index % len(choices)]

    # Annotators.

    @rule(a=st.integers(0, ANNOTATORS - 1))
    def claim(self, a):
        got = queue.assign(self.campaign(), self.users[a], now=self.now)
        self.served(a, got)

    @rule(
        a=st.integers(0, ANNOTATORS - 1),
        where=st.sampled_from(["screen", "screen", "lapsed", "any"]),
        index=st.integers(0, 8),
        label=st.sampled_from(LABELS),
    )
    def submit(self, a, where, index, label):
        pair = self.pick(a, where, index)
        key = uuid.uuid4()
        expected = self.submit_refusal(a, pair)
        result = self.attempt(
            expected,
            lambda: submit.submit(self.users[a], pair, label, key, seconds=2.0, now=self.now),
        )
        if result is None:
            return
        assert result.created and result.judgement.uuid == key
        assert self.policy_needs(pair) > 0, (
            f"pair {pair} took a label its policy no longer asks for (labels {self.votes(pair)})"
        )
        self.leases.pop((a, pair), None)
        self.judgements[key] = Label(a, pair, label, self.now, next(self.order))
        self.served(a, result.assignment)

    def submit_refusal(self, a: int, pair: int) -> str | None:
        """Why a fresh submit of ``pair`` by ``a`` must be refused, or None if it is taken."""
        if self.status != ACTIVE:
            return "inactive"
        if self.live_by(a, pair):
            return "conflict"
        if (a, pair) in self.leases:
            return None
        lapsed = self.lapsed.get((a, pair))
        if lapsed is None or lapsed <= self.now - timedelta(seconds=queue.GRACE_SECONDS):
            return "not_leased"
        return None if self.open_slots(pair) > 0 else "lease_expired"

    @precondition(lambda self: self.judgements)
    @rule(index=st.integers(0, 100), other=st.booleans())
    def retry(self, index, other):
        key = sorted(self.judgements)[index % len(self.judgements)]
        judged = self.judgements[key]
        a = (judged.annotator + other) % ANNOTATORS
        expected = "conflict" if other else ("undone" if judged.undone else None)
        result = self.attempt(
            expected,
            lambda: submit.submit(
                self.users[a], judged.pair, judged.label, key, seconds=2.0, now=self.now
            ),
        )
        if result is None:
            return
        assert not result.created and result.judgement.uuid == key
        self.served(a, result.assignment)

    @rule(a=st.integers(0, ANNOTATORS - 1))
    def undo(self, a):
        latest = self.latest(a)
        if self.status != ACTIVE:
            expected = "inactive"
        elif latest is None:
            expected = "not_found"
        elif (self.now - latest.at).total_seconds() > submit.UNDO_SECONDS:
            expected = "undo_window"
        else:
            expected = None
        got = self.attempt(
            expected, lambda: submit.undo(self.users[a], self.campaign(), now=self.now)
        )
        if got is None:
            return
        latest.undone = True
        self.drop_leases_of(a)
        comes_back = self.open_slots(latest.pair) > 0
        self.served(a, got)
        if comes_back:
            assert got.current.pair.pk == latest.pair, "the undone pair is not shown again"

    @rule(
        a=st.integers(0, ANNOTATORS - 1),
        where=st.sampled_from(["screen", "screen", "last", "any"]),
        index=st.integers(0, 8),
        reason=st.sampled_from(["video does not play", "caption unintelligible", "  "]),
    )
    def escalate(self, a, where, index, reason):
        latest = self.latest(a)
        last = where == "last" and latest is not None
        pair = latest.pair if last else self.pick(a, where, index)
        key = uuid.uuid4()
        just_judged = (
            latest is not None
            and latest.pair == pair
            and (self.now - latest.at).total_seconds() <= submit.UNDO_SECONDS
        )
        waiting = sum(1 for e in self.escalations.values() if e.open and e.annotator == a)
        if not reason.strip():
            expected = "invalid"
        elif self.status != ACTIVE:
            expected = "inactive"
        elif self.held(pair) or not ((a, pair) in self.leases or just_judged):
            expected = "not_leased"
        elif waiting >= escalations.MAX_OPEN_ESCALATIONS:
            expected = "too_many_escalations"
        else:
            expected = None
        got = self.attempt(
            expected,
            lambda: escalations.escalate(self.users[a], pair, reason, key, now=self.now),
        )
        if got is None:
            return
        self.escalations[key] = Escalated(a, pair)
        for held in [lease for lease in self.leases if lease[1] == pair]:  # everyone's lease ends
            del self.leases[held]
        self.served(a, got)

    # The admin.

    @precondition(lambda self: any(e.open for e in self.escalations.values()))
    @rule(index=st.integers(0, 100), label=st.sampled_from([None, *LABELS]))
    def decide_escalation(self, index, label):
        waiting = sorted(key for key, e in self.escalations.items() if e.open)
        key = waiting[index % len(waiting)]
        escalation = Escalation.objects.get(uuid=key)
        escalations.resolve_escalation(escalation, self.admin, label=label, note="")
        pair = self.escalations[key].pair
        for e in self.escalations.values():
            if e.pair == pair:
                e.open = False
        if label is not None:
            self.adjudicated[pair] = label

    @rule(index=st.integers(0, 8), label=st.sampled_from(LABELS))
    def adjudicate(self, index, label):
        pair = self.pairs[index % len(self.pairs)]
        escalations.adjudicate(Pair.objects.get(pk=pair), self.admin, label)
        self.adjudicated[pair] = label

    @rule(status=st.sampled_from([ACTIVE, ACTIVE, PAUSED, CLOSED]))
    def set_status(self, status):
        Campaign.objects.filter(pk=self.campaign_id).update(status=status)
        self.status = status

    # Time.

    @rule(seconds=st.sampled_from([1, 5, 20, 31, 61, 125, 200]))
    def advance(self, seconds):
        self.clock.now += timedelta(seconds=seconds)

    @rule()
    def release_expired(self):
        released = queue.release_expired(self.campaign(), self.now)
        before = len(self.leases)
        self.expire()
        assert released == before - len(self.leases)

    # What must always hold.

    @invariant()
    def judgements_are_stored_once(self):
        stored = {
            row[0]: row[1:]
            for row in Judgement.objects.filter(pair__campaign_id=self.campaign_id).values_list(
                "uuid", "annotator_id", "pair_id", "label", "undone_at"
            )
        }
        expected = {
            key: (self.users[j.annotator].pk, j.pair, j.label, j.undone)
            for key, j in self.judgements.items()
        }
        assert {key: (*row[:3], row[3] is not None) for key, row in stored.items()} == expected

    @invariant()
    def one_live_judgement_per_annotator_and_pair(self):
        doubled = (
            Judgement.objects.filter(pair__campaign_id=self.campaign_id, undone_at__isnull=True)
            .values("pair", "annotator")
            .annotate(n=Count("pk"))
            .filter(n__gt=1)
        )
        assert not doubled.exists()

    @invariant()
    def pairs_agree_with_their_rows_and_the_policy(self):
        rows = Pair.objects.filter(campaign_id=self.campaign_id).values()
        live_leases = dict(
            Lease.objects.filter(pair__campaign_id=self.campaign_id)
            .values("pair")
            .annotate(n=Count("pk"))
            .values_list("pair", "n")
        )
        for row in rows:
            pair = row["id"]
            votes = self.votes(pair)
            assert len(votes) <= MAX_LABELS
            expected = {
                "pk": pair,
                "label_count": len(votes),
                "relevant_count": sum(votes),
                "needed": self.needed(pair),
                "leased": live_leases.get(pair, 0),
                "open_slots": 0 if row["held"] else max(self.needed(pair) - row["leased"], 0),
                "held": self.held(pair),
                "status": self.pair_status(pair),
                "adjudicated": self.adjudicated.get(pair, ""),
            }
            stored = {name: row[name if name != "pk" else "id"] for name in expected}
            assert stored == expected, (stored, expected)

    @invariant()
    def leases_and_escalations_are_the_models(self):
        index = {user.pk: a for a, user in enumerate(self.users)}
        leases = {
            (index[user], pair): expires_at
            for user, pair, expires_at in Lease.objects.filter(
                pair__campaign_id=self.campaign_id
            ).values_list("annotator", "pair", "expires_at")
        }
        assert leases == self.leases
        waiting = set(
            Escalation.objects.filter(
                pair__campaign_id=self.campaign_id, resolved_at__isnull=True
            ).values_list("uuid", flat=True)
        )
        assert waiting == {key for key, e in self.escalations.items() if e.open}


@pytest.mark.django_db
def test_judging_queue_state_machine(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(timezone, "now", clock)
    run_state_machine_as_test(
        lambda: JudgingQueue(clock),
        settings=settings(
            max_examples=max(1, int(60 * SCALE)),
            stateful_step_count=50,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
            phases=PHASES,
        ),
    )


@pytest.mark.django_db
def test_nothing_is_served_while_paused():
    """Claim, pause, claim again: the second answer must show no pair."""
    campaign = make_campaign(lease_seconds=LEASE_SECONDS)
    user = get_user_model().objects.create_user("paused-claimer")
    now = timezone.now()
    assert queue.assign(campaign, user, now=now).current is not None
    Campaign.objects.filter(pk=campaign.pk).update(status=PAUSED)
    campaign.refresh_from_db()
    assert queue.assign(campaign, user, now=now).current is None


@pytest.mark.django_db
def test_held_pair_is_not_served():
    """Two annotators lease the same double pair; one escalates it; the other's next claim
    must not show it."""
    campaign = make_campaign(rate=1.0, lease_seconds=LEASE_SECONDS)
    first, second = (get_user_model().objects.create_user(f"held-{i}") for i in range(2))
    now = timezone.now()
    pair = queue.assign(campaign, first, now=now).current.pair.pk
    assert queue.assign(campaign, second, now=now).current.pair.pk == pair
    escalations.escalate(first, pair, "video does not play", uuid.uuid4(), now=now)
    assert Pair.objects.get(pk=pair).held
    assert queue.assign(campaign, second, now=now).current.pair.pk != pair
