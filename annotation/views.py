"""Pages of the annotation app: choosing a campaign and the judging page."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from annotation import roles
from annotation.models import Campaign
from retrieval.models import Dataset


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Landing page: the datasets; annotators, who only judge, go straight to judging."""
    if roles.only_annotator(request.user):
        return redirect("judge-campaigns")
    return render(request, "retrieval/home.html", {"datasets": Dataset.objects.all()})


def require_annotator(user) -> None:
    if not (roles.has_role(user, roles.ANNOTATOR) or roles.has_role(user, roles.ADMIN)):
        raise PermissionDenied("Only annotators can judge pairs.")


@login_required
def campaign_list(request: HttpRequest) -> HttpResponse:
    """Active campaigns the annotator can judge."""
    require_annotator(request.user)
    campaigns = Campaign.objects.filter(status=Campaign.Status.ACTIVE).select_related("dataset")
    return render(request, "annotation/campaigns.html", {"campaigns": campaigns})


@login_required
def judge(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The judging page: the client talks to the API under ``api_base``."""
    require_annotator(request.user)
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    return render(
        request,
        "annotation/judge.html",
        {"campaign": campaign, "api_base": f"/api/campaigns/{campaign.pk}/"},
    )
