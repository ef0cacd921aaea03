"""Judge a campaign with simulated annotators that follow the demo world's ground truth."""

import sys

from django.core.management.base import CommandError
from tqdm import tqdm

from annotation.models import Campaign
from annotation.services.simulation import simulate
from config.commands import BaseCommand


class Command(BaseCommand):
    help = (
        "Simulated annotators judge through the same assignment service as people do, "
        "answering with the demo world's exact relevance and flipping it with probability "
        "--error-rate. Needs a dataset with ground truth (the demo world)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--annotators", type=int, default=3)
        parser.add_argument("--error-rate", type=float, default=0.05)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--max-judgements", type=int, help="Stop after this many.")

    def handle(self, *args, **options):
        campaign = (
            Campaign.objects.filter(name=options["campaign"]).select_related("dataset").first()
        )
        if campaign is None:
            raise CommandError(f"no campaign named {options['campaign']!r}")
        quiet = options["verbosity"] == 0 or not sys.stderr.isatty()
        with tqdm(unit=" judgements", file=sys.stderr, disable=quiet) as bar:
            result = simulate(
                campaign,
                annotators=options["annotators"],
                error_rate=options["error_rate"],
                seed=options["seed"],
                max_judgements=options["max_judgements"],
                progress=bar.update,
            )
        self.stdout.write(
            f"{result.annotators} simulated annotators made {result.judgements} judgements "
            f"({result.flipped} deliberately wrong) in campaign {campaign.name!r}."
        )
