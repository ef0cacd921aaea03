"""Pages of the annotation app: judging, campaign overview, agreement, adjudication, exports."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, F, Prefetch, Q
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.models import Campaign, Escalation, Judgement, Pair
from annotation.services import assignment, exports
from annotation.services.exports import EXPORT_FORMATS, export_chunks
from annotation.services.reporting import campaign_proxy_report, campaign_report
from annotation.services.resolution import resolve_campaign
from config import roles
from retrieval import plots
from retrieval.models import Dataset, LabelSet
from retrieval.proxies import PROXY_LABELS
from retrieval.services.labelsets import LabelSetError


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Landing page: the datasets; annotators, who only judge, go straight to judging."""
    user = request.user
    if user.has_perm(roles.JUDGE_PAIRS) and not user.has_perm(roles.VIEW_REPORTS):
        return redirect("judge-campaigns")
    return render(request, "retrieval/home.html", {"datasets": Dataset.objects.all()})


judges_only = roles.permission_required(roles.JUDGE_PAIRS, "Only annotators can judge pairs.")
researchers_only = roles.permission_required(
    roles.VIEW_CAMPAIGN_REPORTS, "Only researchers and admins can see campaign reports."
)
admins_only = roles.permission_required(roles.MANAGE_CAMPAIGNS, "Only admins can do this.")


@judges_only
def campaign_list(request: HttpRequest) -> HttpResponse:
    """Active campaigns the annotator can judge."""
    campaigns = Campaign.objects.filter(status=Campaign.Status.ACTIVE).select_related("dataset")
    return render(request, "annotation/campaigns.html", {"campaigns": campaigns})


@judges_only
def judge(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The judging page: the client talks to the API under ``api_base``."""
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    return render(
        request,
        "annotation/judge.html",
        {"campaign": campaign, "api_base": f"/api/campaigns/{campaign.pk}/"},
    )


@researchers_only
def campaigns(request: HttpRequest) -> HttpResponse:
    """Every campaign with its pair counts per status, for researchers and admins."""
    # Three grouped queries for the whole page, whatever the number of campaigns.
    counts: dict[int, dict[str, int]] = {}
    for campaign_id, status, n in (
        Pair.objects.order_by().values_list("campaign_id", "status").annotate(n=Count("pk"))
    ):
        counts.setdefault(campaign_id, {})[status] = n
    escalations = dict(
        Escalation.objects.filter(resolved_at__isnull=True)
        .order_by()
        .values_list("pair__campaign_id")
        .annotate(n=Count("pk"))
    )
    label_sets = {
        label_set.metadata.get("campaign_id"): label_set
        for label_set in LabelSet.objects.filter(source=LabelSet.Source.CAMPAIGN).defer("arrays")
    }
    rows = []
    for campaign in Campaign.objects.select_related("dataset"):
        mine = counts.get(campaign.pk, {})
        rows.append(
            {
                "campaign": campaign,
                "counts": {status: mine.get(status, 0) for status in Pair.Status.values},
                "total": sum(mine.values()),
                "open_escalations": escalations.get(campaign.pk, 0),
                "label_set": label_sets.get(campaign.pk),
            }
        )
    return render(
        request,
        "annotation/campaign_overview.html",
        {
            "rows": rows,
            "formats": EXPORT_FORMATS,
        },
    )


@researchers_only
def agreement(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Agreement figures with bootstrap intervals (FIRE §3.2, Table 2, Fig. 7)."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    report = campaign_report(campaign)
    by_count = report["by_label_count"]
    charts = []
    if by_count:
        categories = [str(row["labels"]) for row in by_count]
        charts.append(
            plots.bar_chart(
                categories,
                [plots.Series("pairs", [row["pairs"] for row in by_count])],
                title="Pairs by number of labels",
                y_label="pairs",
            )
        )
        if any(row["percent_agreement"] is not None for row in by_count):
            charts.append(
                plots.bar_chart(
                    categories,
                    [
                        plots.Series(
                            "agreement",
                            [
                                None
                                if row["percent_agreement"] is None
                                else 100 * row["percent_agreement"]
                                for row in by_count
                            ],
                        )
                    ],
                    title="Percent agreement by number of labels (FIRE Fig. 7)",
                    y_label="% agreement",
                    y_max=100,
                )
            )
    proxies = campaign_proxy_report(campaign, cache_only=True)
    proxy_chart = ""
    if proxies["curves"]:
        proxy_chart = plots.line_chart(
            proxies["curve_thresholds"],
            [
                plots.Series(
                    PROXY_LABELS[name], [v if v is not None and v >= 0 else None for v in values]
                )
                for name, values in proxies["curves"].items()
            ],
            title="Krippendorff's alpha with the humans when S >= threshold counts as relevant",
            description="Thresholds where alpha is negative (worse than chance) are not drawn.",
            x_label="threshold",
            y_label="alpha",
        )
    return render(
        request,
        "annotation/agreement.html",
        {
            "campaign": campaign,
            "report": report,
            "charts": charts,
            "proxies": proxies,
            "proxy_chart": proxy_chart,
            "proxy_labels": PROXY_LABELS,
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
        return _adjudicate_post(request, campaign)
    waiting = (
        Pair.objects.filter(campaign=campaign)
        .filter(
            Q(status=Pair.Status.DISAGREEMENT, adjudicated="")
            | Q(held=True)
            | Q(status=Pair.Status.PENDING, label_count__gte=2, label_count=F("relevant_count") * 2)
        )
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
    return render(
        request,
        "annotation/adjudicate.html",
        {"campaign": campaign, "page": page, "recent": recent},
    )


def _adjudicate_post(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    pair = get_object_or_404(Pair, pk=request.POST.get("pair", 0), campaign=campaign)
    decision = request.POST.get("decision", "")
    note = request.POST.get("note", "").strip()[:1000]
    if decision not in ("relevant", "irrelevant", "return"):
        messages.error(request, "Choose relevant, irrelevant or return to the queue.")
        return redirect(request.get_full_path())
    label = None if decision == "return" else decision
    open_escalation = pair.escalations.filter(resolved_at__isnull=True).first()
    if open_escalation is not None:
        assignment.resolve_escalation(open_escalation, request.user, label=label, note=note)
    elif label is not None:
        assignment.adjudicate(pair, request.user, label)
    messages.success(
        request,
        f"Pair {pair.caption.key} × {pair.video.key}: "
        + ("returned to the judging queue." if label is None else f"adjudicated {label}."),
    )
    return redirect(request.get_full_path())


@admins_only
def export(request: HttpRequest, campaign_id: int, fmt: str) -> HttpResponse:
    """Stream one export format of the campaign's labels (admins only)."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    if fmt not in EXPORT_FORMATS:
        raise Http404("unknown export format")
    response = StreamingHttpResponse(
        export_chunks(campaign, fmt), content_type=exports.CONTENT_TYPES[fmt]
    )
    response["Content-Disposition"] = f'attachment; filename="{exports.filename(campaign, fmt)}"'
    return response


@require_POST
@admins_only
def resolve(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Store the campaign's final labels as a label set that re-scoring reads (admins only)."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    try:
        label_set = resolve_campaign(campaign)
    except LabelSetError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Label set {label_set.name!r}: {label_set.relevant_count} relevant, "
            f"{label_set.irrelevant_count} irrelevant, {label_set.disagreement_count} "
            "disagreements.",
        )
    return redirect("campaigns")
