"""Merge label sets of one dataset into a new one (later sets win where they overlap)."""

from jobs.commands import BaseCommand
from retrieval.datasets.lookup import get_dataset, get_label_set
from retrieval.label_sets.service import merge_label_sets


class Command(BaseCommand):
    help = (
        "Union of --sets (comma-separated label set names, in order) on --dataset, saved as "
        "--name; where two sets judge the same caption-video pair, the later set's label wins."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--sets", required=True, help="Comma-separated label set names.")
        parser.add_argument("--name", required=True)
        parser.add_argument("--replace", action="store_true")
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        names = [name.strip() for name in options["sets"].split(",") if name.strip()]
        sources = [get_label_set(dataset, name) for name in names]
        merged = merge_label_sets(dataset, sources, options["name"], replace=options["replace"])
        summary = {
            "label_set": merged.name,
            "from": names,
            "pairs": merged.pair_count,
            "relevant": merged.relevant_count,
            "irrelevant": merged.irrelevant_count,
            "disagreement": merged.disagreement_count,
        }
        if not self.wrote_json(options, summary):
            self.stdout.write(
                f"Label set {merged.name!r}: {merged.pair_count} pairs ({merged.relevant_count} "
                f"relevant) merged from {', '.join(names)}."
            )
