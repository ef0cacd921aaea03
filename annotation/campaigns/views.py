"""Pages of a campaign's life cycle: create one (the pool job's form, runs picked from the
dataset's list, an optional gold file), edit what may change once pooled, pause, resume and
close it, import gold pairs and promote decided pairs, all for admins.

Every page checks what the pool job and ``create_campaign`` check, through the same form
(:class:`annotation.jobs.PoolForm`) and the same services (:mod:`annotation.campaigns.lifecycle`,
:mod:`annotation.gold.service`): a GET never writes, and a refused POST is a 400 page that
names the problem and changes nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.campaigns import lifecycle
from annotation.campaigns.forms import CampaignSettingsForm, PromoteForm
from annotation.gold import service as gold
from annotation.jobs import GOLD_IMPORT, PoolForm
from annotation.models import Campaign
from annotation.views import admins_only, render_campaign
from config.errors import UserError
from jobs.registry import get_kind
from jobs.runner import cleaned, create, submit
from retrieval.models import Dataset
from retrieval.services.uploads import (
    input_name,
    new_input_folder,
    save_upload,
    shown_name,
)

GOLD_SUFFIXES = {".csv": ".csv", ".jsonl": ".jsonl", ".json": ".jsonl", ".ndjson": ".jsonl"}
"""What a gold upload's own suffix makes of the stored copy (the reader goes by it)."""

SETTINGS_GROUPS = (
    ("Pool", ("name", "depth", "queries", "seed", "extends")),
    (
        "Labelling policy",
        ("policy", "confidence", "second_label_rate", "max_labels", "lease_seconds"),
    ),
    ("Judging order", ("judging_order", "budget", "show_roles")),
    (
        "Gold and qualification",
        ("gold_rate", "qualification", "qualification_threshold", "speed_floor"),
    ),
    ("Guidelines", ("guidelines",)),
)
"""The campaign form's fields as the page groups them (every field, once)."""


def _save_gold(upload, folder: Path) -> tuple[Path, str]:
    """Copy an uploaded gold file into ``folder``: (the copy, the uploader's name for it),
    the copy's suffix the reader's (it goes by the suffix)."""
    name = shown_name(upload, "gold file")
    suffix = next((s for s in GOLD_SUFFIXES if name.lower().endswith(s)), "")
    return save_upload(upload, folder, "gold" + GOLD_SUFFIXES.get(suffix, ".txt")), name


def _groups(form) -> list[tuple[str, list]]:
    return [(title, [form[name] for name in names]) for title, names in SETTINGS_GROUPS]


@admins_only
def campaign_new(request: HttpRequest) -> HttpResponse:
    """A new campaign: the dataset from a list, its runs as checkboxes, every option of
    ``create_campaign`` and an optional gold file; POST starts the pool job and goes to its
    page (GET ``?dataset=`` picks the dataset whose runs are offered)."""
    datasets = list(Dataset.objects.order_by("name").values_list("name", flat=True))
    source = request.POST if request.method == "POST" else request.GET
    dataset = Dataset.objects.filter(name=source.get("dataset") or "").first()
    if dataset is None and request.method == "GET" and len(datasets) == 1:
        dataset = Dataset.objects.get(name=datasets[0])
    runs = list(dataset.runs.defer("arrays").order_by("name")) if dataset else []
    chosen = source.getlist("runs") if request.method == "POST" else []
    status = 200
    gold_error = None
    if request.method == "POST":
        data = {**request.POST.dict(), "runs": ",".join(chosen), "gold": "", "gold_name": ""}
        upload = request.FILES.get("gold_file")
        folder = new_input_folder() if upload is not None else None
        if folder is not None:
            try:
                path, data["gold_name"] = _save_gold(upload, folder)
                data["gold"] = input_name(path)
            except UserError as exc:
                gold_error = str(exc)
        form = PoolForm(data)
        if dataset is not None:
            form.offer_label_sets(dataset)
        if gold_error is None and form.is_valid():
            job = create(get_kind("pool"), cleaned(form), request.user)
            messages.success(request, f"Pooling {form.cleaned_data['name']!r}: job {job.pk}.")
            return redirect("job-detail", job_id=job.pk)
        if folder is not None:  # refused: no job owns the copy
            shutil.rmtree(folder, ignore_errors=True)
        status = 400
    else:
        form = PoolForm(initial={"dataset": dataset.name if dataset else ""})
        if dataset is not None:
            form.offer_label_sets(dataset)
    context = {
        "datasets": datasets,
        "dataset": dataset,
        "runs": runs,
        "chosen": set(chosen),
        "form": form,
        "groups": _groups(form),
        "gold_error": gold_error or (form.errors.get("gold", [None])[0] if form.errors else None),
        "mode": "new",
    }
    return render(request, "annotation/campaign_form.html", context, status=status)


def _edit_form(campaign: Campaign, initial: dict, data=None) -> CampaignSettingsForm:
    """The campaign form as the edit page shows it: what pooling fixed (``FIXED_FIELDS``) is
    disabled, so a browser cannot change it and a posted value is ignored for the
    campaign's own; ``extends`` offers the campaign's dataset's label sets."""
    form = CampaignSettingsForm(data, initial=initial)
    form.offer_label_sets(campaign.dataset)
    for name in lifecycle.FIXED_FIELDS:
        form.fields[name].disabled = True
    form.fields["guidelines"].help_text = "What annotators read before judging (empty: kept)."
    return form


@admins_only
def campaign_edit(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Change what may change once a campaign is pooled (name, guidelines, lease, budget,
    gold, qualification, speed floor); the pool's own settings are shown and refused if
    changed."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    status = 200
    error = None
    initial = lifecycle.form_values(lifecycle.current_spec(campaign))
    if request.method == "POST":
        form = _edit_form(campaign, initial, request.POST)
        if form.is_valid():
            try:
                lifecycle.edit_campaign(campaign, form.spec())
            except lifecycle.LifecycleError as exc:
                error = str(exc)
            else:
                messages.success(request, f"Campaign {form.cleaned_data['name']!r} saved.")
                return redirect("campaign", campaign_id=campaign.pk)
        status = 400
    else:
        form = _edit_form(campaign, initial)
    context = {
        "campaign": campaign,
        "form": form,
        "groups": _groups(form),
        "error": error,
        "fixed": lifecycle.FIXED_FIELDS,
        "mode": "edit",
    }
    return render(request, "annotation/campaign_form.html", context, status=status)


@admins_only
def campaign_status(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Pause, resume or close the campaign (POST ``action``); closing, which is final, is
    asked first (GET ``?action=close`` shows what is left, its POST closes)."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    source = request.POST if request.method == "POST" else request.GET
    action = source.get("action", "")
    if action not in lifecycle.ACTIONS:
        messages.error(request, "Choose pause, resume or close.")
        return render_campaign(request, campaign, status=400)
    if request.method != "POST":
        if action != "close":
            messages.error(request, f"To {action} the campaign, use its button.")
            return render_campaign(request, campaign, status=405)
        return render(
            request,
            "annotation/campaign_close.html",
            {"campaign": campaign, "facts": lifecycle.facts(campaign)},
        )
    try:
        lifecycle.change_status(campaign, lifecycle.ACTIONS[action])
    except lifecycle.LifecycleError as exc:
        messages.error(request, str(exc))
        return render_campaign(request, campaign, status=400)
    done = {"pause": "paused", "resume": "resumed", "close": "closed"}[action]
    messages.success(request, f"Campaign {campaign.name!r} {done}.")
    return redirect("campaign", campaign_id=campaign.pk)


class GoldFileForm(forms.Form):
    file = forms.FileField(
        help_text="CSV or JSON lines: caption_key, video_key, label, "
        "explanation and, optionally, guideline."
    )


@require_POST
@admins_only
def gold_import(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Queue the import of an uploaded gold file into the campaign and go to its job page
    (the job reads the file, all or nothing, with progress: a bad file fails it naming its
    line and field); no file is a 400."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    form = GoldFileForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "Choose a gold file to import.")
        return render_campaign(request, campaign, status=400)
    folder = new_input_folder()
    try:
        path, name = _save_gold(form.cleaned_data["file"], folder)
        arguments = {"campaign": campaign.name, "file": input_name(path), "file_name": name}
        job = submit(GOLD_IMPORT, arguments, request.user)
    except UserError as exc:
        # Refused before a job was recorded; after that, the job owns the file.
        shutil.rmtree(folder, ignore_errors=True)
        messages.error(request, str(exc))
        return render_campaign(request, campaign, status=400)
    return redirect("job-detail", job_id=job.pk)


@admins_only
def gold_promote(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Promote every decided pair that is not gold yet: GET names the count, POST with that
    count does it (a changed or missing count, or nothing to promote, promotes nothing)."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    if request.method == "POST":
        form = PromoteForm({**request.POST.dict(), "pair": "", "all_decided": "on"})
        if not form.is_valid():
            for errors in form.errors.values():
                messages.error(request, " ".join(errors))
            return _promote_page(request, campaign, status=400)
        try:
            result = gold.promote(
                campaign,
                all_decided=True,
                explanation=form.cleaned_data["explanation"],
                guideline=form.cleaned_data["guideline"],
                user=request.user,
                expected=form.cleaned_data["expected"],
            )
        except gold.GoldError as exc:
            messages.error(request, str(exc))
            return _promote_page(request, campaign, status=exc.status)
        messages.success(request, result.summary)
        return redirect("campaign", campaign_id=campaign.pk)
    return _promote_page(request, campaign)


def _promote_page(request: HttpRequest, campaign: Campaign, status: int = 200) -> HttpResponse:
    return render(
        request,
        "annotation/campaign_promote.html",
        {"campaign": campaign, "count": gold.promotable(campaign)},
        status=status,
    )
