"""Campaign pages: home, the campaign list, a campaign's page, and for admins its life cycle
(create, judge what a label set misses, edit, pause, resume, close) through the same form
and services as the pool job and ``create_campaign``: a GET never writes, and a refused
POST is a 400 page that names the problem and changes nothing.
"""

from __future__ import annotations

import shutil

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.forms import MultipleChoiceField
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from annotation.campaign_read.exports import EXPORT_FORMATS
from annotation.campaign_read.overview import campaign_page, campaign_rows
from annotation.campaign_read.resolution import METHODS
from annotation.campaigns import lifecycle
from annotation.campaigns.forms import CampaignSettingsForm
from annotation.campaigns.jobs import PoolForm
from annotation.campaigns.lookup import campaign_by_id, visible_campaigns
from annotation.gold.forms import save_gold
from annotation.models import Campaign
from annotation.people.progress import annotator_progress, judging_campaigns, work_first
from config import roles
from config.error_handling import Refusal
from jobs.registry import get_kind
from jobs.runner import cleaned, create
from retrieval.datasets.lookup import (
    dataset_names,
    find_dataset,
    find_label_set,
    find_run,
    get_dataset,
    runs_of,
)
from retrieval.datasets.lookup import datasets as all_datasets
from retrieval.datasets.uploads import input_name, new_input_folder
from retrieval.label_sets.service import LabelSetError

admins_only = roles.permission_required(roles.MANAGE_CAMPAIGNS, "Only admins can do this.")
researchers_only = roles.permission_required(
    roles.VIEW_CAMPAIGN_REPORTS, "Only researchers and admins can see campaign reports."
)


SETTINGS_GROUPS = (
    ("Pool", ("name", "depth", "queries", "seed", "extends")),
    (
        "Labelling policy",
        ("policy", "confidence", "second_label_rate", "max_labels", "lease_seconds"),
    ),
    ("Judging order", ("judging_order", "budget", "show_roles")),
    ("Scores to settle", ("settle", "half_width")),
    (
        "Gold and qualification",
        ("gold_rate", "qualification", "qualification_threshold", "speed_floor"),
    ),
    ("Guidelines", ("guidelines",)),
)
"""The campaign form's fields as the page groups them (every field, once)."""


_MULTIPLE = tuple(
    name for name, field in PoolForm.base_fields.items() if isinstance(field, MultipleChoiceField)
)
"""The form's fields of several values (ticked boxes)."""


def _posted(request: HttpRequest) -> dict:
    """The POST as the pool form's data: one value a field, a list for ticked boxes."""
    return {**request.POST.dict(), **{name: request.POST.getlist(name) for name in _MULTIPLE}}


def _groups(form) -> list[tuple[str, list]]:
    return [(title, [form[name] for name in names]) for title, names in SETTINGS_GROUPS]


@admins_only
def campaign_new(request: HttpRequest) -> HttpResponse:
    """A new campaign: dataset, runs, every option of ``create_campaign`` and an optional gold
    file; POST starts the pool job (GET ``?dataset=`` picks the dataset)."""
    datasets = dataset_names()
    posted = request.method == "POST"
    source = request.POST if posted else request.GET
    dataset = find_dataset(source.get("dataset") or "")
    if dataset is None and request.method == "GET" and len(datasets) == 1:
        dataset = find_dataset(datasets[0])
    chosen = source.getlist("runs") if posted else []
    data = folder = None
    if posted:
        data = {**_posted(request), "runs": ",".join(chosen), "gold": "", "gold_name": ""}
        upload = request.FILES.get("gold_file")
        folder = new_input_folder() if upload is not None else None
        refusal = Refusal()
        if folder is not None:
            with refusal:
                path, data["gold_name"] = save_gold(upload, folder)
                data["gold"] = input_name(path)
    form = PoolForm(data, initial={"dataset": dataset.name if dataset else ""})
    if dataset is not None:
        form.offer_label_sets(dataset)
    if posted:
        if refusal.error is not None:  # the copy was refused (too large): beside the field
            form.add_error("gold", refusal.message)
        if form.is_valid():
            job = create(get_kind("pool"), cleaned(form), request.user)
            messages.success(request, f"Pooling {form.cleaned_data['name']!r}: job {job.pk}.")
            return redirect("job-detail", job_id=job.pk)
        if folder is not None:  # refused: no job owns the copy
            shutil.rmtree(folder, ignore_errors=True)
    context = {
        "datasets": datasets,
        "dataset": dataset,
        "runs": list(runs_of(dataset)) if dataset else [],
        "chosen": set(chosen),
        "form": form,
        "groups": _groups(form),
        "gold_error": form.errors.get("gold", [None])[0] if form.errors else None,
        "mode": "new",
    }
    return render(request, "annotation/campaign_form.html", context, status=400 if posted else 200)


def _edit_form(campaign: Campaign, initial: dict, data=None) -> CampaignSettingsForm:
    """The campaign form as the edit page shows it, what pooling fixed disabled."""
    form = CampaignSettingsForm(data, initial=initial)
    form.offer_label_sets(campaign.dataset)
    for name in lifecycle.FIXED_FIELDS:
        form.fields[name].disabled = True
    form.fields["guidelines"].help_text = "What annotators read before judging (empty: kept)."
    return form


@admins_only
def campaign_edit(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Change what may change once a campaign is pooled (:func:`lifecycle.edit_campaign`)."""
    campaign = campaign_by_id(campaign_id)
    refusal = Refusal(only=lifecycle.LifecycleError)
    initial = lifecycle.form_values(lifecycle.current_spec(campaign))
    posted = request.method == "POST"
    form = _edit_form(campaign, initial, request.POST if posted else None)
    if posted and form.is_valid():
        with refusal:
            lifecycle.edit_campaign(campaign, form.spec())
            messages.success(request, f"Campaign {form.cleaned_data['name']!r} saved.")
            return redirect("campaign", campaign_id=campaign.pk)
    context = {
        "campaign": campaign,
        "form": form,
        "groups": _groups(form),
        "error": refusal.message or None,
        "fixed": lifecycle.FIXED_FIELDS,
        "mode": "edit",
    }
    return render(request, "annotation/campaign_form.html", context, status=400 if posted else 200)


@admins_only
def campaign_status(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Pause, resume or close the campaign (POST ``action``); GET ``?action=close`` asks first."""
    campaign = campaign_by_id(campaign_id)
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
    with (refusal := Refusal(only=lifecycle.LifecycleError)):
        lifecycle.change_status(campaign, lifecycle.ACTIONS[action])
        done = {"pause": "paused", "resume": "resumed", "close": "closed"}[action]
        messages.success(request, f"Campaign {campaign.name!r} {done}.")
        return redirect("campaign", campaign_id=campaign.pk)
    messages.error(request, refusal.message)
    return render_campaign(request, campaign, status=400)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Landing page: the datasets and the user's campaigns to judge (annotators go straight
    to theirs)."""
    user = request.user
    if roles.has_perm(user, roles.JUDGE_PAIRS) and not roles.has_perm(user, roles.VIEW_REPORTS):
        return redirect("judge-campaigns")
    progress = ()
    if roles.has_perm(user, roles.JUDGE_PAIRS):
        progress = work_first(annotator_progress(judging_campaigns(), user))
    return render(
        request,
        "retrieval/home.html",
        {"datasets": all_datasets(), "progress": progress},
    )


@researchers_only
def campaigns(request: HttpRequest) -> HttpResponse:
    """Every campaign with its pair counts per status, for researchers and admins."""
    rows = campaign_rows(visible_campaigns())
    return render(
        request,
        "annotation/campaign_overview.html",
        {"rows": rows, "formats": EXPORT_FORMATS, "methods": METHODS},
    )


@require_safe
@researchers_only
def campaign(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """One campaign: its settings, progress, agreement, adjudication, exports, label sets."""
    found = campaign_by_id(campaign_id, "created_by")
    return render_campaign(request, found)


def render_campaign(request: HttpRequest, found: Campaign, status: int = 200) -> HttpResponse:
    """The campaign's page (with its life cycle and gold for admins), as any status."""
    managing = roles.has_perm(request.user, roles.MANAGE_CAMPAIGNS)
    return render(
        request,
        "annotation/campaign.html",
        {
            "page": campaign_page(found),
            "campaign": found,
            "formats": EXPORT_FORMATS,
            "methods": METHODS,
            "lifecycle": lifecycle.facts(found) if managing else None,
        },
        status=status,
    )


@admins_only
def judge_missing(request: HttpRequest, dataset_name: str) -> HttpResponse:
    """A campaign of the pairs of one run's top k that a label set does not judge (GET shows
    what it would pool, POST starts the pool job)."""
    from annotation.campaigns.service import missing_pairs

    found = get_dataset(dataset_name)
    posted = request.method == "POST"
    source = request.POST if posted else request.GET
    run = find_run(found, source.get("run") or "")
    base = find_label_set(found, source.get("labels") or "")
    if run is None or base is None:
        what = "run" if run is None else "label set"
        raise LabelSetError(f"dataset {found.name!r} has no such {what}", status=404)
    depth = min(run.depth, 10)
    missing = missing_pairs(found, run, base, depth)
    fixed = {"dataset": found.name, "runs": run.name, "extends": base.name, "depth": depth}
    data = {**_posted(request), **fixed} if posted else None
    form = PoolForm(data, initial={"name": missing.suggested_name})
    if posted and form.is_valid():
        job = create(get_kind("pool"), cleaned(form), request.user)
        return redirect("job-detail", job_id=job.pk)
    shown = [
        form[name]
        for name in (
            "name",
            "judging_order",
            "budget",
            "second_label_rate",
            "max_labels",
            "gold_rate",
            "qualification",
            "qualification_threshold",
            "lease_seconds",
            "show_roles",
            "settle",
            "half_width",
        )
    ]
    context = {"dataset": found, "missing": missing, "form": form, "fields": shown, "fixed": fixed}
    return render(request, "annotation/judge_missing.html", context, status=400 if posted else 200)
