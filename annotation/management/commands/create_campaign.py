"""Create a judging campaign by pooling runs' top-k videos per query caption."""

import argparse
import time
from pathlib import Path

from annotation.campaigns import lifecycle
from annotation.campaigns.forms import CampaignSettingsForm
from jobs.commands import BaseCommand, add_form_options, check_options
from retrieval.datasets.lookup import get_dataset, get_run


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
        parser.add_argument("--runs", required=True, help="Comma-separated run names.")
        add_form_options(
            parser, CampaignSettingsForm, skip=("show_roles", "guidelines"), initial=False
        )
        parser.add_argument(
            "--no-roles",
            dest="show_roles",
            action="store_false",
            help="Do not underline the captions' semantic roles on the judging page.",
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
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        names = [name.strip() for name in options["runs"].split(",") if name.strip()]
        runs = [get_run(dataset, name) for name in names]
        spec = check_options(CampaignSettingsForm, options).spec()
        began = time.perf_counter()
        gold = options["gold"]
        upload = lifecycle.GoldUpload(Path(gold), gold) if gold else None
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
            "settle": list(spec.settings.settle),
            "half_width": spec.settings.half_width,
            "extends": spec.extends,
            "parked_pairs": campaign.pairs.filter(needed=0, label_count=0).count(),
            "queries": campaign.pairs.values("caption_id").distinct().count(),
            "status": campaign.status,
            "gold_pairs": campaign.gold_pairs.count(),
            "seconds": round(time.perf_counter() - began, 3),
        }
        if not self.wrote_json(options, summary):
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
