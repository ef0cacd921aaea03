"""Pages of the judging order: every order replayed against a dataset's complete labels, and
an admin's actions on the live queue (reopen parked pairs, draw random queries to judge first)."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.campaign_read import charts as report_figures
from annotation.campaigns.forms import EstimateSampleForm
from annotation.campaigns.lookup import campaign_by_id
from annotation.ordering import priorities, samples
from annotation.simulation.replay_service import ReplayError, stored_comparison
from config import roles
from config.error_handling import Refusal, user_errors_back
from config.redirects import back
from retrieval.datasets.lookup import get_dataset, get_label_set

admins_only = roles.permission_required(roles.MANAGE_CAMPAIGNS, "Only admins can do this.")
researchers_only = roles.permission_required(
    roles.VIEW_CAMPAIGN_REPORTS, "Only researchers and admins can see campaign reports."
)


@require_POST
@admins_only
def reopen(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Serve the pairs the judging order had parked as no longer needed (admins only)."""
    campaign = campaign_by_id(campaign_id)
    with transaction.atomic():
        reopened = priorities.reopen(campaign)
    if reopened:
        messages.success(
            request,
            f"{reopened} parked pair{'s are' if reopened != 1 else ' is'} back in the judging queue.",
        )
    else:  # a page older than the queue: not a success to report
        messages.warning(request, "No pair was parked any more: nothing was reopened.")
    return back(request, "campaign-agreement", campaign_id=campaign.pk)


@user_errors_back("campaign-agreement", "campaign_id")
@require_POST
@admins_only
def estimate_sample(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Draw random queries to judge next, for estimates of what judging has not settled."""
    campaign = campaign_by_id(campaign_id)
    form = EstimateSampleForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(errors)}")
    else:
        draw = samples.draw_sample(campaign, form.cleaned_data["pairs"])
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
    dataset = get_dataset(dataset_name)
    wanted = request.GET.get("labels")
    label_set = get_label_set(dataset, wanted) if wanted else None
    context = {"dataset": dataset, "label_set": label_set}
    with (refusal := Refusal(only=ReplayError)):
        stored = stored_comparison(dataset, label_set)
    if refusal.error is not None:
        return render(
            request, "annotation/judging_orders.html", {**context, "error": refusal.message}, 400
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
