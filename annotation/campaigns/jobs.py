"""The pool job kind: runs pooled into a judging campaign, with its uploaded gold file."""

from django import forms
from django.db import transaction
from django.urls import reverse

from annotation.campaigns import lifecycle
from annotation.campaigns.forms import CampaignSettingsForm
from annotation.campaigns.service import CampaignError, check_spec
from annotation.campaigns.spec import CampaignSpec
from config.errors import UserError
from jobs.progress import Reporter
from jobs.registry import ADMIN, JobKind, register
from retrieval.datasets.lookup import get_dataset, get_run
from retrieval.datasets.uploads import discard, input_file
from retrieval.forms import DatasetForm, split_names


class PoolForm(DatasetForm, CampaignSettingsForm):
    """The campaign form plus the dataset and runs, all checked before the job is queued."""

    runs = forms.CharField(max_length=2000, help_text="Comma-separated run names.")
    gold = forms.CharField(
        max_length=1000,
        required=False,
        help_text="An uploaded gold file to import with the campaign; filled in by the New "
        "campaign page.",
    )
    gold_name = forms.CharField(max_length=200, required=False, widget=forms.HiddenInput)

    def clean(self) -> dict:
        data = super().clean()
        if self.errors or not data.get("dataset") or not data.get("runs"):
            return data
        dataset = get_dataset(data["dataset"])
        names = split_names(data["runs"])
        if not names:
            self.add_error("runs", "name at least one run")
            return data
        try:
            runs = [get_run(dataset, name) for name in names]
        except UserError as exc:  # on the field, so the API's 400 names it
            self.add_error("runs", str(exc))
            return data
        try:
            check_spec(dataset, self.spec(), runs)
        except CampaignError as exc:
            raise forms.ValidationError(str(exc)) from None
        if data.get("gold"):
            try:
                lifecycle.check_gold_file(dataset, gold_upload(data), self.spec())
            except UserError as exc:
                self.add_error("gold", str(exc))
        return data


def gold_upload(values: dict) -> lifecycle.GoldUpload:
    """The uploaded gold file the job's ``gold`` value names (UploadError if it is gone)."""
    path = input_file(values["gold"])
    return lifecycle.GoldUpload(path, values.get("gold_name") or path.name)


def run_pool(
    reporter: Reporter, dataset: str, runs: str, gold: str = "", gold_name: str = "", **values
) -> dict:
    """Pool the named runs into the campaign the form's other values describe, with its
    uploaded gold file if given (removed once the campaign is committed)."""
    found = get_dataset(dataset)
    pooled = [get_run(found, run) for run in split_names(runs)]
    spec = CampaignSpec.from_values(values)
    upload = gold_upload({"gold": gold, "gold_name": gold_name}) if gold else None
    reporter.step(f"pooling {len(pooled)} runs at depth {spec.depth}")
    try:
        campaign = lifecycle.open_campaign(found, pooled, spec, gold_file=upload)
    except UserError:
        if upload is not None:
            discard(upload.path)
        raise
    if upload is not None:
        transaction.on_commit(lambda: discard(upload.path))
    return {
        "campaign": campaign.name,
        "campaign_id": campaign.pk,
        "page": reverse("campaign", args=[campaign.pk]),
        "status": campaign.status,
        "pairs": campaign.pairs.count(),
        "second_label_pairs": campaign.pairs.filter(double=True).count(),
        "gold_pairs": campaign.gold_pairs.count(),
    }


register(
    JobKind(
        "pool",
        "Pool runs into a judging campaign",
        run_pool,
        PoolForm,
        permission=ADMIN,
        atomic=True,
        describe=lambda a: f"campaign {a['name']} on {a['dataset']} from {a['runs']}",
        result_template="annotation/job_results/pool.html",
        form_url="campaign-new",
    )
)
