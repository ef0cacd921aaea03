"""Jobs through the real database queue and real `db_worker` processes, on PostgreSQL.

A job is enqueued and run by a separate worker process; a GPU job waits for a worker of the
"gpu" queue; a worker killed with SIGKILL in the middle of a job leaves a job that is found
by its stale heartbeat, reported as failed, and completed when retried on a new worker.
"""

import time

import pytest
from django.db import connection

from jobs import runner
from jobs.models import Job
from jobs.progress import reap_stale
from tests.jobs import kinds  # noqa: F401 - registers the test kinds here as in the workers
from tests.jobs.worker_support import DATABASE_TASKS, start_worker, stop, wait_for

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="the worker test runs on PostgreSQL (`make test` starts one)",
    ),
    pytest.mark.slow,
]


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_jobs_and_a_killed_workers_job_is_reaped_and_retried(settings, tmp_path):
    settings.TASKS = DATABASE_TASKS
    settings.FIREPOOL_GPU_QUEUE = True
    settings.FIREPOOL_JOB_STALE_SECONDS = 3
    from django_tasks_db.models import DBTaskResult

    workers = [start_worker("default")]
    try:
        # 1. Enqueued through the database queue, run by the worker process.
        job = runner.submit("test-count", {"units": "5"})
        assert DBTaskResult.objects.filter(queue_name="default").count() == 1
        job = wait_for(job, lambda j: j.finished)
        assert job.status == Job.Status.SUCCEEDED and job.result == {"counted": 5}
        assert job.worker.endswith(f":{workers[0].pid}")

        # 2. A GPU job waits for a worker of the gpu queue.
        gpu = runner.submit("test-gpu-count", {"units": "2"})
        time.sleep(2.0)
        gpu.refresh_from_db()
        assert gpu.status == Job.Status.QUEUED
        workers.append(start_worker("gpu"))
        gpu = wait_for(gpu, lambda j: j.finished)
        assert gpu.status == Job.Status.SUCCEEDED
        assert gpu.worker.endswith(f":{workers[1].pid}")

        # 3. kill -9 the worker in the middle of a job.
        # It waits after its first unit while the gate exists, so it is surely mid-way.
        gate = tmp_path / "job-gate"
        gate.touch()
        slow = runner.submit("test-count", {"units": "40", "seconds": "4", "gate": str(gate)})
        slow = wait_for(slow, lambda j: j.status == Job.Status.RUNNING and j.done > 0)
        stop(workers[0])
        time.sleep(4.0)
        assert reap_stale() == 1
        slow.refresh_from_db()
        assert slow.status == Job.Status.FAILED and "stopped answering" in slow.error
        assert 0 < slow.done < 40

        # ... and retried on a new worker, it completes.
        gate.unlink()
        again = runner.retry(slow)
        workers.append(start_worker("default"))
        again = wait_for(again, lambda j: j.finished)
        assert again.status == Job.Status.SUCCEEDED and again.result == {"counted": 40}
        assert Job.objects.filter(status=Job.Status.RUNNING).count() == 0
    finally:
        for worker in workers:
            stop(worker)
