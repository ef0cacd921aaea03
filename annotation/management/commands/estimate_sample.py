"""Draw random queries whose unjudged pairs are judged next, to estimate unsettled scores."""

from dataclasses import asdict

from annotation.campaigns.lookup import get_campaign
from annotation.ordering.samples import draw_sample
from jobs.commands import BaseCommand


class Command(BaseCommand):
    help = (
        "Judge --pairs more random pairs to estimate the scores judging has not settled: "
        "queries with unjudged pooled pairs are drawn at random until --pairs pairs are "
        "covered, and all their pairs are served before anything else. Once judged, "
        "resolve_campaign and rescore report each C@K and AP as exact, bounds or an "
        "estimate with a 95%% interval."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--pairs", type=int, required=True)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        campaign = get_campaign(options["campaign"])
        draw = draw_sample(campaign, options["pairs"], options["seed"])
        summary = {"campaign": campaign.name, **asdict(draw)}
        if self.wrote_json(options, summary):
            return
        self.stdout.write(
            f"Drew {draw.queries} queries of {campaign.name!r}: their {draw.pairs} unjudged "
            f"pairs are served first (asked for {draw.requested})."
        )
