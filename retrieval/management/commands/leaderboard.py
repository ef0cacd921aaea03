"""Print a dataset's leaderboard under a label set, as a table, CSV, JSON or LaTeX."""

from jobs.commands import BaseCommand
from retrieval.management.lookup import get_dataset
from retrieval.scoring.leaderboard import DEFAULT_RESAMPLES, sort_keys
from retrieval.scoring.leaderboard_formats import FORMATS, LATEX_LAYOUTS, render
from retrieval.scoring.leaderboard_service import build_leaderboard, read_request


class Command(BaseCommand):
    help = (
        "One row per run of a dataset: original and corrected C@1, C@5, C@10, AP, nDCG@10 and "
        "MedR with 95% bootstrap intervals over queries, Judged@10, whether the run was "
        "pooled, the best run per column and those not significantly different from it "
        "(paired randomization test, Holm), and for unpooled runs the leave-one-run-out bias "
        "and Webber & Park's adjusted estimate."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="The dataset whose runs to rank.")
        parser.add_argument(
            "--labels",
            default="",
            help="The label set of corrected positives (default: the dataset's default set).",
        )
        parser.add_argument("--format", choices=FORMATS, default="table")
        parser.add_argument(
            "--layout",
            choices=LATEX_LAYOUTS,
            default="rows",
            help="LaTeX only: one row per run, or FIRE Table 1's 'A (B + C)' cells.",
        )
        parser.add_argument(
            "--sort",
            default="C@1",
            help=f"Column to sort by, a leading '-' reverses: {', '.join(sort_keys())}.",
        )
        parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        asked = read_request(dataset, options["labels"], options["sort"])
        board = build_leaderboard(
            dataset,
            asked.label_set,
            sort=asked.sort,
            resamples=max(1, options["resamples"]),
            seed=options["seed"],
        )
        self.stdout.write(render(board, options["format"], layout=options["layout"]), ending="")
