"""Unfinished jobs as the pages ask for them ("still being prepared: job 3, 40%"), in one query."""

from jobs import runner
from jobs.models import Job

UNFINISHED = (Job.Status.QUEUED, Job.Status.RUNNING)


def unfinished_job(kind: str, **arguments) -> Job | None:
    """The oldest queued or running job of ``kind`` whose arguments include ``arguments``."""
    jobs = unfinished_jobs((kind,), **arguments)
    return jobs[0] if jobs else None


def unfinished_jobs(kinds: tuple[str, ...], **arguments) -> list[Job]:
    """Queued or running jobs of ``kinds`` whose arguments include ``arguments``, oldest first."""
    jobs = Job.objects.filter(kind__in=kinds, status__in=UNFINISHED)
    for name, value in arguments.items():
        jobs = jobs.filter(**{f"arguments__{name}": value})
    return list(jobs.order_by("pk"))


def startup_jobs() -> list[Job]:
    """The work ``make run`` deferred that is not finished yet, in the order it runs."""
    return list(runner.recorded(runner.STARTUP).filter(status__in=UNFINISHED))
