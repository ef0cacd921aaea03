"""Replay a judging order against complete labels: positives found and score errors per step."""

import sys

from tqdm import tqdm

from annotation.ordering.orders import STRATEGIES
from annotation.simulation.replay import METRICS, Replay
from jobs.commands import BaseCommand
from retrieval.datasets.lookup import get_dataset, get_label_set


class Command(BaseCommand):
    help = (
        "Replay a judging order (--strategy) on a dataset's runs pooled at --depth against "
        "complete labels (--truth: the demo world's ground truth, or --labels SET) and print, "
        "per budget step, the share of the pool's positives found and each run's C@1/C@5/"
        "C@10/AP error against the complete-label scores (unjudged pairs irrelevant)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        labels = parser.add_mutually_exclusive_group(required=True)
        labels.add_argument("--labels", help="A complete label set of the dataset.")
        labels.add_argument("--truth", action="store_true", help="The demo world's truth.")
        parser.add_argument("--runs", default="all", help="Comma-separated run names, or all.")
        parser.add_argument("--depth", type=int, default=10)
        parser.add_argument("--strategy", choices=list(STRATEGIES), required=True)
        parser.add_argument("--budget", type=int, help="Judgements to replay (the whole pool).")
        parser.add_argument("--seeds", type=int, default=20, help="Query orders to average.")
        parser.add_argument("--steps", type=int, default=10, help="Budget steps reported.")
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        from annotation.simulation.replay_service import replay_dataset

        dataset = get_dataset(options["dataset"])
        label_set = get_label_set(dataset, options["labels"]) if options["labels"] else None
        names = [n.strip() for n in options["runs"].split(",") if n.strip()]
        quiet = options["verbosity"] == 0

        def progress(total):
            bar = tqdm(total=total, unit=" steps", file=sys.stderr, disable=quiet, leave=False)
            return lambda: bar.update()

        found, dropped = replay_dataset(
            dataset,
            options["strategy"],
            run_names=None if names == ["all"] else names,
            label_set=label_set,
            depth=options["depth"],
            budget=options["budget"],
            seeds=options["seeds"],
            steps=options["steps"],
            progress=progress,
        )
        if dropped:
            self.stderr.write(
                f"{dropped} queries left out: the label set does not decide "
                "every pooled pair of theirs"
            )
        if not self.wrote_json(options, found.as_dict(), indent=2):
            self.stdout.write(render_table(found))


def render_table(replay: Replay) -> str:
    """One line per budget step: judgements, positives found, each run's errors in points."""
    runs = list(replay.steps[0].errors) if replay.steps else []
    lines = [
        f"{replay.strategy}: {replay.pool_pairs} pooled pairs, {replay.pool_positives} "
        f"positives; C@1/5/10 exact after {replay.exact_after or 'more than the budget'}",
        "judged  positives  " + "  ".join(f"{run} ({'/'.join(METRICS)})" for run in runs),
    ]
    for step in replay.steps:
        found = step.positives_found / replay.pool_positives if replay.pool_positives else 0.0
        cells = ["/".join(f"{100 * step.errors[run][m]:+.1f}" for m in METRICS) for run in runs]
        lines.append(f"{step.judged:6d}  {found:9.1%}  " + "  ".join(cells))
    return "\n".join(lines)
