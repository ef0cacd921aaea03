"""Parallel starts of a kind that joins: one job, however many requests ask at once (ten
presses of "compute them now" on two gunicorn workers queued two jobs side by side)."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections

from jobs import runner
from jobs.models import Job
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
