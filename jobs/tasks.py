"""The one django.tasks task and both its ends: enqueueing a job, and running it in a worker.

:func:`enqueue` hands a recorded job to the task backend once its row is committed; the
backend's worker calls :func:`run_job`, which claims the job, runs its kind and records how
it ended. Submitting (checking arguments, recording the row) is :mod:`jobs.runner`'s.
"""

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


def enqueue(job: Job) -> None:
    """Hand the job to the task backend once the row that describes it is committed."""
    queue = job.queue
    if queue == "gpu" and not getattr(settings, "FIREPOOL_GPU_QUEUE", True):
        queue = "default"  # no GPU worker in this deployment: CPU workers take GPU jobs
    if queue == "media" and not getattr(settings, "FIREPOOL_MEDIA_QUEUE", True):
        queue = "default"  # no media worker: the default workers make the copies
    if queue == "live" and not getattr(settings, "FIREPOOL_LIVE_QUEUE", True):
        queue = "default"  # no live worker: figures and refits wait behind other jobs

    def send() -> None:
        result = run_job.using(queue_name=queue).enqueue(job.pk)
        Job.objects.filter(pk=job.pk, task_id="").update(task_id=str(result.id)[:64])

    transaction.on_commit(send)


def in_process() -> bool:
    """True when jobs run inside this process (thread or immediate backend), not a worker."""
    return isinstance(task_backends[DEFAULT_TASK_BACKEND_ALIAS], ImmediateBackend)


def execute(job_id: int) -> dict | None:
    """Run a queued job in this process; called by the task backend's worker.

    The claim is one conditional UPDATE, so a job is never run twice even if its task is
    delivered twice; a job no longer queued (reaped, or already run) is skipped.
    """
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
        # Also a result the database refuses: still say how it ended (for an atomic kind,
        # after its writes were taken back).
        _fail(job, user_message(exc) or _internal_error(exc), exc)
        return None
    return result


def json_ready(value):
    """``value`` with NaN and infinities as None, numpy scalars as Python numbers and tuples
    as lists (JSON columns refuse NaN); mappings and sequences are walked."""
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
    """The message of an error the user can fix, or "" for anything else (a bug).

    User errors are a :class:`UserError` from a service or a lookup (an unknown dataset or
    model is a :class:`config.errors.NotFound`) and a form's ``ValidationError``.
    """
    if isinstance(exc, UserError):
        return str(exc)
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return ""


def _internal_error(exc: BaseException) -> str:
    return (
        f"Internal error ({type(exc).__name__}): {str(exc)[:500] or 'no message'}. "
        "An admin can read the details on the job's admin page."
    )


def _fail(job: Job, error: str, exc: BaseException) -> None:
    logger.warning("job %s (%s) failed: %s", job.pk, job.kind, error)
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.FAILED,
        error=error,
        traceback="".join(traceback.format_exception(exc))[-20000:],
        finished_at=timezone.now(),
    )
