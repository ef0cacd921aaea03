"""Submit and retry jobs: a job is checked against its kind's form, recorded as a queued row
and handed to :func:`jobs.tasks.enqueue`."""

from collections.abc import Mapping
from datetime import datetime

from django.db import transaction
from django.db.models import Q

from config.backends import backend
from config.errors import NotFound, UserError
from jobs.models import Job
from jobs.registry import JobKind, get_kind
from jobs.tasks import enqueue


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


def submit(
    kind_name: str, data: Mapping, user=None, *, join_running: bool | datetime = True
) -> Job:
    """Validate ``data`` for the kind, record a queued job and enqueue it after commit (for
    a kind that ``joins``, see :func:`start`)."""
    try:
        kind = get_kind(kind_name)
    except KeyError as exc:
        raise JobError(str(exc.args[0])) from None
    return start(kind, check_arguments(kind, data), user, join_running=join_running)[0]


RECORDED = "recorded:"
"""``task_id`` prefix of a job recorded for a named worker rather than the task backend."""
STARTUP = "startup"
"""The worker ``make run`` starts beside the server (``manage.py startup_jobs``)."""


def record(kind_name: str, data: Mapping, tag: str) -> Job:
    """Validate ``data`` and record a queued job no task backend is told about, for the worker
    named ``tag`` (set-up's process ends before the thread backend could run it)."""
    kind = get_kind(kind_name)
    return _new_job(kind, check_arguments(kind, data), task_id=f"{RECORDED}{tag}"[:64])


def _new_job(kind: JobKind, arguments: dict, **fields: object) -> Job:
    """A queued job of ``kind`` with checked ``arguments`` (not yet enqueued)."""
    description = kind.describe(arguments)[:300]
    return Job.objects.create(
        kind=kind.name, arguments=arguments, description=description, queue=kind.queue, **fields
    )


def recorded(tag: str):
    """The jobs recorded for ``tag``, oldest first."""
    return Job.objects.filter(task_id=f"{RECORDED}{tag}"[:64]).order_by("pk")


UNFINISHED = (Job.Status.QUEUED, Job.Status.RUNNING)


def startup_jobs() -> list[Job]:
    """The work ``make run`` deferred that is not finished yet, in the order it runs."""
    return list(recorded(STARTUP).filter(status__in=UNFINISHED))


def unfinished_jobs(kinds: tuple[str, ...], **arguments) -> list[Job]:
    """Queued or running jobs of ``kinds`` whose arguments include ``arguments``, oldest first
    (what the pages show as "still being prepared: job 3, 40%", in one query)."""
    jobs = Job.objects.filter(kind__in=kinds, status__in=UNFINISHED)
    for name, value in arguments.items():
        jobs = jobs.filter(**{f"arguments__{name}": value})
    return list(jobs.order_by("pk"))


def unfinished_job(kind: str, **arguments) -> Job | None:
    """The oldest queued or running job of ``kind`` whose arguments include ``arguments``."""
    jobs = unfinished_jobs((kind,), **arguments)
    return jobs[0] if jobs else None


def create(kind: JobKind, arguments: dict, user=None) -> Job:
    """Record a queued job of ``kind`` with checked ``arguments`` and enqueue it; for a kind
    that ``joins``, the job of the same arguments already queued or running, if any."""
    return start(kind, arguments, user)[0]


def start(
    kind: JobKind, arguments: dict, user=None, *, join_running: bool | datetime = True
) -> tuple[Job, bool]:
    """:func:`create`, and whether the job is new (False: a waiting one was joined). Without
    ``join_running`` only a queued job is joined; with a moment, also a running job that
    started at or after it (it read the change)."""
    with transaction.atomic():
        if kind.joins:
            # Starts one at a time, so parallel ones find each other's job.
            backend().hold_starts(kind.name)
            waiting = unfinished(kind.name, arguments, running=join_running)
            if waiting is not None:
                return waiting, False
        created_by = user if getattr(user, "is_authenticated", False) else None
        job = _new_job(kind, arguments, created_by=created_by)
        enqueue(job)
    return job, True


def unfinished(kind_name: str, arguments: dict, *, running: bool | datetime = True) -> Job | None:
    """The oldest job of the kind with exactly these arguments that is queued, or running
    (with ``running`` True; with a moment, running since then at least)."""
    waiting = Q(status=Job.Status.QUEUED)
    if running is True:
        waiting |= Q(status=Job.Status.RUNNING)
    elif isinstance(running, datetime):
        waiting |= Q(status=Job.Status.RUNNING, started_at__gte=running)
    candidates = Job.objects.filter(waiting, kind=kind_name).order_by("pk")
    return next((job for job in candidates if job.arguments == arguments), None)


def retry(job: Job, user=None) -> Job:
    """A new queued job with the failed job's kind and arguments."""
    if job.status != Job.Status.FAILED:
        raise JobError(f"job {job.pk} is {job.status}; only a failed job can be retried")
    again = Job.objects.create(
        **{name: getattr(job, name) for name in ("kind", "arguments", "description", "queue")},
        retry_of=job,
        created_by=user if getattr(user, "is_authenticated", False) else job.created_by,
    )
    enqueue(again)
    return again


def finish_in_process() -> None:
    """Wait for the jobs this process queued on an in-process backend (before a command exits)."""
    from django_tasks import task_backends

    for task_backend in task_backends.all():
        drain = getattr(task_backend, "drain", None)
        if drain is not None:
            drain()


def recent_jobs():
    """Every job, newest first (the model's order), with who started it: the jobs page."""
    return Job.objects.select_related("created_by")


def jobs_of_kind(kind_name: str):
    """The jobs of one kind (what an API that follows that kind's jobs looks a job up among)."""
    return Job.objects.filter(kind=kind_name)


def find_job(job_id: int, finished: bool = False) -> Job:
    """Job ``job_id`` with who started it and what it retried (only a succeeded one when
    ``finished``), or :class:`config.errors.NotFound`."""
    found = Job.objects.select_related("created_by", "retry_of").filter(pk=job_id)
    if finished:
        found = found.filter(status=Job.Status.SUCCEEDED)
    job = found.first()
    if job is None:
        raise NotFound(f"no job {job_id}" + (" that finished" if finished else ""))
    return job
