"""Re-score runs with corrected positives, from the database or from TREC files."""

import json
from collections.abc import Sequence

from django.core.management.base import CommandError

from jobs.commands import BaseCommand, add_form_options, check_options
from jobs.runner import cleaned
from retrieval.datasets.lookup import get_dataset, get_label_set
from retrieval.formats.csv_safety import csv_line
from retrieval.forms import split_names
from retrieval.scoring.jobs import RescoreForm
from retrieval.scoring.metrics import METRIC_NAMES
from retrieval.scoring.rescoring import (
    Rescoring,
    interval_cell,
    interval_legend,
    rescore_trec_files,
    table_cell,
)
from retrieval.scoring.score_intervals import interval_metrics

TABLE_METRICS = ("C@1", "C@5", "C@10", "AP", "FIRE-AP", "nDCG@10", "Judged@10", "bpref")
BLOCK_TITLES = {
    "corrected": "Corrected positives: A (B + C) = corrected (original + gain), in points",
    "leave_one_out": "Leave-one-run-out (FIRE Table 4 'New'): positives only the run pooled removed",
    "true": "True scores (exhaustive ground truth)",
}


class Command(BaseCommand):
    help = (
        "Score runs under original, corrected (original + judged relevant), leave-one-run-out "
        "and, on synthetic datasets, true positives. Database mode: --dataset D [--labels "
        "SET] [--runs A,B]. File mode, no database: --qrels FILE [--original-qrels FILE] "
        "--run FILE [--run FILE ...]. Means are over queries with at least one positive; "
        "unanswered queries count 0 (trec_eval -c)."
    )

    def add_arguments(self, parser):
        add_form_options(parser, RescoreForm, initial=False)  # database mode
        parser.add_argument("--qrels", help="File mode: TREC qrels of the corrected positives.")
        parser.add_argument("--original-qrels", help="File mode: TREC qrels of the originals.")
        parser.add_argument("--run", action="append", default=[], help="File mode: a TREC run.")
        parser.add_argument("--format", choices=["table", "json", "csv"], default="table")

    def handle(self, *args, **options):
        if options["dataset"] and (options["qrels"] or options["run"]):
            raise CommandError("choose database mode (--dataset) or file mode (--qrels/--run)")
        if options["dataset"]:
            result = self.from_database(options)
        elif options["qrels"] and options["run"]:
            result = rescore_trec_files(options["qrels"], options["run"], options["original_qrels"])
        else:
            raise CommandError("give --dataset, or --qrels with at least one --run")
        self.stdout.write(render(result, options["format"]))

    def from_database(self, options) -> Rescoring:
        """Database mode, validated by the ``rescore`` job kind's form."""
        from retrieval.scoring.rescoring_service import rescore_dataset

        given = cleaned(check_options(RescoreForm, options))
        dataset = get_dataset(given["dataset"])
        label_set = get_label_set(dataset, given["labels"]) if given.get("labels") else None
        return rescore_dataset(
            dataset,
            label_set,
            split_names(given.get("runs", "")) or None,
            only_labelled=given.get("only_labelled", False),
        ).result


def render(result: Rescoring, fmt: str) -> str:
    """The result as JSON, CSV (one row per run and positive set; a metric a block lacks is
    empty; names neutralised against spreadsheet formulas; after the metrics, ``M low`` and
    ``M high`` of each corrected C@K, AP and nDCG@10's 95% interval, on the corrected rows
    only, equal to the score where it is exact) or FIRE Table 1 text, followed by the
    corrected scores' intervals where some are not exact."""
    if fmt == "json":
        return json.dumps(result.as_dict(), indent=2)
    intervals = result.intervals  # computed once, for every row
    if fmt == "csv":
        ends = [f"{name} {end}" for name in interval_metrics() for end in ("low", "high")]
        lines = [csv_line(["run", "positives", *METRIC_NAMES, *ends])]
        for block in ("corrected", "original", "leave_one_out", "true"):
            for run, means in result.means(block).items():
                held = intervals.get(run, {}) if block == "corrected" else {}
                bounds = [
                    getattr(held[name], end) if name in held else None
                    for name in interval_metrics()
                    for end in ("low", "high")
                ]
                lines.append(
                    csv_line([run, block, *(means.get(name) for name in METRIC_NAMES), *bounds])
                )
        return "".join(lines).rstrip("\n")
    lines = [f"{result.n_queries} queries"]
    original = result.means("original")
    for block, title in BLOCK_TITLES.items():
        means = result.means(block)
        if not means:
            continue
        if block == "corrected" and not original:
            title = "Scores (no original positives given, so no gain to show)"
        rows = {}
        for run, values in means.items():
            base = original.get(run) if block == "corrected" else None
            rows[run] = [table_cell(values[m], base[m] if base else None) for m in TABLE_METRICS]
        lines += ["", title, *_table(rows, TABLE_METRICS, 22)]
    shown = [interval for scores in intervals.values() for interval in scores.values()]
    if any(interval.parts for interval in shown):
        lines += ["", "Corrected scores with their intervals [low–high] from the labels, in points"]
        lines.append(interval_legend(shown))
        names = interval_metrics()
        rows = {
            run: [interval_cell(scores[m]) for m in names if m in scores]
            for run, scores in intervals.items()
        }
        lines += _table(rows, names, 20)
    if result.kinds:
        lines += ["", "How settled each corrected score is (judging stopped early)"]
        rows = {
            run: [f"{metric} {settled_text(score)}" for metric, score in scores.items()]
            for run, scores in result.kinds.items()
        }
        lines += _table(rows, (), 0, "; ")
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines)


def _table(rows: dict, header: Sequence[str], width: int, sep: str = "  ") -> list[str]:
    """A run column, then each row's cells right-aligned to ``width`` (under ``header``, if any)."""
    pad = max(len(run) for run in rows) + 2
    lined = [("run", header)] if header else []
    return [
        run.ljust(pad) + sep.join(c.rjust(width) for c in cells)
        for run, cells in [*lined, *rows.items()]
    ]


def settled_text(score) -> str:
    """``exact 41.2``, ``open`` (bounds: unjudged pairs can still move it, its one interval in
    the table above holds what they allow) or ``estimate 44.1`` (its interval is above too),
    in points: one interval per score."""
    return "open" if score.kind == "bounds" else f"{score.kind} {100 * score.value:.1f}"
