"""A campaign's read side as pages: agreement, adjudication, exports and resolution (a
Dawid-Skene resolution that would replace a label set asks for ``confirm`` first)."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_http_methods

from annotation.campaign_read import charts as report_figures
from annotation.campaign_read import exports, live_figures
from annotation.campaign_read.adjudication import adjudication, decide
from annotation.campaign_read.exports import EXPORT_FORMATS, export_chunks
from annotation.campaign_read.resolution import (
    DAWID_SKENE,
    MAJORITY,
    METHODS,
    resolution_target,
    resolve_campaign,
)
from annotation.campaigns.forms import RETURN, AdjudicationForm
from annotation.campaigns.lookup import campaign_by_id
from annotation.judging import escalations
from annotation.models import Campaign, Judgement, Pair
from config import roles
from config.error_handling import user_errors_back
from config.redirects import back

admins_only = roles.permission_required(roles.MANAGE_CAMPAIGNS, "Only admins can do this.")
researchers_only = roles.permission_required(
    roles.VIEW_CAMPAIGN_REPORTS, "Only researchers and admins can see campaign reports."
)

SHOWN_ANNOTATORS = 5
"""Annotators named in the message, those with the most overturned labels first."""


@user_errors_back("campaigns")
@require_http_methods(["GET", "POST"])
@admins_only
def resolve(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Store the campaign's final labels as a label set that re-scoring reads."""
    campaign = campaign_by_id(campaign_id)
    data = request.POST if request.method == "POST" else request.GET
    method = str(data.get("method") or MAJORITY)
    if method not in METHODS:
        messages.error(request, f"Unknown resolution method {method[:40]!r}.")
        return back(request, "campaigns")
    name, existing = resolution_target(campaign)
    asks = method == DAWID_SKENE and existing is not None
    if request.method == "GET" or (asks and data.get("confirm") != "yes"):
        context = {"campaign": campaign, "method": method, "name": name, "existing": existing}
        context["next"] = data.get("next") or reverse("campaign", args=[campaign.pk])
        return render(request, "annotation/resolve_confirm.html", context)
    label_set = resolve_campaign(campaign, method=method)
    messages.success(request, _outcome(label_set, method))
    return back(request, "campaigns")


def _outcome(label_set, method: str) -> str:
    """The success message: the set's counts, and for Dawid-Skene what it overturned."""
    text = (
        f"Label set {label_set.name!r} ({method}): {label_set.relevant_count} relevant, "
        f"{label_set.irrelevant_count} irrelevant, {label_set.disagreement_count} disagreements."
    )
    turned = (label_set.metadata.get("dawid_skene") or {}).get("overturned")
    if not turned:
        return text
    whose = list(turned["annotators"].items())[:SHOWN_ANNOTATORS]
    text += (
        f" The model overturned {turned['pairs']} majority label"
        f"{'' if turned['pairs'] == 1 else 's'} and settled {turned['settled_disagreements']} "
        "disagreements"
    )
    if whose:
        text += "; labels overturned most: " + ", ".join(f"{n} {c}" for n, c in whose)
    return text + "."


@researchers_only
def agreement(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Agreement figures with bootstrap intervals (FIRE §3.2, Table 2, Fig. 7)."""
    campaign = campaign_by_id(campaign_id)
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


@admins_only
def adjudicate(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Pairs waiting for an admin, with their video and labels (FIRE §3.1)."""
    campaign = campaign_by_id(campaign_id)
    if request.method != "POST":
        return adjudication_page(request, campaign)
    form = AdjudicationForm(request.POST)
    if not form.is_valid():
        form_errors(request, form)
        return adjudication_page(request, campaign, status=400)
    data = form.cleaned_data
    label = None if data["decision"] == RETURN else data["decision"]
    pair = decide(campaign, data["pair"], request.user, label, data["note"].strip())
    if pair is None:
        messages.error(request, "That pair is not in this campaign.")
        return adjudication_page(request, campaign, status=404)
    messages.success(
        request,
        f"Pair {pair.caption.key} × {pair.video.key}: "
        + ("returned to the judging queue." if label is None else f"adjudicated {label}."),
    )
    return redirect(request.get_full_path())


def form_errors(request: HttpRequest, form) -> None:
    """Each of the form's field errors as a message, after the field's name."""
    for field, errors in form.errors.items():
        messages.error(request, f"{field}: {' '.join(errors)}")


def adjudication_page(request: HttpRequest, campaign: Campaign, status: int = 200):
    found = adjudication(campaign)
    page = Paginator(found.waiting, ADJUDICATION_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "annotation/adjudicate.html",
        {
            "campaign": campaign,
            "page": page,
            "recent": found.recent,
            "Label": Judgement.Label,
            "Status": Pair.Status,
            "RETURN": RETURN,
            "BROKEN_VIDEO_REASON": escalations.BROKEN_VIDEO_REASON,
            "gold_pair_ids": found.gold_pair_ids,
            "gold_count": found.gold_count,
            "decided_count": found.decided_count,
        },
        status=status,
    )


@admins_only
def export(request: HttpRequest, campaign_id: int, fmt: str) -> HttpResponse:
    """Stream one export format of the campaign's labels (admins only)."""
    campaign = campaign_by_id(campaign_id)
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


ADJUDICATION_PAGE = 10
