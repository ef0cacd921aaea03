"""The one django.tasks task: run the job whose id it carries."""

from django_tasks import task

from jobs import runner


@task()
def run_job(job_id: int) -> dict | None:
    """Run job ``job_id`` (see :func:`jobs.runner.execute`)."""
    return runner.execute(job_id)
