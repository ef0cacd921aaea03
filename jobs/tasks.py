"""The one django.tasks task and both its ends: :func:`enqueue` hands a recorded job to the
task backend once its row is committed; the worker's :func:`run_job` claims it, runs its kind
and records how it ended."""

import logging
import math
import os
import socket
import traceback
from contextlib import nullcontext

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django_tasks import DEFAULT_TASK_BACKEND_ALIAS, task, task_backends
from django_tasks.backends.immediate import ImmediateBackend

from config.errors import UserError
from jobs.models import Job
from jobs.progress import Reporter, beater
from jobs.registry import get_kind

logger = logging.getLogger(__name__)
WORKER_ID = f"{socket.gethostname()}:{os.getpid()}"


@task()
def run_job(job_id: int) -> dict | None:
    """Run job ``job_id`` (see :func:`execute`)."""
    return execute(job_id)


OWN_WORKERS = {
    "gpu": "FIREPOOL_GPU_QUEUE",
    "media": "FIREPOOL_MEDIA_QUEUE",
    "live": "FIREPOOL_LIVE_QUEUE",
}
"""The queues that have workers of their own where their setting is on."""


def enqueue(job: Job) -> None:
    """Hand the job to the task backend once the row that describes it is committed."""
    queue = job.queue
    if queue in OWN_WORKERS and not getattr(settings, OWN_WORKERS[queue], True):
        queue = "default"  # no worker of its own in this deployment: the default ones take it

    def send() -> None:
        result = run_job.using(queue_name=queue).enqueue(job.pk)
        Job.objects.filter(pk=job.pk, task_id="").update(task_id=str(result.id)[:64])

    transaction.on_commit(send)


def in_process() -> bool:
    """True when jobs run inside this process (thread or immediate backend), not a worker."""
    return isinstance(task_backends[DEFAULT_TASK_BACKEND_ALIAS], ImmediateBackend)


def execute(job_id: int) -> dict | None:
    """Run a queued job in this process, claimed by one conditional UPDATE so that a task
    delivered twice runs once; a job no longer queued is skipped."""
    now = timezone.now()
    claimed = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING,
        started_at=now,
        heartbeat_at=now,
        attempts=F("attempts") + 1,
        worker=WORKER_ID,
    )
    if not claimed:
        return None
    job = Job.objects.get(pk=job_id)
    beater.hold(job_id)
    try:
        return _run(job)
    finally:
        beater.release(job_id)


def _run(job: Job) -> dict | None:
    reporter = Reporter(job.pk)
    try:
        kind = get_kind(job.kind)
    except KeyError as exc:  # a kind removed since the job was queued
        _fail(job, str(exc.args[0]), exc)
        return None
    try:
        with transaction.atomic() if kind.atomic else nullcontext():
            result = kind.run(reporter, **job.arguments) or {}
            result = json_ready(result if isinstance(result, dict) else {"value": result})
            output = str(result.pop("output", "") or "")
            Job.objects.filter(pk=job.pk).update(
                status=Job.Status.SUCCEEDED,
                result=result,
                output=output,
                done=reporter.total if reporter.total is not None else reporter.done,
                total=reporter.total,
                message="",
                finished_at=timezone.now(),
            )
    except (KeyboardInterrupt, SystemExit) as exc:
        _fail(job, "The worker was stopped while running this job.", exc)
        raise
    except Exception as exc:  # every failure is recorded on the job, never re-raised
        internal = (
            f"Internal error ({type(exc).__name__}): {str(exc)[:500] or 'no message'}. "
            "An admin can read the details on the job's admin page."
        )
        _fail(job, user_message(exc) or internal, exc)
        return None
    return result


def json_ready(value):
    """``value`` with NaN and infinities as None, numpy scalars as numbers, tuples as lists."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(item) for item in value]
    return value


def user_message(exc: BaseException) -> str:
    """The message of an error the user can fix (a :class:`UserError` or a form's
    ``ValidationError``), or "" for anything else (a bug)."""
    if isinstance(exc, UserError):
        return str(exc)
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return ""


def _fail(job: Job, error: str, exc: BaseException) -> None:
    logger.warning("job %s (%s) failed: %s", job.pk, job.kind, error)
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.FAILED,
        error=error,
        traceback="".join(traceback.format_exception(exc))[-20000:],
        finished_at=timezone.now(),
    )
