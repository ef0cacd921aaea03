"""Refit an adaptive campaign's annotator models and priors now, and recompute its pairs."""

from annotation.campaigns.lookup import get_campaign
from annotation.policy import fit as policy_fit
from jobs.commands import BaseCommand


class Command(BaseCommand):
    help = (
        "Fit the annotator confusions and class priors of an adaptive campaign from its live "
        "labels and gold answers (what the refit-policy job does), store them and recompute "
        "every labelled pair's needed labels and status."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign name.")
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        summary = policy_fit.refit(get_campaign(options["campaign"])).summary()
        if not self.wrote_json(options, summary):
            self.stdout.write(
                f"Refitted {summary['campaign']!r} on {summary['labels']} labels and "
                f"{summary['gold_answers']} gold answers from {summary['annotators']} "
                f"annotators: {summary['pairs_changed']} pairs changed."
            )
