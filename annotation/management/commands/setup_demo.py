"""``manage.py setup_demo``: what ``make setup`` runs, in one process, never silent for long."""

from django.core.management import call_command

from annotation import startup
from config.console import Console
from jobs.commands import BaseCommand


class Command(BaseCommand):
    help = (
        "Migrate, collect static files, build what the server needs at once (the demo "
        "dataset, the random run, the demo accounts) and record the rest as jobs for "
        "`manage.py startup_jobs` (minilm, training mme and jpose, the demo campaign, the "
        "proxy matrices). Prints a timestamped line at least every 8 seconds. Rebuilds nothing "
        "that exists, so a second run takes seconds."
    )

    def add_arguments(self, parser):
        parser.add_argument("--videos", type=int, default=startup.DEMO_VIDEOS)
        parser.add_argument("--workers", type=int, default=2, help="Rendering processes.")
        parser.add_argument(
            "--no-deferred",
            action="store_true",
            help="Record no jobs for the deferred work (build it later with `manage.py demo`).",
        )

    def handle(self, *args, videos: int, workers: int, no_deferred: bool, **options):
        console = Console(self.stdout)
        with console.ticking("migrating the database"):
            call_command("migrate", interactive=False, verbosity=0)
        with console.ticking("collecting static files"):
            call_command("collectstatic", interactive=False, verbosity=0)
        startup.build_quick(console, videos=videos, workers=workers)
        call_command("create_demo_users", stdout=self.stdout)
        if no_deferred:
            return
        pending = startup.record_deferred()
        if not pending:
            console.say("the demo world is complete")
            return
        console.say("the server starts now; still being prepared (shown on the home page):")
        for step, job in pending:
            console.say(f"  job {job.pk}: {step.product} ({job.description})")
