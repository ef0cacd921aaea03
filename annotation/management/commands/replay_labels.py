"""Replay a labelling policy (fire or adaptive) on a crowd file and score it against gold."""

import sys

from tqdm import tqdm

from annotation.policy import rules as policy
from annotation.simulation.crowd_service import replay_labels
from jobs.commands import BaseCommand
from retrieval.formats.labels import DUPLICATES, DUPLICATES_HELP


class Command(BaseCommand):
    help = (
        "Replay a labelling policy on a crowd whose labels are all known: each pair's labels "
        "are taken one at a time in a seeded random order, only when the policy asks for "
        "another; the annotator model learns only from labels already taken. --labels is a "
        "raw label file (JSON lines: caption_id, video_id, annotator, label), --gold a JSON "
        "lines file of trusted labels (caption_id, video_id, label) used only to score. "
        "Prints labels used and accuracy on the gold pairs (a disagreement counts as wrong), "
        "with Dawid-Skene and majority on every available label for scale."
    )

    def add_arguments(self, parser):
        parser.add_argument("--labels", required=True, help="The raw label file (JSON lines).")
        parser.add_argument("--gold", required=True, help="Gold labels of some pairs (JSON lines).")
        parser.add_argument("--policy", choices=policy.POLICIES, required=True)
        parser.add_argument(
            "--confidence",
            type=float,
            default=policy.DEFAULT_CONFIDENCE,
            help="Adaptive: ask for another label while the posterior of a pair's resolved "
            f"label is below this (default {policy.DEFAULT_CONFIDENCE}).",
        )
        parser.add_argument(
            "--max-labels",
            type=int,
            help=f"Labels per pair at most (default {policy.DEFAULT_CAP} for fire, "
            f"{policy.DEFAULT_ADAPTIVE_CAP} for adaptive).",
        )
        parser.add_argument("--seeds", type=int, default=10, help="Seeded replays to average.")
        parser.add_argument("--duplicates", choices=DUPLICATES, help=DUPLICATES_HELP)
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        quiet = options["verbosity"] == 0
        bar = tqdm(total=options["seeds"], unit=" seeds", file=sys.stderr, disable=quiet)
        summary = replay_labels(
            options["labels"],
            options["gold"],
            options["policy"],
            confidence=options["confidence"],
            max_labels=options["max_labels"],
            seeds=options["seeds"],
            duplicates=options["duplicates"],
            progress=lambda done: bar.update(done - bar.n),
        )
        bar.close()
        if self.wrote_json(options, summary.as_dict(), indent=2):
            return
        confidence = "" if summary.confidence is None else f", confidence {summary.confidence}"
        rows = [
            ("policy", f"{summary.policy} (max {summary.max_labels} labels{confidence})"),
            ("pairs", f"{summary.pairs} ({summary.gold_pairs} with gold)"),
            ("annotators", str(summary.annotators)),
            (
                "labels used",
                f"{summary.labels_used:,.1f} of {summary.labels_available:,} "
                f"({100 * summary.labels_used_share:.1f}%), mean of {summary.seeds} seeds",
            ),
            ("accuracy", f"{100 * summary.accuracy:.2f}%"),
            ("Dawid-Skene, every label", f"{100 * summary.accuracy_all_labels:.2f}%"),
            ("majority, every label", f"{100 * summary.accuracy_majority_all_labels:.2f}%"),
        ]
        if summary.gold_without_labels:
            rows.append(("gold pairs with no label", str(summary.gold_without_labels)))
        width = max(len(name) for name, _ in rows)
        self.stdout.write("\n".join(f"{name:<{width}}  {value}" for name, value in rows))
