"""Parallel starts of a kind that joins: one job, however many requests ask at once (ten
presses of "compute them now" on two gunicorn workers queued two jobs side by side)."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections, transaction
from django.utils import timezone

from jobs import runner
from jobs.models import Job
from jobs.registry import get_kind
from tests.jobs.kinds import JOINING


@pytest.mark.django_db(transaction=True)
def test_parallel_starts_of_a_joining_kind_queue_one_job(settings):
    settings.TASKS = {
        "default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend", "QUEUES": []}
    }
    barrier = threading.Barrier(8)

    def start(_) -> int:
        try:
            barrier.wait()
            return runner.start(JOINING, {"units": 1})[0].pk
        finally:
            connections.close_all()

    with ThreadPoolExecutor(8) as pool:
        started = list(pool.map(start, range(8)))
    assert Job.objects.filter(kind=JOINING.name).count() == 1
    assert set(started) == {Job.objects.get(kind=JOINING.name).pk}


@pytest.mark.django_db(transaction=True)
def test_a_job_starts_while_another_job_thread_holds_a_write():
    """A page starting a job while a job thread is inside a write transaction waits for it,
    as ``make run``'s SQLite file does (busy timeout), and queues its job: on Django's
    shared-cache memory database the start failed at once with "database table is locked"."""
    other = runner.start(JOINING, {"units": 1})[0]
    runner.finish_in_process()
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                Job.objects.filter(pk=other.pk).update(heartbeat_at=timezone.now())
                holding.set()
                done.wait(2.0)  # still inside the transaction while the start below begins
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(30)
    try:
        job, new = runner.start(get_kind("test-count"), {"units": 1})
    finally:
        done.set()
        holder.join()
    runner.finish_in_process()
    job.refresh_from_db()
    assert new and job.status == Job.Status.SUCCEEDED and job.task_id
