"""Resolve a campaign's pairs into a retrieval label set that re-scoring reads."""

from annotation.campaign_read.resolution import MAJORITY, METHODS, resolve_campaign
from annotation.campaigns.lookup import get_campaign
from jobs.commands import BaseCommand


class Command(BaseCommand):
    help = (
        "Store the campaign's final labels (single label, strict majority or an admin's "
        "adjudication; disagreements kept apart) as a label set named after the campaign "
        "(or --name), replacing an earlier resolution of the same campaign. --method "
        "dawid-skene resolves instead by per-annotator confusion matrices fitted by EM "
        "(Dawid & Skene 1979), using gold pairs as known items; every pair records its "
        "probability of relevance (confidence)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--name", help="Label set name (default: the campaign's name).")
        parser.add_argument(
            "--method",
            choices=METHODS,
            default=MAJORITY,
            help="majority (FIRE's strict majority, the default) or dawid-skene.",
        )
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        campaign = get_campaign(options["campaign"])
        label_set = resolve_campaign(campaign, options["name"], options["method"])
        summary = {
            "label_set": label_set.name,
            "dataset": campaign.dataset.name,
            "method": label_set.metadata["method"],
            "pairs": label_set.pair_count,
            "relevant": label_set.relevant_count,
            "irrelevant": label_set.irrelevant_count,
            "disagreement": label_set.disagreement_count,
            "pending": label_set.metadata.get("pending", 0),
        }
        if self.wrote_json(options, summary):
            return
        self.stdout.write(
            f"Label set {label_set.name!r} on {campaign.dataset.name} by {summary['method']}: "
            f"{summary['pairs']} pairs "
            f"({summary['relevant']} relevant, {summary['irrelevant']} irrelevant, "
            f"{summary['disagreement']} disagreements); {summary['pending']} pairs still pending."
        )
