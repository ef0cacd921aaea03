"""Export a campaign's labels: csv, jsonl, TREC qrels, raw labels or FIRE JSON."""

import sys
import time

from django.core.management.base import CommandError

from annotation.campaign_read.exports import export_to_file, write_export
from annotation.campaign_read.jobs import ExportForm
from annotation.campaigns.lookup import get_campaign
from jobs.commands import BaseCommand, add_form_options, check_options
from jobs.runner import cleaned


class Command(BaseCommand):
    help = (
        "Stream a campaign's labels to a file (or '-' for standard output): csv and jsonl "
        "(one row per resolved or disagreeing pair), qrels (judged negatives as 0, original "
        "positives as 1), raw (every label), fire-json (the FIRE release layout); gold and "
        "gold-csv list the campaign's gold pairs with every answer on them (never labels)."
    )

    def add_arguments(self, parser):
        add_form_options(parser, ExportForm, initial=False)  # as the export job kind
        parser.add_argument("-o", "--output", required=True, help="File to write, or '-'.")

    def handle(self, *args, **options):
        given = cleaned(check_options(ExportForm, options))
        campaign = get_campaign(given["campaign"])
        began = time.perf_counter()
        output = options["output"]
        written = write_to(output, campaign, given["format"], given.get("method"))
        if written is not None:
            self.stderr.write(
                f"Wrote {given['format']} export of {campaign.name!r} to {output} "
                f"({written:,} characters) in {time.perf_counter() - began:.2f} s."
            )


def write_to(output: str, campaign, fmt: str, method: str | None = None) -> int | None:
    """Write the export to the file ``output`` (the characters written) or, for '-', to
    standard output (None); an OS error is a ``CommandError`` naming the output."""
    try:
        if output != "-":
            return export_to_file(campaign, fmt, output, method)
        write_export(campaign, fmt, sys.stdout, method)
        sys.stdout.flush()
    except OSError as exc:
        raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
    return None
