"""A judging server killed with SIGKILL mid-campaign loses nothing and counts nothing twice.

A real gunicorn serves the test database; annotator threads judge a small campaign with
a 3-second lease through the HTTP API, while a job worker (`db_worker`) runs a job. Halfway,
the gunicorn master and workers and the job worker are killed at once and the server is
started again: half the annotators never come back (their browsers closed with the crash),
the others retry their unanswered submit with the same UUID.
Then every acknowledged judgement must be stored exactly once, no pair may hold more
labels than the policy asked for, the leases of the annotators who left must expire and
their pairs go to others, the campaign must be judged to the end, and the killed job must be
reported failed by its stale heartbeat and complete when retried. PostgreSQL only,
like the concurrency tests; ``bench/load.py`` runs the same at 600,000 pairs.

Beside it: a submit racing the release of its own expired lease (which the restart
provokes) does not deadlock.
"""

import http.client
import json
import threading
import time
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.db import connection, connections
from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from annotation.judging import queue, submit, task_ids
from annotation.models import (
    Campaign,
    Judgement,
    Lease,
    Pair,
)
from annotation.policy import rules as policy
from config.roles import ANNOTATOR, ensure_groups
from jobs import runner
from jobs.models import Job
from jobs.progress import reap_stale
from tests.factories import make_campaign
from tests.jobs import kinds  # noqa: F401 - the slow job the killed worker runs
from tests.jobs.worker_support import DATABASE_TASKS, start_worker, stop, wait_for
from tests.server_support import Server, free_port

LEASE_SECONDS = 3
ANNOTATORS = 6
LEAVING = 3
"""Annotators whose browsers close with the crash: they never send another request."""
KILL_AFTER = 35
"""Acknowledged judgements before the crash (the campaign needs about 110 labels)."""

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="crash safety is tested on PostgreSQL (`make test` starts one)",
)


class Unanswered(Exception):
    """No HTTP answer (refused, reset, timed out) or a 5xx: the request may be retried."""


def call(port: int, method: str, path: str, session: str, body: dict | None = None):
    """One API request with session and CSRF cookies; (status, JSON or None)."""
    csrf = "c" * 32
    headers = {"Cookie": f"sessionid={session}; csrftoken={csrf}", "X-CSRFToken": csrf}
    payload = None
    if body is not None:
        payload = json.dumps(body)
        headers["Content-Type"] = "application/json"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, payload, headers)
        response = conn.getresponse()
        status, data = response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:
        raise Unanswered(str(exc)) from exc
    finally:
        conn.close()
    if status >= 500:
        raise Unanswered(f"HTTP {status}")
    try:
        return status, json.loads(data)
    except ValueError:
        return status, None


def log_in(users) -> dict[int, str]:
    """A session per user, written directly (the server reads the same session table)."""
    sessions = {}
    for user in users:
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        sessions[user.pk] = store.session_key
    return sessions


def over_policy(campaign: Campaign) -> list[int]:
    """Pairs with a judgement stored when the policy no longer asked for one."""
    rows = (
        Judgement.objects.filter(pair__campaign=campaign, undone_at__isnull=True)
        .order_by("pair_id", "created_at", "pk")
        .values_list("pair_id", "label", "pair__double")
    )
    labels: dict[int, list[bool]] = {}
    excess = []
    for pair_id, label, double in rows:
        earlier = labels.setdefault(pair_id, [])
        if policy.needed_for(earlier, double, campaign.max_labels) <= 0:
            excess.append(pair_id)
        earlier.append(label == Judgement.Label.RELEVANT)
    return excess


def wait_for_backends_to_go(others_than: int, timeout: float = 10.0) -> None:
    """Wait until PostgreSQL has ended the killed workers' sessions (their transactions abort)."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
            )
            if cursor.fetchone()[0] <= others_than:
                return
            time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_sigkill_mid_campaign_loses_nothing_and_leases_expire(tmp_path, settings):
    # A job worker runs a job meanwhile; it is killed with the web server.
    settings.TASKS = DATABASE_TASKS
    settings.FIREPOOL_JOB_STALE_SECONDS = 3
    # The job counts one unit, then waits while the gate file exists: it is still running
    # when the worker is killed, however slowly this machine set the test up.
    gate = tmp_path / "job-gate"
    gate.touch()
    job = runner.submit("test-count", {"units": "30", "seconds": "0.3", "gate": str(gate)})
    worker = start_worker("default")
    campaign = make_campaign(n_queries=20, depth=4, rate=0.3, seed=3)
    # Shorter than any admin may set (10 s), so that leases run out during the test.
    Campaign.objects.filter(pk=campaign.pk).update(lease_seconds=LEASE_SECONDS)
    campaign.refresh_from_db()
    users = [
        get_user_model().objects.create_user(f"crash{i}", password="pw-crash-annotator")
        for i in range(ANNOTATORS)
    ]
    ensure_groups()[ANNOTATOR].user_set.add(*users)
    sessions = log_in(users)
    leaving = {user.pk for user in users[:LEAVING]}
    base = f"/api/campaigns/{campaign.pk}/"

    server = Server(free_port(), tmp_path / "gunicorn.log")
    acknowledged: list[tuple[str, int, int]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    crashed = threading.Event()

    def annotate(user_id: int) -> None:
        session = sessions[user_id]
        try:
            deadline = time.monotonic() + 50
            while time.monotonic() < deadline:
                if crashed.is_set() and user_id in leaving:
                    return
                try:
                    status, body = call(server.port, "POST", base + "next/", session)
                except Unanswered:
                    time.sleep(0.05)
                    continue
                assert status == 200, body
                if body["current"] is None:
                    if body["finished"]:
                        return
                    time.sleep(0.1)  # the rest is leased to others, perhaps to those who left
                    continue
                pair = body["current"]["pair"]  # the task's opaque id
                key = str(uuid.uuid4())
                pair_id = task_ids.decode(user_id, pair)
                label = "relevant" if (pair_id + user_id) % 3 == 0 else "irrelevant"
                payload = {"pair": pair, "label": label, "uuid": key, "seconds": 1.5}
                while time.monotonic() < deadline:
                    try:
                        status, body = call(server.port, "POST", base + "submit/", session, payload)
                    except Unanswered:
                        if crashed.is_set() and user_id in leaving:
                            return  # never acknowledged: must not count
                        time.sleep(0.05)
                        continue  # the same UUID again: counted once whatever happened
                    if status == 200:
                        assert body["judgement"] == key
                        with lock:
                            acknowledged.append((key, user_id, pair_id))
                    else:
                        assert status == 409, body  # lease ran out while the server was down
                    break
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=annotate, args=(user.pk,)) for user in users]
    server.start()
    try:
        server.wait_until_up()
        wait_for(job, lambda j: j.status == Job.Status.RUNNING and j.done > 0)
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while len(acknowledged) < KILL_AFTER and time.monotonic() < deadline and not errors:
            time.sleep(0.01)
        assert len(acknowledged) >= KILL_AFTER, (errors, server.log_path.read_text()[-2000:])

        crashed.set()
        server.kill()
        stop(worker)
        job.refresh_from_db()
        assert job.status == Job.Status.RUNNING  # killed in the middle of its work
        wait_for_backends_to_go(others_than=0)
        abandoned = list(
            Lease.objects.filter(pair__campaign=campaign, annotator_id__in=leaving).values_list(
                "pair_id", "expires_at"
            )
        )
        server.start()
        server.wait_until_up()
        restarted = timezone.now()

        stale: list[tuple[int, object]] = []
        while any(thread.is_alive() for thread in threads):
            now = timezone.now()
            if now - restarted > timedelta(seconds=2):
                # Expired leases are released by the next request for work (every 0.1 s here).
                stale += Lease.objects.filter(
                    pair__campaign=campaign, expires_at__lt=now - timedelta(seconds=2)
                ).values_list("pair_id", "expires_at")
            time.sleep(0.1)
        for thread in threads:
            thread.join()
    finally:
        server.kill()
        stop(worker)
    assert not errors, errors[:3]

    # The killed worker's job is found by its stale heartbeat, and a retry completes it.
    time.sleep(max(0.0, 3.5 - (timezone.now() - restarted).total_seconds()))
    assert reap_stale() == 1
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "stopped answering" in job.error
    gate.unlink()  # the retry counts straight through
    again = runner.retry(job)
    worker = start_worker("default")
    try:
        again = wait_for(again, lambda j: j.finished)
    finally:
        stop(worker)
    assert again.status == Job.Status.SUCCEEDED and again.result == {"counted": 30}

    live = Judgement.objects.filter(pair__campaign=campaign, undone_at__isnull=True)
    stored = Counter(str(key) for key in live.values_list("uuid", flat=True))
    assert all(stored[key] == 1 for key, _, _ in acknowledged)  # none lost, none twice
    twice = live.values("pair_id", "annotator_id").annotate(n=Count("pk")).filter(n__gt=1)
    assert not twice.exists()
    assert over_policy(campaign) == []

    # The leases of those who left ran out and their pairs went to others afterwards.
    assert abandoned, "the crash left no lease behind: nothing about expiry was tested"
    assert stale == []
    for pair_id, expires_at in abandoned:
        assert live.filter(
            pair_id=pair_id, created_at__gte=expires_at, annotator_id__in=set(sessions) - leaving
        ).exists(), f"pair {pair_id} was not handed out again after its lease expired"

    # The campaign was judged to the end, and the pairs' counters agree with the rows.
    left = list(Lease.objects.filter(pair__campaign=campaign).values("pair_id", "expires_at"))
    assert left == [], (left, timezone.now())
    pairs = Pair.objects.filter(campaign=campaign)
    assert pairs.aggregate(left=Sum("needed"))["left"] == 0
    per_pair = Counter(live.values_list("pair_id", flat=True))
    for pk, label_count in pairs.values_list("pk", "label_count"):
        assert per_pair[pk] == label_count
    assert queue.campaign_totals(campaign) == (pairs.count(), 0)
    log = server.log_path.read_text()
    assert "Traceback" not in log, log[-3000:]


@pytest.mark.django_db(transaction=True)
def test_submit_racing_the_release_of_its_expired_lease_does_not_deadlock(monkeypatch):
    """A submit on a pair whose lease just expired, while another annotator's request
    releases that lease: both take the pair's lock before the lease's, so neither waits
    for the other in a cycle (this deadlocked, a 500, when releases locked leases first)."""
    campaign = make_campaign(n_queries=2, depth=2, lease_seconds=60)
    late, other = (
        get_user_model().objects.create_user(f"race{i}", password="pw-race-annotator")
        for i in range(2)
    )
    pair = queue.assign(campaign, late).current.pair
    Lease.objects.filter(annotator=late).update(expires_at=timezone.now() - timedelta(seconds=1))

    original_delete = QuerySet.delete
    submitting = threading.Event()

    def delete_slowly(queryset):
        # The submit holds the pair's lock here and is about to delete its lease.
        if queryset.model is Lease and threading.current_thread().name == "late":
            submitting.set()
            time.sleep(0.5)
        return original_delete(queryset)

    monkeypatch.setattr(QuerySet, "delete", delete_slowly)
    errors: list[BaseException] = []

    def run(work) -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    key = uuid.uuid4()
    submitter = threading.Thread(
        target=run,
        args=(lambda: submit.submit(late, pair.pk, "relevant", key),),
        name="late",
    )
    submitter.start()
    assert submitting.wait(10)
    release = threading.Thread(target=run, args=(lambda: queue.assign(campaign, other),))
    release.start()
    submitter.join(30)
    release.join(30)
    assert not errors, errors
    assert Judgement.objects.get(uuid=key).pair_id == pair.pk
    for checked in Pair.objects.filter(campaign=campaign):
        assert checked.leased == Lease.objects.filter(pair=checked).count()
