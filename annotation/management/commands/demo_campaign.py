"""Create the demo campaign from the demo world's runs and pre-fill it in part."""

from django.core.management.base import CommandError

from annotation.simulation.demo import DEMO_CAMPAIGN, create_demo_campaign
from jobs.commands import BaseCommand
from retrieval.models import Dataset


class Command(BaseCommand):
    help = (
        "Pool the demo world's four runs at depth 10 into the campaign 'demo-campaign' and "
        "let two simulated annotators judge part of it (--fill), so agreement figures exist at "
        "once and pairs are still left for people to judge. With two of them, a tie on a "
        "doubly labelled pair waits for a third person or an admin's adjudication. Does "
        "nothing if the campaign exists."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", default="demo")
        parser.add_argument("--name", default=DEMO_CAMPAIGN)
        parser.add_argument("--depth", type=int, default=10)
        parser.add_argument("--fill", type=float, default=0.6, help="Share of labels to pre-fill.")
        parser.add_argument("--error-rate", type=float, default=0.05)
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {options['dataset']!r}; run `manage.py demo`")
        made = create_demo_campaign(
            dataset,
            name=options["name"],
            depth=options["depth"],
            fill=options["fill"],
            error_rate=options["error_rate"],
            seed=options["seed"],
        )
        if not made.done:
            self.stdout.write(f"Campaign {options['name']!r} is complete already; keeping it.")
            return
        self.stdout.write(
            f"Campaign {made.campaign.name!r} ({', '.join(made.done)}): "
            f"{made.campaign.pairs.count()} pairs from "
            f"{', '.join(made.runs)}; {made.labels} labels pre-filled by "
            f"{made.annotators} simulated annotators (error rate {options['error_rate']}); "
            f"label set {made.label_set!r} holds {made.positives} judged positives so "
            "far (re-resolve it from the campaigns page as judging goes on)."
        )
