"""Background job kinds of the annotation app (pool, gold import, export, refit, figures,
demo campaign), all admins' work; exports are written under FIREPOOL_JOB_OUTPUT_DIR, never
served as media.
"""

from pathlib import Path

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.urls import reverse

from annotation.active import stages as active_stages
from annotation.active.live import ActiveError
from annotation.campaign_read import figures_due, live_figures
from annotation.campaign_read.exports import EXPORT_FORMATS, EXTENSIONS, export_to_file, filename
from annotation.campaign_read.resolution import METHODS
from annotation.campaigns import lifecycle
from annotation.campaigns.forms import CampaignSettingsForm, bounded
from annotation.campaigns.lookup import get_campaign, get_campaign_or_id
from annotation.campaigns.pooling import MAX_DEPTH
from annotation.campaigns.service import CampaignError, check_spec
from annotation.campaigns.spec import SEED, CampaignSpec
from annotation.gold import service as gold_service
from annotation.models import Campaign
from annotation.policy import fit as policy_fit
from annotation.prediction import service as prediction
from annotation.simulation.demo import DEMO_CAMPAIGN, create_demo_campaign
from config.errors import UserError
from jobs.models import Job
from jobs.progress import Reporter
from jobs.registry import ADMIN, RESEARCH, JobKind, register
from retrieval.datasets.lookup import get_dataset, get_run
from retrieval.datasets.uploads import discard, input_file
from retrieval.forms import DatasetForm, PickedName, dataset_names, found_or_invalid, split_names


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


def campaign_names() -> list:
    names = Campaign.objects.order_by("name").values_list("name", flat=True)
    return [(name, name) for name in names]


class RefitForm(forms.Form):
    """A campaign named (the refit's, the live figures' and, with more, the export's form)."""

    campaign = PickedName(campaign_names, max_length=200, help_text="Campaign name.")

    def clean_campaign(self) -> str:
        return found_or_invalid(get_campaign, self.cleaned_data["campaign"]).name


class ExportForm(RefitForm):
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


def run_refit(reporter: Reporter, campaign: str) -> dict:
    """Refit the adaptive campaign's annotator models and priors, and recompute its pairs."""
    found = get_campaign(campaign)
    reporter.step(f"refitting the label policy of {found.name}")
    return policy_fit.refit(found).summary()


register(
    JobKind(
        policy_fit.JOB_KIND,
        "Refit an adaptive campaign's annotator models",
        run_refit,
        RefitForm,
        permission=ADMIN,
        joins=True,
        lane="policy",
        queue="live",
        # Not one transaction: the pairs are written in short ones (pair_state.apply_refit).
        describe=lambda a: f"label policy refit of {a['campaign']}",
    )
)


class FitPredictorForm(forms.Form):
    """A campaign by name or id, and the seed of its folds and trees."""

    campaign = PickedName(campaign_names, max_length=200, help_text="Campaign name or id.")
    seed = bounded(
        SEED, required=False, help_text="Seed of the query folds and the trees (default 0)."
    )

    def clean_campaign(self) -> str:
        return found_or_invalid(get_campaign_or_id, self.cleaned_data["campaign"]).name


def run_fit_predictor(reporter: Reporter, campaign: str, seed: int = 0) -> dict:
    """Fit the campaign's relevance predictor on its resolved labels and store it. Once an
    admin has drawn a first active stage, carry the stages on: store the last stage's
    estimates when it is judged in full, then draw the next with the new predictions unless
    every score is settled (the fit follows the refits, which follow the labels, so the stages
    go on as annotators judge; a draw the stopping rule refuses is reported, not failed)."""
    found = get_campaign(campaign)
    reporter.step(f"fitting the relevance predictor of {found.name}")
    summary = prediction.fit_predictor(found, seed=seed).summary()
    stage = active_stages.estimate_stage(found)
    if stage is not None:
        summary["active_stage"] = {"number": stage.number, "estimated": stage.estimates is not None}
    if stage is not None and stage.estimates is not None:
        reporter.step(f"drawing the next active stage of {found.name}")
        try:
            summary["active_stage"]["drawn"] = active_stages.draw_stage(found).as_dict()
        except ActiveError as exc:
            summary["active_stage"]["not_drawn"] = str(exc)
    return summary


register(
    JobKind(
        prediction.JOB_KIND,
        "Fit a campaign's relevance predictor",
        run_fit_predictor,
        FitPredictorForm,
        permission=ADMIN,
        joins=True,
        lane="prediction",  # its own: a long fit never delays a refit or the figures
        queue="live",  # the refits' workers: it follows them
        # Not one transaction: the inputs are read, then the one row replaced.
        describe=lambda a: f"relevance predictor of {a['campaign']}",
    )
)


class ActiveStageForm(RefitForm):
    """A campaign, whether to draw its next active stage, and the draw's seed."""

    draw = forms.BooleanField(
        required=False,
        help_text="Draw the next stage (unticked: only estimate the last one once judged).",
    )
    seed = bounded(
        SEED,
        required=False,
        help_text="Seed of the draw (default: from the campaign's seed and the stage number).",
    )


def run_active_stage(
    reporter: Reporter, campaign: str, draw: bool = False, seed: int | None = None
) -> dict:
    """Estimate the campaign's last active stage once its queries are judged in full and, with
    ``draw``, draw the next one; a draw the stopping rule refuses is reported, not failed."""
    found = get_campaign(campaign)
    reporter.step(f"estimating the last active stage of {found.name}")
    result = active_stages.stage_report(found)
    if draw:
        reporter.step(f"drawing the next active stage of {found.name}")
        try:
            result["drawn"] = active_stages.draw_stage(found, seed=seed).as_dict()
        except ActiveError as exc:
            result["drawn"], result["not_drawn"] = None, str(exc)
    return result


register(
    JobKind(
        active_stages.JOB_KIND,
        "Estimate a campaign's last active stage and draw the next",
        run_active_stage,
        ActiveStageForm,
        permission=ADMIN,
        atomic=True,
        lane="prediction",
        queue="live",
        describe=lambda a: f"active stage of {a['campaign']}",
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
        RefitForm,
        permission=RESEARCH,
        joins=True,
        lane="figures",
        queue="live",
        describe=lambda a: f"figures of {a['campaign']}",
    )
)


GOLD_IMPORT = "gold_import"


class GoldImportForm(RefitForm):
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


def run_demo_campaign(
    reporter: Reporter,
    dataset: str,
    name: str,
    depth: int = 10,
    fill: float = 0.6,
    error_rate: float = 0.05,
    seed: int = 0,
) -> dict:
    """Create the demo campaign, or finish one a failed run left half-made."""
    made = create_demo_campaign(
        get_dataset(dataset),
        name=name,
        depth=depth,
        fill=fill,
        error_rate=error_rate,
        seed=seed,
        say=reporter.step,
        advance=reporter.advance,
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
