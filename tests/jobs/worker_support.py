"""Real ``db_worker`` processes for the tests that run jobs through the database queue."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.db import connection

from jobs.models import Job

ROOT = Path(__file__).resolve().parents[2]
DATABASE_TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.backend.DatabaseBackend",
        "QUEUES": ["default", "gpu"],
    }
}
WORKER = (
    "import django; django.setup(); import tests.jobs.kinds; "
    "from django.core.management import call_command; "
    "call_command('db_worker', '--queue-name', {queue!r}, '--interval', '0.2', "
    "'--no-reload', '--no-startup-delay')"
)


def worker_database_url() -> str:
    """DATABASE_URL naming the test database this test process uses."""
    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + connection.settings_dict["NAME"]))


def start_worker(queue: str) -> subprocess.Popen:
    """A ``db_worker`` process for ``queue`` on this test database, with the test kinds."""
    env = {
        **os.environ,
        "DATABASE_URL": worker_database_url(),
        "FIREPOOL_TASKS_BACKEND": "database",
        "FIREPOOL_GPU_QUEUE": "1",
        "FIREPOOL_JOB_HEARTBEAT_SECONDS": "0.5",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    return subprocess.Popen(
        [sys.executable, "-c", WORKER.format(queue=queue)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def wait_for(job: Job, condition, timeout: float = 60.0) -> Job:
    """Poll ``job`` until ``condition(job)`` holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if condition(job):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job.pk} still {job.status} ({job.error}) after {timeout} s")


def stop(worker: subprocess.Popen) -> None:
    """Kill ``worker`` (SIGKILL, as a lost machine would) and reap the process."""
    if worker.poll() is None:
        worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=30)
