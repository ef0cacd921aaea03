"""Import a label file (qrels, FIRE JSON, jsonl, csv or raw labels) as a label set."""

import json

from jobs.commands import BaseCommand
from retrieval.formats.labels import DUPLICATES, DUPLICATES_HELP
from retrieval.label_sets.service import IMPORT_FORMATS, import_label_file
from retrieval.management.lookup import get_dataset


class Command(BaseCommand):
    help = (
        "Create a label set on --dataset from PATH, all or nothing. qrels: rel > 0 relevant, "
        "0 judged irrelevant, negative skipped. fire-json: captions matched by text (queries "
        "that match none are reported). jsonl/csv: the export layouts. raw: individual "
        "labels resolved by strict majority."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--format", required=True, choices=IMPORT_FORMATS)
        parser.add_argument("--name", help="Label set name (default: the file's stem).")
        parser.add_argument("--replace", action="store_true", help="Replace a set of that name.")
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")
        parser.add_argument("--duplicates", choices=DUPLICATES, help="raw only. " + DUPLICATES_HELP)

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        report = import_label_file(
            dataset,
            options["path"],
            options["format"],
            options["name"],
            replace=options["replace"],
            duplicates=options["duplicates"],
        )
        summary = report.as_dict()
        if options["json"]:
            self.stdout.write(json.dumps(summary))
            return
        self.stdout.write(
            f"Label set {summary['label_set']!r} on {dataset.name}: {summary['pairs']} pairs "
            f"({summary['relevant']} relevant, {summary['irrelevant']} irrelevant, "
            f"{summary['disagreement']} disagreements) from {summary['read']} entries."
        )
        if summary["skipped"]:
            self.stdout.write(f"Skipped {summary['skipped']} unjudged entries (negative rel).")
        for kind in ("queries", "videos"):
            unmatched = summary[f"unmatched_{kind}"]
            if unmatched:
                shown = "; ".join(repr(item) for item in unmatched[:10])
                more = f" and {len(unmatched) - 10} more" if len(unmatched) > 10 else ""
                self.stdout.write(f"{len(unmatched)} {kind} matched nothing: {shown}{more}")
