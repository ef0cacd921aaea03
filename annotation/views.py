"""Pages of the annotation app: judging, campaign overview, agreement, adjudication, exports."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import content_disposition_header, url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe

from annotation.campaign_read import charts as report_figures
from annotation.campaign_read import exports, live_figures
from annotation.campaign_read.exports import EXPORT_FORMATS, export_chunks
from annotation.campaign_read.overview import campaign_page, campaign_rows
from annotation.campaign_read.resolution import METHODS
from annotation.campaigns import lifecycle
from annotation.campaigns.forms import RETURN, AdjudicationForm, EstimateSampleForm, PromoteForm
from annotation.gold import service as gold
from annotation.gold import tasks as gold_queue
from annotation.judging import pair_state, submit
from annotation.judging import queue as judging_queue
from annotation.models import Campaign, Escalation, GoldPair, Judgement, Pair
from annotation.ordering import priorities
from annotation.people.progress import (
    annotator_progress,
    judging_campaigns,
    work_first,
)
from annotation.simulation.replay_service import ReplayError, stored_comparison
from config import roles
from retrieval.models import Dataset, LabelSet
from retrieval.services.labelsets import LabelSetError


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


judges_only = roles.permission_required(roles.JUDGE_PAIRS, "Only annotators can judge pairs.")
researchers_only = roles.permission_required(
    roles.VIEW_CAMPAIGN_REPORTS, "Only researchers and admins can see campaign reports."
)
admins_only = roles.permission_required(roles.MANAGE_CAMPAIGNS, "Only admins can do this.")


@judges_only
def campaign_list(request: HttpRequest) -> HttpResponse:
    """Active campaigns the annotator can judge, each with their own progress."""
    progress = work_first(annotator_progress(judging_campaigns(), request.user))
    return render(request, "annotation/campaigns.html", {"progress": progress})


@judges_only
def judge(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The judging page: the client talks to the API under ``api_base``."""
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    return render(
        request,
        "annotation/judge.html",
        {
            "campaign": campaign,
            "api_base": f"/api/campaigns/{campaign.pk}/",
            # The progress bar's start: labels given so far, as the API counts them
            # (progress.labels_given), which then says what is left.
            "labels_done": judging_queue.progress(campaign, request.user).labels_given,
            "needed_now": not judging_queue.steady(campaign),
            "standing_poll_ms": round(1000 * settings.FIREPOOL_STANDING_POLL_SECONDS),
        },
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


def _back(request: HttpRequest, default: str, **kwargs) -> HttpResponse:
    """Redirect to the form's ``next`` when it is a path on this site, else to ``default``."""
    target = request.POST.get("next", "")
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(default, **kwargs)


@researchers_only
def agreement(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Agreement figures with bootstrap intervals (FIRE §3.2, Table 2, Fig. 7)."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    live = live_figures.live_figures(campaign)
    report, proxies = live[live_figures.AGREEMENT], live[live_figures.PROXIES]
    judging, scores = live[live_figures.JUDGING], live[live_figures.SCORES]
    return render(
        request,
        "annotation/agreement.html",
        {
            "campaign": campaign,
            "live": live,
            "scores": scores,
            "gold_chart": report_figures.gold_accuracy_chart(scores),
            "report": report,
            "judging": judging,
            "charts": report_figures.agreement_charts(report.agreement),
            "proxies": proxies,
            "proxy_chart": report_figures.proxy_alpha_chart(proxies),
        },
    )


ADJUDICATION_PAGE = 10


@admins_only
def adjudicate(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Disagreements, escalations and ties still waiting for a third label, for an admin.

    Each pair is shown with its video and every label; the admin's label wins (FIRE §3.1).
    """
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    if request.method == "POST":
        form = AdjudicationForm(request.POST)
        if form.is_valid():
            return _adjudicate_post(request, campaign, form.cleaned_data)
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(errors)}")
        return _adjudication_page(request, campaign, status=400)
    return _adjudication_page(request, campaign)


def _adjudication_page(request: HttpRequest, campaign: Campaign, status: int = 200):
    waiting = (
        Pair.objects.filter(campaign=campaign)
        .filter(pair_state.waiting_for_admin())
        .select_related("caption", "video")
        .prefetch_related(
            Prefetch(
                "judgements",
                queryset=Judgement.objects.filter(undone_at__isnull=True)
                .select_related("annotator")
                .order_by("created_at"),
                to_attr="live_judgements",
            ),
            Prefetch(
                "escalations",
                queryset=Escalation.objects.filter(resolved_at__isnull=True).select_related(
                    "annotator"
                ),
                to_attr="open_escalations",
            ),
        )
        .order_by("position")
    )
    page = Paginator(waiting, ADJUDICATION_PAGE).get_page(request.GET.get("page"))
    recent = (
        Pair.objects.filter(campaign=campaign)
        .exclude(adjudicated="")
        .select_related("caption", "video", "adjudicated_by")
        .order_by("-adjudicated_at")[:10]
    )
    gold_pairs = GoldPair.objects.filter(campaign=campaign)
    return render(
        request,
        "annotation/adjudicate.html",
        {
            "campaign": campaign,
            "page": page,
            "recent": recent,
            "Label": Judgement.Label,
            "Status": Pair.Status,
            "RETURN": RETURN,
            "BROKEN_VIDEO_REASON": submit.BROKEN_VIDEO_REASON,
            "gold_pair_ids": set(
                gold_pairs.filter(pair__in=[pair.pk for pair in recent]).values_list(
                    "pair_id", flat=True
                )
            ),
            "gold_count": gold_pairs.count(),
            "decided_count": gold.promotable(campaign),
        },
        status=status,
    )


def _adjudicate_post(request: HttpRequest, campaign: Campaign, data: dict) -> HttpResponse:
    pair = Pair.objects.filter(pk=data["pair"], campaign=campaign).first()
    if pair is None:
        messages.error(request, "That pair is not in this campaign.")
        return _adjudication_page(request, campaign, status=404)
    label = None if data["decision"] == RETURN else data["decision"]
    note = data["note"].strip()
    open_escalation = pair.escalations.filter(resolved_at__isnull=True).first()
    if open_escalation is not None:
        submit.resolve_escalation(open_escalation, request.user, label=label, note=note)
    elif label is not None:
        submit.adjudicate(pair, request.user, label)
    messages.success(
        request,
        f"Pair {pair.caption.key} × {pair.video.key}: "
        + ("returned to the judging queue." if label is None else f"adjudicated {label}."),
    )
    return redirect(request.get_full_path())


@require_POST
@admins_only
def promote_gold(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Make a decided pair (or every decided pair, with the count its confirmation page
    named) a gold pair, with an explanation; a refusal shows the page again with why."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    form = PromoteForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(errors)}")
        return _adjudication_page(request, campaign, status=400)
    data = form.cleaned_data
    try:
        result = gold.promote(
            campaign,
            pair_ids=None if data["all_decided"] else [data["pair"]],
            all_decided=bool(data["all_decided"]),
            explanation=data["explanation"],
            guideline=data["guideline"],
            user=request.user,
            expected=data["expected"] if data["all_decided"] else None,
        )
    except gold.GoldError as exc:
        messages.error(request, str(exc))
        return _adjudication_page(request, campaign, status=exc.status)
    messages.success(request, result.summary)
    return redirect("campaign-adjudicate", campaign_id=campaign.pk)


@admins_only
def export(request: HttpRequest, campaign_id: int, fmt: str) -> HttpResponse:
    """Stream one export format of the campaign's labels (admins only)."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    if fmt not in EXPORT_FORMATS:
        raise Http404("unknown export format")
    response = StreamingHttpResponse(
        export_chunks(campaign, fmt), content_type=exports.CONTENT_TYPES[fmt]
    )
    # RFC 6266: quoted when the name allows it, else ``filename*`` (quotes, non-ASCII).
    response["Content-Disposition"] = content_disposition_header(
        True, exports.filename(campaign, fmt)
    )
    return response


@require_POST
@admins_only
def reopen(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Serve the pairs the judging order had parked as no longer needed (admins only)."""
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    with transaction.atomic():
        reopened = priorities.reopen(campaign)
    if reopened:
        messages.success(
            request,
            f"{reopened} parked pair{'s are' if reopened != 1 else ' is'} back in the judging queue.",
        )
    else:  # a page older than the queue: not a success to report
        messages.warning(request, "No pair was parked any more: nothing was reopened.")
    return _back(request, "campaign-agreement", campaign_id=campaign.pk)


@require_POST
@admins_only
def estimate_sample(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Draw random queries to judge next, for estimates of what judging has not settled."""
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    form = EstimateSampleForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(errors)}")
    else:
        try:
            draw = priorities.draw_sample(campaign, form.cleaned_data["pairs"])
        except priorities.SampleError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(
                request,
                f"{draw.queries} random queries drawn: their {draw.pairs} unjudged pairs "
                "are served first.",
            )
    return redirect("campaign-agreement", campaign_id=campaign.pk)


@researchers_only
def judging_orders(request: HttpRequest, dataset_name: str) -> HttpResponse:
    """Every judging order replayed against the dataset's complete labels (its ground truth,
    or a label set given as ``?labels=``): positives found and C@1 error per judgement."""
    dataset = get_object_or_404(Dataset, name=dataset_name)
    label_set = None
    wanted = request.GET.get("labels")
    if wanted:
        label_set = LabelSet.objects.filter(dataset=dataset, name=wanted).first()
        if label_set is None:
            raise Http404("no such label set")
    context = {"dataset": dataset, "label_set": label_set}
    try:
        stored = stored_comparison(dataset, label_set)
    except ReplayError as exc:
        return render(
            request, "annotation/judging_orders.html", {**context, "error": str(exc)}, status=400
        )
    comparison = stored.value
    rows = [(r, comparison.judged_for(r)) for r in comparison.replays]
    return render(
        request,
        "annotation/judging_orders.html",
        {
            **context,
            "computed": stored,
            "comparison": comparison,
            "rows": rows,
            "charts": report_figures.judging_order_charts(comparison),
        },
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
