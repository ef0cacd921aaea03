"""Submit, run, retry and reap jobs: the service between pages, the CLI and the workers."""

import logging
import math
import os
import socket
import traceback
from collections.abc import Mapping
from contextlib import nullcontext
from datetime import timedelta

import numpy as np
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from config.errors import UserError
from jobs.models import Job
from jobs.progress import Reporter, beater, stale_seconds
from jobs.registry import JobKind, get_kind

logger = logging.getLogger(__name__)
WORKER_ID = f"{socket.gethostname()}:{os.getpid()}"


class JobError(UserError):
    """A job cannot be submitted or retried; the message says why."""


def check_arguments(kind: JobKind, data: Mapping) -> dict:
    """The kind's form's cleaned arguments, or JobError naming each bad field."""
    form = kind.form(data=data)
    if not form.is_valid():
        problems = "; ".join(
            f"{name}: {' '.join(str(m) for m in messages)}"
            for name, messages in form.errors.items()
        )
        raise JobError(f"{kind.name}: {problems}")
    return cleaned(form)


def cleaned(form) -> dict:
    """A valid form's values that were given (JSON-ready: names, numbers, flags)."""
    return {name: value for name, value in form.cleaned_data.items() if value not in (None, "")}


def submit(kind_name: str, data: Mapping, user=None) -> Job:
    """Validate ``data`` for the kind, record a queued job and enqueue it after commit."""
    try:
        kind = get_kind(kind_name)
    except KeyError as exc:
        raise JobError(str(exc.args[0])) from None
    return create(kind, check_arguments(kind, data), user)


def create(kind: JobKind, arguments: dict, user=None) -> Job:
    """Record a queued job of ``kind`` with checked ``arguments`` and enqueue it."""
    job = Job.objects.create(
        kind=kind.name,
        arguments=arguments,
        description=kind.describe(arguments)[:300],
        queue=kind.queue,
        created_by=user if user is not None and user.is_authenticated else None,
    )
    enqueue(job)
    return job


def enqueue(job: Job) -> None:
    """Hand the job to the task backend once the row that describes it is committed."""
    from django.conf import settings

    from jobs.tasks import run_job

    queue = job.queue
    if queue == "gpu" and not getattr(settings, "FIREPOOL_GPU_QUEUE", True):
        queue = "default"  # no GPU worker in this deployment: CPU workers take GPU jobs

    def send() -> None:
        result = run_job.using(queue_name=queue).enqueue(job.pk)
        Job.objects.filter(pk=job.pk, task_id="").update(task_id=str(result.id)[:64])

    transaction.on_commit(send)


def in_process() -> bool:
    """True when jobs run inside this process (thread or immediate backend), not a worker."""
    from django_tasks import DEFAULT_TASK_BACKEND_ALIAS, task_backends
    from django_tasks.backends.immediate import ImmediateBackend

    return isinstance(task_backends[DEFAULT_TASK_BACKEND_ALIAS], ImmediateBackend)


def retry(job: Job, user=None) -> Job:
    """A new queued job with the failed job's kind and arguments."""
    if job.status != Job.Status.FAILED:
        raise JobError(f"job {job.pk} is {job.status}; only a failed job can be retried")
    again = Job.objects.create(
        kind=job.kind,
        arguments=job.arguments,
        description=job.description,
        queue=job.queue,
        retry_of=job,
        created_by=user if user is not None and user.is_authenticated else job.created_by,
    )
    enqueue(again)
    return again


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


def reap_stale(now=None) -> int:
    """Mark failed every held job whose heartbeat is older than the stale limit.

    A held job (running, or queued on an in-process backend) is beaten by its process; a
    stale one lost that process (killed, crashed, restarted). Returns how many were reaped.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=stale_seconds())
    return Job.objects.filter(
        status__in=(Job.Status.QUEUED, Job.Status.RUNNING), heartbeat_at__lt=cutoff
    ).update(
        status=Job.Status.FAILED,
        error=(
            "The process running this job stopped answering (it was killed, crashed or "
            f"restarted); no heartbeat for over {stale_seconds():.0f} s. Retry it."
        ),
        finished_at=now,
    )
