"""Order a campaign's judging queue by a semantic proxy and/or auto-label confident pairs."""

from django.core.management.base import CommandError
from django.db import transaction

from annotation.campaigns.lookup import get_campaign
from annotation.ordering import proxy as proxy_ordering
from annotation.ordering import proxy_queue
from jobs.commands import BaseCommand
from retrieval.proxies import PROXIES


class Command(BaseCommand):
    help = (
        "Optional settings driven by a semantic proxy (Wray et al., CVPR 2021, §4.4), off "
        "unless asked for: --order puts each caption's higher-scoring pending pairs first in "
        "the judging queue; "
        "--auto-relevant-at / --auto-irrelevant-at label pending, unlabelled pairs whose proxy "
        "score is at least / at most the threshold without a human (marked in every export "
        "by the auto_label field). What was applied is recorded in the campaign's options."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign name.")
        parser.add_argument("--proxy", required=True, choices=PROXIES, help="Semantic proxy.")
        parser.add_argument(
            "--order", action="store_true", help="Order each caption's pending pairs by score."
        )
        parser.add_argument(
            "--auto-relevant-at", type=float, help="Auto-label relevant at score >= T."
        )
        parser.add_argument(
            "--auto-irrelevant-at", type=float, help="Auto-label irrelevant at score <= T."
        )
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        relevant_at, irrelevant_at = options["auto_relevant_at"], options["auto_irrelevant_at"]
        auto = relevant_at is not None or irrelevant_at is not None
        if not options["order"] and not auto:
            raise CommandError(
                "nothing to do: give --order, --auto-relevant-at T and/or --auto-irrelevant-at T"
            )
        if auto:
            try:
                proxy_ordering.check_thresholds(relevant_at, irrelevant_at)
            except ValueError as exc:
                raise CommandError(f"bad thresholds: {exc}") from None
        campaign = get_campaign(options["campaign"])
        report: dict = {"campaign": campaign.name}
        # One transaction: on any error nothing changes. Auto-label first, so the pairs it
        # decides leave the queue before it is ordered.
        with transaction.atomic():
            if auto:
                report["auto_label"] = proxy_queue.auto_label(
                    campaign, options["proxy"], relevant_at, irrelevant_at
                )
            if options["order"]:
                report["queue_order"] = proxy_queue.order_queue(campaign, options["proxy"])
        if self.wrote_json(options, report):
            return
        lines = [f"Campaign {campaign.name!r}, proxy {options['proxy']}"]
        if "auto_label" in report:
            done = report["auto_label"]
            lines.append(
                f"  auto-labelled relevant    {done['relevant']:,} (score >= {done['relevant_at']})"
            )
            lines.append(
                f"  auto-labelled irrelevant  {done['irrelevant']:,}"
                f" (score <= {done['irrelevant_at']})"
            )
        if "queue_order" in report:
            lines.append(f"  pairs moved in the queue  {report['queue_order']['pairs_moved']:,}")
        self.stdout.write("\n".join(lines))
