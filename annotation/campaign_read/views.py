"""Resolving a campaign into a label set from its page (admins only), with a confirmation
before a Dawid-Skene resolution replaces a label set of the same name: a GET (or a POST
without ``confirm``) shows what would be replaced, a POST with ``confirm`` does it. The
success message says how many majority labels the model overturned, and whose."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotation.campaign_read.resolution import (
    DAWID_SKENE,
    MAJORITY,
    METHODS,
    resolution_target,
    resolve_campaign,
)
from annotation.models import Campaign
from annotation.views import _back, admins_only
from retrieval.services.labelsets import LabelSetError

SHOWN_ANNOTATORS = 5
"""Annotators named in the message, those with the most overturned labels first."""


@require_http_methods(["GET", "POST"])
@admins_only
def resolve(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Store the campaign's final labels as a label set that re-scoring reads."""
    campaign = get_object_or_404(Campaign.objects.select_related("dataset"), pk=campaign_id)
    data = request.POST if request.method == "POST" else request.GET
    method = str(data.get("method") or MAJORITY)
    if method not in METHODS:
        messages.error(request, f"Unknown resolution method {method[:40]!r}.")
        return _back(request, "campaigns")
    try:
        name, existing = resolution_target(campaign)
    except LabelSetError as exc:
        messages.error(request, str(exc))
        return _back(request, "campaigns")
    asks = method == DAWID_SKENE and existing is not None
    if request.method == "GET" or (asks and data.get("confirm") != "yes"):
        context = {"campaign": campaign, "method": method, "name": name, "existing": existing}
        context["next"] = data.get("next") or reverse("campaign", args=[campaign.pk])
        return render(request, "annotation/resolve_confirm.html", context)
    try:
        label_set = resolve_campaign(campaign, method=method)
    except LabelSetError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _outcome(label_set, method))
    return _back(request, "campaigns")


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
