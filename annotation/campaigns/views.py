"""Campaign pages: the home page and the campaign list, a campaign's page, and its life cycle
for admins: create one (the pool job's form, runs picked from the dataset's list, an optional
gold file), one for the pairs a label set misses, edit what may change once pooled, pause,
resume and close it.

Every page checks what the pool job and ``create_campaign`` check, through the same form
(:class:`annotation.jobs.PoolForm`) and the same services (:mod:`annotation.campaigns.lifecycle`,
:mod:`annotation.gold.service`): a GET never writes, and a refused POST is a 400 page that
names the problem and changes nothing.
"""

from __future__ import annotations

import shutil

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_safe

from annotation.campaign_read.exports import EXPORT_FORMATS
from annotation.campaign_read.overview import campaign_page, campaign_rows
from annotation.campaign_read.resolution import METHODS
from annotation.campaigns import lifecycle
from annotation.campaigns.forms import (
    CampaignSettingsForm,
)
from annotation.gold import tasks as gold_queue
from annotation.gold.forms import save_gold
from annotation.jobs import PoolForm
from annotation.models import Campaign
from annotation.people.progress import (
    annotator_progress,
    judging_campaigns,
    work_first,
)
from config import roles
from config.errors import UserError
from jobs.registry import get_kind
from jobs.runner import cleaned, create
from retrieval.datasets.uploads import (
    input_name,
    new_input_folder,
)
from retrieval.label_sets.service import LabelSetError
from retrieval.models import Dataset

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
    (
        "Gold and qualification",
        ("gold_rate", "qualification", "qualification_threshold", "speed_floor"),
    ),
    ("Guidelines", ("guidelines",)),
)
"""The campaign form's fields as the page groups them (every field, once)."""


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
                path, data["gold_name"] = save_gold(upload, folder)
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


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Landing page: the datasets, and the campaigns to judge with the user's own progress;
    annotators, who only judge, go straight to their campaigns."""
    user = request.user
    if roles.has_perm(user, roles.JUDGE_PAIRS) and not roles.has_perm(user, roles.VIEW_REPORTS):
        return redirect("judge-campaigns")
    progress = ()
    if roles.has_perm(user, roles.JUDGE_PAIRS):
        progress = work_first(annotator_progress(judging_campaigns(), user))
    return render(
        request,
        "retrieval/home.html",
        {"datasets": Dataset.objects.all(), "progress": progress},
    )


@researchers_only
def campaigns(request: HttpRequest) -> HttpResponse:
    """Every campaign with its pair counts per status, for researchers and admins."""
    rows = campaign_rows(gold_queue.visible(Campaign.objects.select_related("dataset")))
    return render(
        request,
        "annotation/campaign_overview.html",
        {"rows": rows, "formats": EXPORT_FORMATS, "methods": METHODS},
    )


@require_safe
@researchers_only
def campaign(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """One campaign: its settings, progress, agreement, adjudication, exports, label sets."""
    found = get_object_or_404(
        Campaign.objects.select_related("dataset", "created_by"), pk=campaign_id
    )
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
    """A campaign of exactly the pairs of one run's top k that a label set does not judge;
    resolving it makes the set's next version (GET shows what it would pool, POST starts
    the pool job with the campaign form's settings)."""
    from annotation.campaigns.service import missing_pairs
    from annotation.jobs import PoolForm
    from jobs.registry import get_kind
    from jobs.runner import cleaned, create

    found = get_object_or_404(Dataset, name=dataset_name)
    source = request.POST if request.method == "POST" else request.GET
    run = found.runs.defer("arrays").filter(name=source.get("run") or "").first()
    base = found.label_sets.defer("arrays").filter(name=source.get("labels") or "").first()
    if run is None or base is None:
        what = "run" if run is None else "label set"
        raise LabelSetError(f"dataset {found.name!r} has no such {what}", status=404)
    depth = min(run.depth, 10)
    missing = missing_pairs(found, run, base, depth)
    fixed = {"dataset": found.name, "runs": run.name, "extends": base.name, "depth": depth}
    status = 200
    if request.method == "POST":
        form = PoolForm({**request.POST.dict(), **fixed})
        if form.is_valid():
            job = create(get_kind("pool"), cleaned(form), request.user)
            return redirect("job-detail", job_id=job.pk)
        status = 400
    else:
        form = PoolForm(initial={"name": missing.suggested_name})
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
        )
    ]
    context = {"dataset": found, "missing": missing, "form": form, "fields": shown, "fixed": fixed}
    return render(request, "annotation/judge_missing.html", context, status=status)
