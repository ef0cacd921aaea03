"""The judging pages: the campaigns an annotator can judge, and the judging page itself (its
client talks to the API)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from annotation.campaigns.lookup import campaign_by_id
from annotation.judging import queue as judging_queue
from annotation.people.progress import annotator_progress, judging_campaigns, work_first
from config import roles

judges_only = roles.permission_required(roles.JUDGE_PAIRS, "Only annotators can judge pairs.")


@judges_only
def campaign_list(request: HttpRequest) -> HttpResponse:
    """Active campaigns the annotator can judge, each with their own progress."""
    progress = work_first(annotator_progress(judging_campaigns(), request.user))
    return render(request, "annotation/campaigns.html", {"progress": progress})


@judges_only
def judge(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The judging page: the client talks to the API under ``api_base``."""
    campaign = campaign_by_id(campaign_id)
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
