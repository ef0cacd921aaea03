"""Twenty annotators at once, on PostgreSQL: nothing double-leased, lost or double-counted.

Each thread is an annotator with its own database connection, looping next -> submit
through the real assignment service, retrying every fifth submit with the same UUID (a
client that never saw the answer). A watcher thread samples the leases meanwhile.
"""

import threading
import time
import uuid
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.db.models import Count

from annotation.judging import queue, submit
from annotation.models import Judgement, Lease, Pair
from annotation.policy import rules as policy
from tests.factories import make_campaign

THREADS = 20

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="concurrency is tested on PostgreSQL (`make test` starts one)",
)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("order", ["depth", "maxmean", "metric-first"])
def test_twenty_annotators_never_overcommit_and_nothing_is_lost(order):
    """Adaptive orders re-order a query's pairs on every label, in the submit's transaction:
    the guarantees hold for them too."""
    campaign = make_campaign(
        n_queries=40, depth=5, rate=0.3, seed=2, lease_seconds=600, judging_order=order
    )
    User = get_user_model()
    annotators = [
        User.objects.create_user(f"t{i}", password="pw-thread-123") for i in range(THREADS)
    ]
    acknowledged: list[tuple[uuid.UUID, int, int]] = []
    violations: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    done = threading.Event()
    start = threading.Barrier(THREADS + 2)  # annotators, the watcher and this thread

    def annotate(user, rng_seed: int) -> None:
        try:
            start.wait()
            count = 0
            while True:
                current = queue.assign(campaign, user).current
                if current is None:
                    if not queue.has_work_for(campaign, user) or errors:
                        break  # done, or another thread failed: stop rather than wait
                    time.sleep(0.05)  # others hold the remaining leases
                    continue
                key = uuid.uuid4()
                label = "relevant" if (current.pair.pk + rng_seed) % 3 == 0 else "irrelevant"
                result = submit.submit(user, current.pair.pk, label, key, seconds=1.0)
                count += 1
                if count % 5 == 0:  # the client retries: the same UUID must count once
                    retry = submit.submit(user, current.pair.pk, label, key, seconds=1.0)
                    assert not retry.created
                with lock:
                    acknowledged.append((key, user.pk, current.pair.pk))
                    assert result.created
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    def watch() -> None:
        try:
            start.wait()
            while not done.is_set():
                time.sleep(0.01)
                over = (
                    Pair.objects.filter(campaign=campaign)
                    .annotate(live=Count("leases"))
                    .values_list("pk", "live", "needed")
                )
                for pk, live, needed in over:
                    if live > needed:
                        violations.append(f"pair {pk}: {live} leases for {needed} needed labels")
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=annotate, args=(user, i)) for i, user in enumerate(annotators)
    ]
    watcher = threading.Thread(target=watch)
    for thread in [*threads, watcher]:
        thread.start()
    start.wait()
    for thread in threads:
        thread.join(timeout=300)
    done.set()
    watcher.join(timeout=30)
    assert not errors, errors[:3]
    assert not violations, violations[:5]

    stored = Counter(
        Judgement.objects.filter(pair__campaign=campaign).values_list("uuid", flat=True)
    )
    assert len(acknowledged) == sum(stored.values())
    assert all(stored[key] == 1 for key, _, _ in acknowledged)  # none lost, none doubled
    per_pair_annotator = Counter((pair, user) for _, user, pair in acknowledged)
    assert max(per_pair_annotator.values()) == 1  # nobody judged a pair twice
    assert not Lease.objects.filter(pair__campaign=campaign).exists()

    # metric-first leaves the pairs it no longer needs unlabelled, needing nothing.
    parked = Pair.objects.filter(campaign=campaign, label_count=0, needed=0)
    if order != "metric-first":
        assert not parked.exists()
    assert not Pair.objects.filter(campaign=campaign, label_count=0, needed__gt=0).exists()
    pairs = list(
        Pair.objects.filter(campaign=campaign)
        .exclude(pk__in=parked.values("pk"))
        .values_list("relevant_count", "label_count", "double")
    )
    relevant, total, double = (list(column) for column in zip(*pairs, strict=True))
    assert policy.labels_needed(relevant, total, double, campaign.max_labels).sum() == 0
    labels = Counter(pair for _, _, pair in acknowledged)
    for pk, label_count in Pair.objects.filter(campaign=campaign).values_list("pk", "label_count"):
        assert labels[pk] == label_count
    doubles = Pair.objects.filter(campaign=campaign, double=True).count()
    assert doubles == policy.second_label_count(campaign.pairs.count(), 0.3)
    judged_doubles = campaign.pairs.filter(double=True).exclude(pk__in=parked.values("pk"))
    assert campaign.pairs.filter(label_count__gte=2).count() >= judged_doubles.count()


@pytest.mark.django_db(transaction=True)
def test_discounting_while_others_judge_keeps_every_count_right():
    """An admin discounts one annotator's labels while ten others judge: every pair's counts
    still equal its counting labels, and the policy is satisfied at the end."""
    from annotation.people import service as people_service

    campaign = make_campaign(n_queries=30, depth=5, rate=0.3, seed=3, lease_seconds=600)
    User = get_user_model()
    spammer = User.objects.create_user("spam", password="pw-thread-123")
    for _ in range(40):  # the spammer labels first
        current = queue.assign(campaign, spammer).current
        if current is None:
            break
        submit.submit(spammer, current.pair.pk, "relevant", uuid.uuid4(), seconds=2.0)
    queue.release_expired(campaign, campaign.created_at.replace(year=9999))
    annotators = [User.objects.create_user(f"d{i}", password="pw-thread-123") for i in range(10)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(annotators) + 2)

    def annotate(user) -> None:
        try:
            start.wait()
            while True:
                current = queue.assign(campaign, user).current
                if current is None:
                    if not queue.has_work_for(campaign, user):
                        break
                    time.sleep(0.05)
                    continue
                label = "relevant" if current.pair.pk % 3 == 0 else "irrelevant"
                submit.submit(user, current.pair.pk, label, uuid.uuid4(), seconds=2.0)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    discounted: list[int] = []

    def admin() -> None:
        try:
            start.wait()
            time.sleep(0.3)
            discounted.append(people_service.discount(campaign, spammer))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=annotate, args=(u,)) for u in annotators]
    threads.append(threading.Thread(target=admin))
    for thread in threads:
        thread.start()
    start.wait()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors[:3]
    assert discounted and discounted[0] > 0
    for pair in Pair.objects.filter(campaign=campaign):
        live = Judgement.objects.filter(pair=pair, undone_at__isnull=True)
        assert pair.label_count == live.count(), pair.pk
        assert pair.relevant_count == live.filter(label="relevant").count(), pair.pk
        assert not live.filter(annotator=spammer).exists()
        needed = policy.labels_needed(
            [pair.relevant_count], [pair.label_count], pair.double, campaign.max_labels
        )[0]
        assert needed == 0, pair.pk
