"""Submit, list, show, retry and reap background jobs from the command line."""

import time

from django.core.management.base import CommandError

from jobs import runner
from jobs.commands import BaseCommand
from jobs.models import Job
from jobs.progress import reap_stale
from jobs.registry import kinds
from jobs.tasks import in_process


class Command(BaseCommand):
    help = (
        "Background jobs. 'submit KIND name=value ...' queues a job on the configured task "
        "backend (FIREPOOL_TASKS_BACKEND); 'list', 'show ID', 'retry ID', 'reap' (mark jobs "
        "whose worker stopped answering as failed) and 'kinds'. Workers of the database "
        "backend run with `manage.py db_worker` (add --queue-name gpu on a GPU machine)."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        submit = sub.add_parser("submit", help="Queue a job: KIND name=value ...")
        submit.add_argument("kind")
        submit.add_argument("values", nargs="*", metavar="name=value")
        submit.add_argument(
            "--wait",
            action="store_true",
            help="Wait until it finishes (always so with an in-process backend, where the job "
            "would end with this command).",
        )
        listing = sub.add_parser("list", help="Recent jobs.")
        listing.add_argument("--limit", type=int, default=20)
        listing.add_argument("--status", choices=[s.value for s in Job.Status])
        show = sub.add_parser("show", help="One job.")
        show.add_argument("id", type=int)
        retry = sub.add_parser("retry", help="Queue a failed job again.")
        retry.add_argument("id", type=int)
        sub.add_parser("reap", help="Mark jobs whose worker stopped answering as failed.")
        sub.add_parser("kinds", help="The kinds of job and their arguments.")
        for each in (submit, listing, show, retry):
            each.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        action = options["action"]
        if action == "kinds":
            for kind in kinds():
                fields = ", ".join(
                    name + ("" if field.required else "?")
                    for name, field in kind.form.base_fields.items()
                )
                self.stdout.write(f"{kind.name:10} [{kind.queue}] {kind.title}: {fields}")
            return
        if action == "reap":
            self.stdout.write(f"Reaped {reap_stale()} job(s).")
            return
        if action == "list":
            jobs = Job.objects.all()
            if options["status"]:
                jobs = jobs.filter(status=options["status"])
            self.emit([describe(job) for job in jobs[: options["limit"]]], options)
            return
        if action == "submit":
            data = dict(parse_value(text) for text in options["values"])
            job = runner.submit(options["kind"], data)
            if options["wait"] or in_process():
                job = wait(job)
        else:
            job = Job.objects.filter(pk=options["id"]).first()
            if job is None:
                raise CommandError(f"no job {options['id']}")
            if action == "retry":
                job = runner.retry(job)
                if in_process():
                    job = wait(job)
        job.refresh_from_db()
        self.emit(describe(job), options)
        if job.status == Job.Status.FAILED and action in ("submit", "show"):
            raise CommandError(f"job {job.pk} failed: {job.error}")

    def emit(self, data, options) -> None:
        if self.wrote_json(options, data, default=str):
            return
        for row in data if isinstance(data, list) else [data]:
            line = f"job {row['id']} {row['kind']} [{row['status']}] {row['description']}"
            if row["status"] == "running" and row["total"]:
                line += f" {row['done']}/{row['total']} {row['message']}"
            if row["error"]:
                line += f"\n  error: {row['error']}"
            self.stdout.write(line)


def parse_value(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise CommandError(f"arguments are name=value pairs, not {text!r}")
    return name.replace("-", "_"), value


SHOWN = (
    "kind status description arguments queue done total message error result output attempts "
    "created_at finished_at"
).split()


def describe(job: Job) -> dict:
    return {"id": job.pk, **{name: getattr(job, name) for name in SHOWN}}


def wait(job: Job, poll: float = 0.5) -> Job:
    """Block until ``job`` finishes (an in-process backend runs it meanwhile)."""
    while True:
        job.refresh_from_db()
        if job.finished:
            return job
        reap_stale()
        time.sleep(poll)
