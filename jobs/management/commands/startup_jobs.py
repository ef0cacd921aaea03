"""``manage.py startup_jobs``: run the work that set-up deferred, beside the web server."""

import signal

from config.console import Console
from jobs.commands import BaseCommand
from jobs.worker import run_recorded


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = (
        "Run the jobs that `manage.py setup_demo` recorded instead of doing them before the "
        "server could start (building minilm, mme and jpose, the demo campaign, the proxy "
        "matrices), oldest first, in this process, printing their progress; exits when none "
        "is left. `make run` starts it beside the server. Stopped (Ctrl-C, or SIGTERM when "
        "`make run` ends), it marks the job it was running as failed; the next `make run` "
        "records it again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tag", default="startup", help="Whose recorded jobs to run.")
        parser.add_argument(
            "--threads",
            type=int,
            default=1,
            help="torch threads (default 1: leave the other core to the web server).",
        )

    def handle(self, *args, tag: str, threads: int, **options):
        # A shell's background job starts with SIGINT ignored: take it back, and treat
        # SIGTERM alike, so a stopped job is recorded as stopped rather than left running.
        signal.signal(signal.SIGINT, _interrupt)
        signal.signal(signal.SIGTERM, _interrupt)
        import torch

        torch.set_num_threads(max(1, threads))
        console = Console(self.stdout)
        try:
            ran = run_recorded(tag, console.say)
        except KeyboardInterrupt:
            console.say("deferred jobs stopped; the next `make run` starts them again")
            self.finish_jobs = False  # stopped: nothing more waits
            return
        console.say("finishing the figures the deferred jobs queued")
        if ran:
            failed = [job for job in ran if job.status == job.Status.FAILED]
            console.say(
                f"deferred jobs finished: {len(ran) - len(failed)} done"
                + (f", {len(failed)} failed (see /jobs/)" if failed else "")
            )
