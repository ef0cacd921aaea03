"""Next-task, submit, undo and escalate: the queue's rules, one annotator at a time."""

import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.judging import escalations, queue, submit
from annotation.judging.errors import AssignmentError
from annotation.models import Escalation, Judgement, Lease, Pair
from tests.factories import make_campaign


@pytest.fixture
def users(db):
    User = get_user_model()
    return [User.objects.create_user(f"a{i}", password="pw-annotator-1") for i in range(4)]


def judge(annotator, campaign, label="relevant"):
    current = queue.assign(campaign, annotator).current
    if current is None:
        return None
    return submit.submit(annotator, current.pair.pk, label, uuid.uuid4(), seconds=1.5)


def test_assign_holds_current_and_upcoming_of_same_caption(users):
    campaign = make_campaign()
    a = users[0]
    got = queue.assign(campaign, a)
    assert got.current is not None and got.upcoming is not None
    assert got.current.pair.caption_id == got.upcoming.pair.caption_id
    assert got.current.pair.position < got.upcoming.pair.position
    # Asking again returns the same leases, not new ones.
    again = queue.assign(campaign, a)
    assert again.current.pair.pk == got.current.pair.pk
    assert Lease.objects.filter(annotator=a).count() == 2


def test_submit_is_idempotent_and_moves_on(users):
    campaign = make_campaign()
    a = users[0]
    first = queue.assign(campaign, a).current.pair
    key = uuid.uuid4()
    result = submit.submit(a, first.pk, "irrelevant", key, seconds=2.0)
    assert result.created and result.assignment.current.pair.pk != first.pk
    retry = submit.submit(a, first.pk, "irrelevant", key, seconds=2.0)
    assert not retry.created and retry.judgement.pk == result.judgement.pk
    pair = Pair.objects.get(pk=first.pk)
    assert (pair.label_count, pair.relevant_count, pair.needed, pair.status) == (
        1,
        0,
        0,
        "irrelevant",
    )
    assert Judgement.objects.count() == 1
    with pytest.raises(AssignmentError) as error:
        submit.submit(users[1], first.pk, "relevant", key)
    assert error.value.code == "conflict"


def test_no_annotator_sees_a_pair_twice_and_all_get_judged(users):
    campaign = make_campaign(rate=1.0)  # every pair needs two labels
    seen = {user.pk: [] for user in users[:2]}
    for _ in range(100):
        progressed = False
        for user in users[:2]:
            result = judge(user, campaign, "relevant")
            if result is not None:
                seen[user.pk].append(result.judgement.pair_id)
                progressed = True
        if not progressed:
            break
    for pairs in seen.values():
        assert len(pairs) == len(set(pairs))
    assert set(Pair.objects.filter(campaign=campaign).values_list("label_count", flat=True)) == {2}
    assert not Pair.objects.filter(campaign=campaign, needed__gt=0).exists()


def test_disagreement_asks_a_third_annotator(users):
    campaign = make_campaign(n_queries=1, depth=1, rate=1.0)
    pair = Pair.objects.get(campaign=campaign)
    a, b, c = users[:3]
    for user, label in ((a, "relevant"), (b, "irrelevant")):
        current = queue.assign(campaign, user).current
        assert current.pair.pk == pair.pk
        submit.submit(user, pair.pk, label, uuid.uuid4())
    pair.refresh_from_db()
    assert (pair.needed, pair.status) == (1, "pending")
    assert queue.assign(campaign, a).current is None  # judged already
    submit.submit(c, queue.assign(campaign, c).current.pair.pk, "relevant", uuid.uuid4())
    pair.refresh_from_db()
    assert (pair.label_count, pair.needed, pair.status) == (3, 0, "relevant")


def test_policy_never_leases_more_than_needed(users):
    campaign = make_campaign(n_queries=1, depth=1, rate=0.0)
    assert queue.assign(campaign, users[0]).current is not None
    assert queue.assign(campaign, users[1]).current is None  # its one slot is taken


def test_expired_lease_returns_to_queue_and_late_submit(users):
    campaign = make_campaign(n_queries=1, depth=1, lease_seconds=60)
    a, b = users[:2]
    pair = queue.assign(campaign, a).current.pair
    later = timezone.now() + timedelta(seconds=61)
    got = queue.assign(campaign, b, now=later)
    assert got.current.pair.pk == pair.pk  # a's lease expired
    assert not Lease.objects.filter(annotator=a).exists()
    with pytest.raises(AssignmentError) as error:
        submit.submit(a, pair.pk, "relevant", uuid.uuid4(), now=later)
    assert error.value.code == "lease_expired"
    submit.submit(b, pair.pk, "relevant", uuid.uuid4(), now=later)


def test_undo_within_window_restores_the_pair(users):
    campaign = make_campaign()
    a = users[0]
    result = judge(a, campaign, "relevant")
    judged = result.judgement.pair_id
    back = submit.undo(a, campaign)
    assert back.current.pair.pk == judged
    pair = Pair.objects.get(pk=judged)
    assert (pair.label_count, pair.needed, pair.status) == (0, 1, "pending")
    assert Judgement.objects.get(pk=result.judgement.pk).undone_at is not None
    submit.submit(a, judged, "irrelevant", uuid.uuid4())
    assert Pair.objects.get(pk=judged).status == "irrelevant"
    judge(a, campaign)
    with pytest.raises(AssignmentError) as error:
        submit.undo(a, campaign, now=timezone.now() + timedelta(seconds=submit.UNDO_SECONDS + 1))
    assert error.value.code == "undo_window"


def test_escalation_holds_pair_until_admin_decides(users):
    campaign = make_campaign(n_queries=1, depth=1)
    a, b, admin = users[:3]
    pair = queue.assign(campaign, a).current.pair
    with pytest.raises(AssignmentError):
        escalations.escalate(a, pair.pk, "  ", uuid.uuid4())
    escalations.escalate(a, pair.pk, "video does not play", uuid.uuid4())
    assert queue.assign(campaign, b).current is None
    pair.refresh_from_db()
    assert pair.held and pair.label_count == 0
    escalation = Escalation.objects.get()
    escalations.resolve_escalation(escalation, admin, label=None)
    assert queue.assign(campaign, b).current.pair.pk == pair.pk
    escalation.refresh_from_db()
    assert escalation.resolved_at is not None


def test_progress_counts(users):
    campaign = make_campaign()
    a = users[0]
    before = queue.progress(campaign, a)
    judge(a, campaign)
    judge(a, campaign)
    after = queue.progress(campaign, a)
    assert (after.judged_today, after.judged_total) == (2, 2)
    assert after.labels_left == before.labels_left - 2
