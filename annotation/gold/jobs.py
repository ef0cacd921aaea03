"""The gold import job kind: an uploaded gold file into a campaign, all or nothing."""

from django import forms
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.campaigns.forms import CampaignNameForm
from annotation.campaigns.lookup import get_campaign
from annotation.gold import service as gold_service
from config.errors import UserError
from jobs.models import Job
from jobs.progress import Reporter
from jobs.registry import ADMIN, JobKind, register
from retrieval.datasets.uploads import discard, input_file

GOLD_IMPORT = "gold_import"


class GoldImportForm(CampaignNameForm):
    """A campaign named and an uploaded gold file, read by the job."""

    file = forms.CharField(
        max_length=1000, help_text="The uploaded gold file; filled in by the campaign page."
    )
    file_name = forms.CharField(max_length=200, required=False)

    def clean_file(self) -> str:
        try:
            input_file(self.cleaned_data["file"])
        except UserError as exc:
            raise forms.ValidationError(str(exc)) from None
        return self.cleaned_data["file"]


def run_gold_import(reporter: Reporter, campaign: str, file: str, file_name: str = "") -> dict:
    """Import an uploaded gold file into the campaign, all or nothing; the upload is removed
    either way."""
    found = get_campaign(campaign)
    path = input_file(file)
    starter = Job.objects.filter(pk=reporter.job_id).values_list("created_by", flat=True).first()
    user = get_user_model().objects.filter(pk=starter).first() if starter else None
    try:
        made = gold_service.import_gold(
            found, path, user=user, shown=file_name or path.name, steps=reporter
        )
    finally:
        discard(path)
    return {
        "campaign": found.name,
        "campaign_id": found.pk,
        "page": reverse("campaign", args=[found.pk]) + "#gold",
        "file": made.file,
        "created": made.created,
        "relevant": made.relevant,
        "irrelevant": made.created - made.relevant,
    }


register(
    JobKind(
        GOLD_IMPORT,
        "Import a gold file into a campaign",
        run_gold_import,
        GoldImportForm,
        permission=ADMIN,
        # Not atomic: the file is read before the one short transaction that writes it.
        describe=lambda a: f"gold file {a.get('file_name') or 'upload'} into {a['campaign']}",
        result_template="annotation/job_results/gold_import.html",
    )
)
