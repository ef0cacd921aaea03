"""Judge a campaign with simulated annotators that follow the demo world's ground truth."""

import sys
from dataclasses import asdict

from tqdm import tqdm

from annotation.campaigns.lookup import get_campaign
from annotation.simulation.live import DEFAULT_SECONDS, PROFILE_SYNTAX, parse_profiles, simulate
from jobs.commands import BaseCommand


class Command(BaseCommand):
    help = (
        "Simulated annotators judge through the same assignment service as people do, "
        "answering with the demo world's exact relevance and flipping it with probability "
        "--error-rate, or following --profile: a crowd of kinds of annotator, e.g. "
        "careful=0.6:0.02,normal=0.2:0.08,spammer=0.1:random,lazy=0.1:always-irrelevant "
        f"({PROFILE_SYNTAX}; behaviours: an error rate, random, always-irrelevant, "
        "always-relevant, adversarial; SECONDS the mean time per judgement, spammers 0.8 s "
        "by default; @AFTER>ERROR a drift to that error rate after AFTER labels). Needs a "
        "dataset with ground truth (the demo world)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--annotators", type=int, default=3)
        parser.add_argument("--error-rate", type=float, default=0.05)
        parser.add_argument(
            "--profile", help=f"Comma-separated {PROFILE_SYNTAX} (overrides --error-rate)."
        )
        parser.add_argument(
            "--seconds-mean",
            type=float,
            default=DEFAULT_SECONDS,
            help="Mean seconds per judgement without --profile.",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--max-judgements", type=int, help="Stop after this many.")
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        campaign = get_campaign(options["campaign"])
        profiles = parse_profiles(options["profile"]) if options["profile"] else None
        quiet = options["verbosity"] == 0 or not sys.stderr.isatty()
        with tqdm(unit=" judgements", file=sys.stderr, disable=quiet) as bar:
            result = simulate(
                campaign,
                annotators=options["annotators"],
                error_rate=options["error_rate"],
                seed=options["seed"],
                max_judgements=options["max_judgements"],
                seconds_mean=options["seconds_mean"],
                profiles=profiles,
                progress=bar.update,
            )
        if self.wrote_json(options, asdict(result)):
            return
        self.stdout.write(
            f"{result.annotators} simulated annotators made {result.judgements} judgements "
            f"({result.flipped} deliberately wrong) in campaign {campaign.name!r}."
        )
        if profiles:
            for person in result.people:
                self.stdout.write(
                    f"  {person.username} ({person.profile}): {person.judgements} judgements, "
                    f"{person.wrong} wrong"
                )
