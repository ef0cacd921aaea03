"""The demo campaign's job kind."""

from django import forms
from django.urls import reverse

from annotation.campaign_read import live_figures
from annotation.campaigns.forms import bounded
from annotation.campaigns.pooling import MAX_DEPTH
from annotation.campaigns.spec import SEED
from annotation.simulation.demo import DEMO_CAMPAIGN, create_demo_campaign
from jobs.progress import Reporter
from jobs.registry import ADMIN, JobKind, register
from retrieval.datasets.lookup import get_dataset
from retrieval.forms import DatasetForm, PickedName, dataset_names


class DemoCampaignForm(DatasetForm):
    dataset = PickedName(dataset_names, max_length=100, initial="demo")
    name = forms.CharField(max_length=200, initial=DEMO_CAMPAIGN)
    depth = forms.IntegerField(min_value=1, max_value=MAX_DEPTH, initial=10, required=False)
    fill = forms.FloatField(
        min_value=0.0,
        max_value=1.0,
        initial=0.6,
        required=False,
        help_text="Share of labels to pre-fill.",
    )
    error_rate = forms.FloatField(
        min_value=0.0,
        max_value=1.0,
        initial=0.05,
        required=False,
        help_text="How often the simulated annotators answer wrong.",
    )
    seed = bounded(SEED, initial=0, required=False)


def run_demo_campaign(reporter: Reporter, dataset: str, **options) -> dict:
    """Create the demo campaign (``options``: its name, depth, fill, error rate and seed), or
    finish one a failed run left half-made."""
    made = create_demo_campaign(
        get_dataset(dataset), **options, say=reporter.step, advance=reporter.advance
    )
    if made.done:  # its pages' figures, from the labels it ends with
        live_figures.refresh(made.campaign)
    return {
        "campaign": made.campaign.name,
        "campaign_id": made.campaign.pk,
        "page": reverse("campaign", args=[made.campaign.pk]),
        "pairs": made.campaign.pairs.count(),
        "done": ", ".join(made.done) or "nothing: it was complete already",
        "runs": list(made.runs),
        "labels": made.labels,
        "annotators": made.annotators,
        "label_set": made.label_set,
        "positives": made.positives,
    }


register(
    JobKind(
        "demo_campaign",
        "Create the demo campaign (four runs pooled, part pre-judged)",
        run_demo_campaign,
        DemoCampaignForm,
        permission=ADMIN,
        describe=lambda a: f"demo campaign {a['name']} on {a['dataset']}",
    )
)
