"""Create the demo campaign from the demo world's runs and pre-fill it in part."""

from django.core.management.base import CommandError

from annotation.campaign_read.resolution import resolve_campaign
from annotation.models import Campaign
from annotation.services.campaigns import CampaignSpec, create_campaign
from annotation.services.simulation import simulate
from config.commands import BaseCommand
from retrieval.models import Dataset, Run

DEMO_RUNS = ("random", "minilm", "mme", "jpose")


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
        parser.add_argument("--name", default="demo-campaign")
        parser.add_argument("--depth", type=int, default=10)
        parser.add_argument("--fill", type=float, default=0.6, help="Share of labels to pre-fill.")
        parser.add_argument("--error-rate", type=float, default=0.05)
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **options):
        if Campaign.objects.filter(name=options["name"]).exists():
            self.stdout.write(f"Campaign {options['name']!r} already exists; keeping it.")
            return
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {options['dataset']!r}; run `manage.py demo`")
        runs = list(Run.objects.filter(dataset=dataset, name__in=DEMO_RUNS))
        runs.sort(key=lambda run: DEMO_RUNS.index(run.name))
        if not runs:
            raise CommandError(f"dataset {dataset.name!r} has no demo runs; run `manage.py demo`")
        campaign = create_campaign(
            dataset,
            runs,
            CampaignSpec(name=options["name"], depth=options["depth"], seed=options["seed"]),
        )
        labels = sum(campaign.pairs.values_list("needed", flat=True))
        result = simulate(
            campaign,
            annotators=2,
            error_rate=options["error_rate"],
            seed=options["seed"],
            max_judgements=int(labels * options["fill"]),
        )
        label_set = resolve_campaign(campaign)
        self.stdout.write(
            f"Campaign {campaign.name!r}: {campaign.pairs.count()} pairs from "
            f"{', '.join(run.name for run in runs)}; {result.judgements} labels pre-filled by "
            f"{result.annotators} simulated annotators (error rate {options['error_rate']}); "
            f"label set {label_set.name!r} holds {label_set.relevant_count} judged positives so "
            "far (re-resolve it from the campaigns page as judging goes on)."
        )
