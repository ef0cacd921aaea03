"""Make a dataset's missing browser copies and segment clips, or report where they stand."""

import itertools
import time

from jobs.commands import BaseCommand
from retrieval.datasets.lookup import get_dataset
from retrieval.media.service import make_missing, media_table, pending, retry_failed
from retrieval.models import DerivedMedia

WAIT_SECONDS = 2.0


class Command(BaseCommand):
    help = (
        "Make every browser copy and segment clip the dataset's videos wait for (H.264 + AAC "
        "MP4 with faststart, in this process), printing a line per file, and wait for those "
        "other workers are making; then the posters of the files that play as they are; "
        "--check only reports."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--check", action="store_true", help="Only report; make nothing.")
        parser.add_argument(
            "--retry-failed",
            action="store_true",
            help="Try the files whose copy failed again (after fixing the cause).",
        )

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        if options["retry_failed"] and not options["check"]:
            self.stdout.write(f"{retry_failed(dataset)} failed file(s) to try again")
        if not options["check"]:
            total = pending(dataset).count()
            done = itertools.count(1)

            def say(line: str) -> None:
                self.stdout.write(f"[{next(done)}/{total}] {line}")

            summary = make_missing(dataset, say=say)
            running = DerivedMedia.objects.filter(
                videos__dataset=dataset, status=DerivedMedia.Status.RUNNING
            )
            while running.exists():
                self.stdout.write(f"waiting for {running.distinct().count()} made by other workers")
                time.sleep(WAIT_SECONDS)
                summary = make_missing(dataset, say=say)
            self.stdout.write(
                f"Made {summary.made}, reused {summary.reused}, failed {summary.failed}; "
                f"{summary.source_seconds:g} s of video in {summary.encode_seconds:.1f} s; "
                f"{summary.posters} posters of files that play as they are."
            )
        self.stdout.write(self.report(dataset))

    @staticmethod
    def report(dataset) -> str:
        table = media_table(dataset)
        lines = [
            f"Media of {dataset.name!r}: {table.total} videos with files",
            f"  play as they are   {table.as_is}",
            f"  browser file ready {table.ready}",
            f"  waiting            {table.pending} ({table.pending_seconds:g} s of video)",
            f"  failed             {table.failed}",
            f"  broken, left out   {len(table.broken)}",
        ]
        if table.estimate_seconds is not None and table.pending:
            lines.append(f"  estimated time     {table.estimate_seconds:g} s at the rate so far")
        return "\n".join(lines)
