"""Report annotator agreement for a campaign, or for a raw labels file (FIRE §3.2, Table 2)."""

from pathlib import Path

from django.core.management.base import CommandError

from annotation.campaign_read.reporting import (
    AgreementReport,
    PairStatus,
    campaign_report,
    file_report,
)
from annotation.campaigns.lookup import get_campaign
from jobs.commands import BaseCommand
from retrieval.formats.labels import DUPLICATES, DUPLICATES_HELP, read_raw_jsonl

DASH = "—"


class Command(BaseCommand):
    help = (
        "Agreement between annotators (FIRE §3.2, Table 2, Fig. 7): pairs, labels, the share "
        "resolved to a label, percent agreement and Krippendorff's alpha (nominal) with 95% "
        "bootstrap intervals over pairs, agreement by number of labels, and per annotator. "
        "Reads a campaign's live judgements (--campaign) or a JSONL file with one label per "
        'line (--labels: {"caption_id", "video_id", "annotator", "label", optional "seconds"}).'
    )

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group()
        source.add_argument("--campaign", help="Campaign name.")
        source.add_argument("--labels", type=Path, help="Raw labels JSONL file.")
        parser.add_argument("--format", choices=["table", "json"], default="table")
        parser.add_argument(
            "--resamples",
            type=int,
            default=1000,
            help="Bootstrap resamples of pairs for the intervals (0: no intervals).",
        )
        parser.add_argument("--seed", type=int, default=0, help="Bootstrap seed.")
        parser.add_argument(
            "--duplicates",
            choices=DUPLICATES,
            help="--labels only. " + DUPLICATES_HELP + " With all, an annotator's repeated "
            "labels on a pair also count among its co-annotators' labels.",
        )

    def handle(self, *args, **options):
        if (options["campaign"] is None) == (options["labels"] is None):
            raise CommandError("give exactly one of --campaign NAME or --labels FILE")
        if options["duplicates"] and options["labels"] is None:
            raise CommandError("--duplicates applies to a --labels file only")
        if options["resamples"] < 0:
            raise CommandError("--resamples must be 0 or more")
        bootstrap = {"resamples": options["resamples"], "seed": options["seed"]}
        if options["campaign"] is not None:
            found = campaign_report(get_campaign(options["campaign"]), **bootstrap)
            title = f"Campaign {found.campaign!r}"
            report, status, pool_pairs = found.agreement, found.status, found.pool_pairs
            data = found.to_json()
        else:
            path = options["labels"]
            report = file_report(read_raw_jsonl(path, options["duplicates"]), **bootstrap)
            title = f"Labels file {path}"
            status = pool_pairs = None
            data = {"file": str(path), **report.to_json()}
        if not self.wrote_json(options, data):
            self.stdout.write("\n".join(table(title, report, status, pool_pairs)))


def percent(value: float | None) -> str:
    return DASH if value is None else f"{100 * value:.1f}%"


def decimal(value: float) -> str:
    return f"{value:.3f}"


def interval(bounds: tuple[float, float] | None, show) -> str:
    return f" [95% CI {show(bounds[0])} to {show(bounds[1])}]" if bounds else ""


def table(
    title: str,
    report: AgreementReport,
    status: PairStatus | None = None,
    pool_pairs: int | None = None,
) -> list[str]:
    """The report as readable lines: summary, notes, by number of labels, per annotator."""
    alpha = report.krippendorff_alpha
    pool = f" (of {pool_pairs:,} pooled)" if pool_pairs is not None else ""
    if status is not None:
        resolved = (
            f"{percent(status.resolved_share)} of complete pairs (relevant {status.relevant:,}, "
            f"irrelevant {status.irrelevant:,}, disagreement {status.disagreement:,}, "
            f"pending {status.pending:,})"
        )
    else:
        resolved = f"{percent(report.resolved_share)} of labelled pairs (strict majority)"
    summary = {
        "pairs labelled": f"{report.pairs:,}{pool}",
        "labels": f"{report.labels:,}",
        "labels per pair": f"{report.labels_per_pair:.2f}",
        "resolved to a label": resolved,
        "percent agreement": f"{percent(report.percent_agreement)}"
        f"{interval(report.intervals.percent_agreement, percent)} over "
        f"{report.multiply_labelled_pairs:,} pairs with 2+ labels",
        "Krippendorff's alpha": f"{DASH if alpha is None else decimal(alpha)}"
        f"{interval(report.intervals.krippendorff_alpha, decimal)} (nominal)",
    }
    lines = [title, *(f"  {name:<22} {value}" for name, value in summary.items())]
    lines += [f"  note: {note}" for note in report.notes or []]
    lines += ["", "By number of labels (FIRE Fig. 7)", f"  {'labels':>6}  {'pairs':>10}  agreement"]
    for row in report.by_label_count:
        lines.append(f"  {row.labels:>6}  {row.pairs:>10,}  {percent(row.percent_agreement):>9}")
    lines += [
        "",
        "Annotators",
        f"  {'annotator':<20} {'labels':>9} {'relevant':>9} {'w/ resolved':>12} "
        f"{'w/ others':>10} {'median s':>9}",
    ]
    for row in report.annotators:
        median = row.median_seconds
        lines.append(
            f"  {row.annotator:<20} {row.labels:>9,} {percent(row.relevant_share):>9} "
            f"{percent(row.agreement_with_resolved):>12} "
            f"{percent(row.agreement_with_coannotators):>10} "
            f"{DASH if median is None else f'{median:.1f}':>9}"
        )
    return lines
