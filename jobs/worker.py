"""Run recorded jobs in this process, oldest first, printing their progress as they go: what
``manage.py startup_jobs`` does beside ``make run``'s server, claiming each job as a task
worker would (:func:`jobs.tasks.execute`), so pages show it as any other job."""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.db import close_old_connections, connection

from jobs import runner
from jobs.models import Job
from jobs.tasks import execute

Say = Callable[[str], None]


def describe(job: Job) -> str:
    """``job 3 (build mme on demo): step 2 of 4: training mme (40%)``."""
    text = f"job {job.pk} ({job.description or job.kind})"
    if job.message:
        text += f": {job.message}"
    if job.percent is not None:
        text += f" ({job.percent:.0f}%)"
    return text


def _watch(job_id: int, say: Say, stop: threading.Event, interval: float, quiet: float) -> None:
    """Say the job's progress when it changes or after ``quiet`` s without a line."""
    shown, since = "", 0.0
    try:
        while not stop.wait(interval):
            since += interval
            job = Job.objects.filter(pk=job_id).first()
            if job is None or job.finished:
                return
            text = describe(job)
            if text != shown or since >= quiet:
                say(text)
                shown, since = text, 0.0
    finally:
        connection.close()


def run_recorded(tag: str, say: Say, *, interval: float = 2.0, quiet: float = 8.0) -> list[Job]:
    """Run every queued job recorded for ``tag`` until none is left; the jobs it ran."""
    ran: list[Job] = []
    while True:
        close_old_connections()
        job = runner.recorded(tag).filter(status=Job.Status.QUEUED).first()
        if job is None:
            return ran
        say(f"{describe(job)}: starting")
        stop = threading.Event()
        watcher = threading.Thread(
            target=_watch, args=(job.pk, say, stop, interval, quiet), daemon=True
        )
        watcher.start()
        try:
            execute(job.pk)
        finally:
            stop.set()
            watcher.join()
        job.refresh_from_db()
        ran.append(job)
        if job.status == Job.Status.SUCCEEDED:
            say(f"job {job.pk} ({job.description or job.kind}): done")
        elif job.status == Job.Status.FAILED:
            say(f"job {job.pk} ({job.description or job.kind}) failed: {job.error}")
