"""Create a judging campaign by pooling runs' top-k videos per query caption."""

import argparse
import json
import time
from pathlib import Path

from django.core.management.base import CommandError

from annotation.campaigns import lifecycle, settings
from annotation.campaigns import spec as campaign_spec
from annotation.campaigns.forms import CampaignSettingsForm
from annotation.policy import rules as policy
from jobs.commands import BaseCommand
from retrieval.management.lookup import get_dataset, get_run


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {exc}") from None


class Command(BaseCommand):
    help = (
        "Pool the top --depth videos of each run for every query caption (FIRE system "
        "pooling), leaving out each caption's own video and pairs judged in earlier "
        "campaigns on the dataset; optionally sample --queries N captions with --seed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--runs", required=True, help="Comma-separated run names.")
        parser.add_argument("--depth", type=int, default=campaign_spec.DEFAULT_DEPTH)
        parser.add_argument("--queries", type=int, help="Sample this many query captions.")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--policy",
            choices=policy.POLICIES,
            default=policy.FIRE,
            help="How many labels a pair gets: fire (one, a second for the --second-label-rate "
            "sample, a third while they tie) or adaptive (more, each from another annotator, "
            "while the pair's label is less sure than --confidence). Default %(default)s.",
        )
        parser.add_argument(
            "--confidence",
            type=float,
            metavar="C",
            help="Adaptive policy: the posterior probability a pair's label must reach "
            f"(between {policy.CONFIDENCE_RANGE[0]} and {policy.CONFIDENCE_RANGE[1]}; "
            f"default {policy.DEFAULT_CONFIDENCE}).",
        )
        parser.add_argument(
            "--second-label-rate",
            type=float,
            help="Fire policy: share of pairs labelled twice "
            f"(default {policy.DEFAULT_SECOND_LABEL_RATE}; 0 under adaptive).",
        )
        parser.add_argument(
            "--max-labels",
            type=int,
            help=f"Cap on labels per pair (default {policy.DEFAULT_CAP} under fire, "
            f"{policy.DEFAULT_ADAPTIVE_CAP} under adaptive).",
        )
        parser.add_argument(
            "--lease-seconds", type=int, default=campaign_spec.DEFAULT_LEASE_SECONDS
        )
        parser.add_argument(
            "--no-roles",
            dest="show_roles",
            action="store_false",
            help="Do not underline the captions' semantic roles on the judging page.",
        )
        parser.add_argument(
            "--judging-order",
            choices=settings.JUDGING_ORDERS,
            default=settings.DEFAULT_STRATEGY,
            help="Which pair is served next (default: %(default)s, caption by caption).",
        )
        parser.add_argument("--budget", type=int, help="Stop serving pairs after this many labels.")
        parser.add_argument(
            "--gold-rate",
            type=float,
            default=settings.DEFAULT_GOLD_RATE,
            help="Share of tasks that are gold pairs, once the campaign has any "
            "(default %(default)s).",
        )
        parser.add_argument(
            "--qualification",
            type=int,
            default=0,
            metavar="N",
            help="Annotators judge N training pairs from the gold pairs before real work "
            "(default 0: no qualification).",
        )
        parser.add_argument(
            "--qualification-threshold",
            type=float,
            default=settings.DEFAULT_THRESHOLD,
            help="Training accuracy that admits an annotator (default %(default)s).",
        )
        parser.add_argument(
            "--speed-floor",
            type=float,
            default=settings.DEFAULT_FLOOR_SECONDS,
            metavar="SECONDS",
            help="Median seconds per judgement below which an annotator is paused "
            "(default %(default)s; 0: never).",
        )
        parser.add_argument(
            "--guidelines",
            metavar="FILE",
            type=_read_text,
            help="A text file of guidelines annotators read (default: FIRE's).",
        )
        parser.add_argument(
            "--gold",
            metavar="FILE",
            help="Gold pairs to import with the campaign (csv or jsonl, as 'gold import'); "
            "with --qualification it must hold enough of each label, and without it a "
            "campaign that requires qualification starts paused.",
        )
        parser.add_argument(
            "--extends",
            metavar="LABEL_SET",
            help="Complete this label set of the dataset: pool only pairs it does not judge; "
            "resolving the campaign makes a new version of it.",
        )
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        names = [name.strip() for name in options["runs"].split(",") if name.strip()]
        runs = [get_run(dataset, name) for name in names]
        form = CampaignSettingsForm(
            {
                field: options[field]
                for field in CampaignSettingsForm.base_fields
                if options[field] is not None
            }
        )
        if not form.is_valid():
            raise CommandError(
                "; ".join(
                    f"--{field.replace('_', '-')}: {' '.join(messages)}"
                    for field, messages in form.errors.items()
                )
            )
        spec = form.spec()
        began = time.perf_counter()
        upload = None
        if options["gold"]:
            upload = lifecycle.GoldUpload(Path(options["gold"]), options["gold"])
        campaign = lifecycle.open_campaign(dataset, runs, spec, gold_file=upload)
        pairs = campaign.pairs.count()
        doubles = campaign.pairs.filter(double=True).count()
        summary = {
            "campaign": campaign.name,
            "dataset": dataset.name,
            "runs": names,
            "pairs": pairs,
            "second_label_pairs": doubles,
            "policy": spec.settings.label_policy.name,
            "max_labels": spec.max_labels,
            "judging_order": spec.settings.judging.strategy,
            "budget": spec.settings.judging.budget,
            "extends": spec.extends,
            "parked_pairs": campaign.pairs.filter(needed=0, label_count=0).count(),
            "queries": campaign.pairs.values("caption_id").distinct().count(),
            "status": campaign.status,
            "gold_pairs": campaign.gold_pairs.count(),
            "seconds": round(time.perf_counter() - began, 3),
        }
        if options["format"] == "json":
            self.stdout.write(json.dumps(summary))
        else:
            self.stdout.write(
                f"Campaign {campaign.name!r}: {pairs} pairs from {summary['queries']} queries "
                f"({doubles} to be labelled twice) pooled from {', '.join(names)} at depth "
                f"{spec.depth} in {summary['seconds']} s."
                + (f" {summary['gold_pairs']} gold pairs." if summary["gold_pairs"] else "")
                + (
                    " It starts paused: qualification needs gold pairs (import or promote "
                    "them, then resume it)."
                    if campaign.status == campaign.Status.PAUSED
                    else ""
                )
            )
