"""Resolve a raw labels file into one label per pair (strict majority or Dawid-Skene)."""

import json
from collections.abc import Iterator
from pathlib import Path

from django.core.management.base import CommandError

from annotation.people.quality import MAJORITY, METHODS, ResolvedPairs, resolve_raw
from annotation.policy import rules as policy
from jobs.commands import BaseCommand
from retrieval.formats.csv_safety import csv_line
from retrieval.formats.labels import DUPLICATES, DUPLICATES_HELP, read_raw_jsonl
from retrieval.label_sets import status as label_status

FORMATS = ("jsonl", "csv")
COLUMNS = ("caption_id", "video_id", "label", "labels", "confidence")


class Command(BaseCommand):
    help = (
        "Resolve a raw labels JSONL file (one annotator's label per line: caption_id, "
        "video_id, annotator, label, as the campaign 'raw' export writes it) into one row per "
        "pair: caption_id, video_id, label (relevant, irrelevant or disagreement), labels "
        "(how many it rests on) and confidence (probability of relevance: 1, 0 or 0.5 under "
        "majority, the posterior under dawid-skene). No campaign is needed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--labels", type=Path, required=True, help="Raw labels JSONL file.")
        parser.add_argument(
            "--method",
            choices=METHODS,
            default=MAJORITY,
            help="majority: FIRE's strict majority (ties are disagreements); dawid-skene: "
            "per-annotator confusion matrices fitted by EM (Dawid & Skene 1979).",
        )
        parser.add_argument("--duplicates", choices=DUPLICATES, help=DUPLICATES_HELP)
        parser.add_argument("--format", choices=FORMATS, default="jsonl", help="Default: jsonl.")
        parser.add_argument("-o", "--output", type=Path, required=True, help="File to write.")

    def handle(self, *args, **options):
        records = read_raw_jsonl(options["labels"], options["duplicates"])
        resolved = resolve_raw(records, options["method"])
        output = options["output"]
        partial = output.with_name(f".{output.name}.partial")
        try:
            with open(partial, "w", encoding="utf-8", newline="") as out:
                out.writelines(rows(resolved, options["format"]))
            partial.replace(output)
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
        finally:
            partial.unlink(missing_ok=True)
        counts = policy.summary(resolved.aggregation.status)
        self.stderr.write(
            f"Wrote {len(resolved.pairs):,} pairs ({counts['relevant']:,} relevant, "
            f"{counts['irrelevant']:,} irrelevant, {counts['disagreement']:,} disagreements) "
            f"resolved by {options['method']} to {output}."
        )


def rows(resolved: ResolvedPairs, fmt: str) -> Iterator[str]:
    """One line per pair in ``fmt`` (jsonl, or csv after a header), in first-appearance order;
    csv cells a spreadsheet would run as formulas are neutralised (``csv_safety``)."""
    if fmt == "csv":
        yield csv_line(COLUMNS)
    aggregation = resolved.aggregation
    names = label_status.names(aggregation.status).tolist()
    for (caption, video), label, votes, confidence in zip(
        resolved.pairs,
        names,
        resolved.labels.tolist(),
        aggregation.confidence.tolist(),
        strict=True,
    ):
        values = (caption, video, label, votes, confidence)
        if fmt == "csv":
            yield csv_line(values)
        else:
            yield json.dumps(dict(zip(COLUMNS, values, strict=True)), ensure_ascii=False) + "\n"
