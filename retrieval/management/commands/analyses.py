"""Print the FIRE analyses of a dataset's runs as JSON: Tables 1, 3, 4 and the figures' data."""

import json

from jobs.commands import BaseCommand
from retrieval.management.lookup import get_dataset, get_label_set
from retrieval.scoring.reports import build_report


class Command(BaseCommand):
    help = (
        "Re-score --dataset's runs with --labels (a label set) and print, as JSON, FIRE "
        "Table 1 (original, corrected, true), Table 3 (overlap and extrapolated RBO of the "
        "top 10), Table 4 (leave one run out), the data of Figures 2, 3, 11 and 12, the "
        "annotation budget bootstrap (§4.3) and Holm-corrected significance between runs."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--labels", help="Label set name (default: original positives).")
        parser.add_argument("--metric", default="C@1", help="Per-query metric for figures.")
        parser.add_argument("--resamples", type=int, default=10_000)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--format", choices=["json"], default="json")

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        label_set = get_label_set(dataset, options["labels"]) if options["labels"] else None
        data = build_report(
            dataset,
            label_set,
            metric=options["metric"],
            resamples=options["resamples"],
            seed=options["seed"],
        )
        self.stdout.write(json.dumps(data.to_json(), indent=2))
