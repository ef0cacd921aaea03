"""Import a caption file, and optionally its videos, into a dataset (all or nothing)."""

import json
import sys
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from jobs.commands import BaseCommand
from retrieval.datasets.importing import ImportSummary, import_dataset
from retrieval.formats import CAPTION_FORMATS


class Command(BaseCommand):
    help = (
        "Import captions (and optionally video files or URLs) into a dataset. Nothing is "
        "written if any line is invalid; importing into an existing dataset adds to it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, help="Dataset name (created if new).")
        parser.add_argument(
            "--format",
            required=True,
            choices=list(CAPTION_FORMATS),
            help="Format of the captions file.",
        )
        parser.add_argument("--captions", type=Path, required=True, help="Captions file.")
        media = parser.add_mutually_exclusive_group()
        media.add_argument(
            "--videos",
            type=Path,
            metavar="DIR",
            help="Directory holding the video files; every video must resolve to a file.",
        )
        media.add_argument(
            "--video-url",
            metavar="TEMPLATE",
            help="URL template with {video_id}, {key}, {start}, {end}, e.g. "
            "https://host/videos/{video_id}.mp4",
        )
        parser.add_argument(
            "--split", help="Split for records that carry none (a record's own split wins)."
        )
        parser.add_argument(
            "--output",
            choices=["table", "json"],
            default="table",
            help="Print the summary as a table (default) or as JSON.",
        )
        parser.add_argument(
            "--skip-broken",
            action="store_true",
            help="Import the rest when video files do not decode, and list the broken ones "
            "(their captions are left out); without it a broken file stops the import.",
        )
        parser.add_argument("--quiet", action="store_true", help="No progress bar.")

    def handle(self, *args, **options):
        quiet = options["quiet"] or options["verbosity"] == 0 or not sys.stderr.isatty()
        with tqdm(unit=" captions", file=sys.stderr, disable=quiet, leave=False) as bar:
            summary = import_dataset(
                name=options["name"],
                fmt=options["format"],
                captions_path=options["captions"],
                videos_dir=options["videos"],
                video_url_template=options["video_url"],
                split=options["split"],
                progress=bar.update,
                skip_broken=options["skip_broken"],
            )
        if options["output"] == "json":
            self.stdout.write(json.dumps(asdict(summary), indent=2))
        else:
            self.stdout.write(self.table(summary, options["captions"]))

    @staticmethod
    def table(summary: ImportSummary, captions: Path) -> str:
        """A short human-readable summary."""
        state = "new" if summary.dataset_created else "existing"
        splits = ", ".join(f"{name or '(none)'}: {count}" for name, count in summary.splits.items())
        rows = [
            ("videos created", f"{summary.videos_created:,}"),
            ("videos reused", f"{summary.videos_reused:,}"),
            ("captions", f"{summary.captions:,}"),
            ("queries", f"{summary.queries:,}"),
            ("splits", splits),
        ]
        if summary.media_link:
            rows.append(("media link", f"MEDIA_ROOT/{summary.media_link}"))
        if summary.derived_pending:
            rows.append(("browser files", f"{summary.derived_pending:,} to make (a media job)"))
        if summary.broken:
            rows.append(("broken files", f"{len(summary.broken):,} left out"))
            rows.append(("captions skipped", f"{summary.skipped_captions:,}"))
        lines = [
            f"Imported {captions.name} ({summary.format}) into {state} dataset "
            f"{summary.dataset!r} in {summary.seconds:.1f} s"
        ]
        lines += [f"  {label:<15} {value}" for label, value in rows]
        lines += [
            f"  broken: {item['file']} (line {item['line']}): {item['reason']}"
            for item in summary.broken
        ]
        return "\n".join(lines)
