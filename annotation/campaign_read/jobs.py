"""The campaign read side's job kinds: a label export written under FIREPOOL_JOB_OUTPUT_DIR
(never served as media), and the live figures of a campaign's pages."""

from pathlib import Path

from django import forms
from django.conf import settings

from annotation.campaign_read import figures_due, live_figures
from annotation.campaign_read.exports import EXPORT_FORMATS, EXTENSIONS, export_to_file, filename
from annotation.campaign_read.resolution import METHODS
from annotation.campaigns.forms import CampaignNameForm
from annotation.campaigns.lookup import get_campaign
from jobs.progress import Reporter
from jobs.registry import ADMIN, RESEARCH, JobKind, register


class ExportForm(CampaignNameForm):
    format = forms.ChoiceField(choices=[(name, name) for name in EXPORT_FORMATS])
    method = forms.ChoiceField(
        choices=[("", "the campaign's last resolution's, else majority")]
        + [(name, name) for name in METHODS],
        required=False,
        help_text="How pairs resolve: majority or dawid-skene (adds a confidence to every pair); "
        "empty: the method of the campaign's last resolution, else majority.",
    )


def run_export(reporter: Reporter, campaign: str, format: str, method: str = "") -> dict:
    found = get_campaign(campaign)
    path = Path(settings.FIREPOOL_JOB_OUTPUT_DIR) / f"job-{reporter.job_id}.{EXTENSIONS[format]}"
    path.parent.mkdir(parents=True, exist_ok=True)
    reporter.step(f"writing the {format} export of {found.name}")
    written = export_to_file(found, format, path, method or None)
    return {
        "output": str(path),
        "filename": filename(found, format),
        "campaign": found.name,
        "format": format,
        "characters": written,
    }


register(
    JobKind(
        "export",
        "Export a campaign's labels to a file",
        run_export,
        ExportForm,
        permission=ADMIN,
        describe=lambda a: f"{a['format']} export of {a['campaign']}",
        result_template="annotation/job_results/export.html",
    )
)


def run_campaign_figures(reporter: Reporter, campaign: str) -> dict:
    """Compute and store a campaign's live figures for its pages."""
    found = get_campaign(campaign)
    reporter.step(f"computing the figures of {found.name}")
    return live_figures.refresh(found)


register(
    JobKind(
        figures_due.JOB_KIND,
        "Compute a campaign's agreement, annotator scores and judging status",
        run_campaign_figures,
        CampaignNameForm,
        permission=RESEARCH,
        joins=True,
        lane="figures",
        queue="live",
        describe=lambda a: f"figures of {a['campaign']}",
    )
)
