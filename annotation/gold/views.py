"""Gold pages for admins: import a gold file, and promote decided pairs to gold (every decided
pair from its confirmation page, or one from the adjudication page)."""

from __future__ import annotations

import shutil

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.campaign_read.views import adjudication_page, form_errors
from annotation.campaigns.forms import PromoteForm
from annotation.campaigns.lookup import campaign_by_id
from annotation.campaigns.views import render_campaign
from annotation.gold import service as gold
from annotation.gold.forms import GoldFileForm, save_gold
from annotation.gold.jobs import GOLD_IMPORT
from annotation.models import Campaign
from config import roles
from config.error_handling import Refusal
from jobs.runner import submit
from retrieval.datasets.uploads import input_name, new_input_folder

admins_only = roles.permission_required(roles.MANAGE_CAMPAIGNS, "Only admins can do this.")


@require_POST
@admins_only
def promote_gold(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Make a decided pair (or every decided pair, with the count its confirmation page
    named) a gold pair, with an explanation; a refusal shows the page again with why."""
    campaign = campaign_by_id(campaign_id)
    form = PromoteForm(request.POST)
    if not form.is_valid():
        form_errors(request, form)
        return adjudication_page(request, campaign, status=400)
    every = form.cleaned_data["all_decided"]
    return _promote(
        request,
        campaign,
        form,
        adjudication_page,
        "campaign-adjudicate",
        pair_ids=None if every else [form.cleaned_data["pair"]],
        all_decided=bool(every),
        expected=form.cleaned_data["expected"] if every else None,
    )


def _promote(request, campaign: Campaign, form, page, done: str, **which) -> HttpResponse:
    """Promote the pairs ``which`` names with the form's texts: a refusal shows ``page`` again
    with why, a success goes to the ``done`` page."""
    data = form.cleaned_data
    with (refusal := Refusal(only=gold.GoldError)):
        result = gold.promote(
            campaign,
            explanation=data["explanation"],
            guideline=data["guideline"],
            user=request.user,
            **which,
        )
        messages.success(request, result.summary)
        return redirect(done, campaign_id=campaign.pk)
    messages.error(request, refusal.message)
    return page(request, campaign, status=refusal.status)


@require_POST
@admins_only
def gold_import(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Queue the import of an uploaded gold file into the campaign and go to its job page
    (the job reads the file, all or nothing, with progress: a bad file fails it naming its
    line and field); no file is a 400."""
    campaign = campaign_by_id(campaign_id)
    form = GoldFileForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "Choose a gold file to import.")
        return render_campaign(request, campaign, status=400)
    folder = new_input_folder()
    refusal = Refusal()
    with refusal:
        path, name = save_gold(form.cleaned_data["file"], folder)
        arguments = {"campaign": campaign.name, "file": input_name(path), "file_name": name}
        job = submit(GOLD_IMPORT, arguments, request.user)
        return redirect("job-detail", job_id=job.pk)
    # Refused before a job was recorded; after that, the job owns the file.
    shutil.rmtree(folder, ignore_errors=True)
    messages.error(request, refusal.message)
    return render_campaign(request, campaign, status=400)


@admins_only
def gold_promote(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Promote every decided pair that is not gold yet: GET names the count, POST with that
    count does it (a changed or missing count, or nothing to promote, promotes nothing)."""
    campaign = campaign_by_id(campaign_id)
    if request.method == "POST":
        form = PromoteForm({**request.POST.dict(), "pair": "", "all_decided": "on"})
        if not form.is_valid():
            for errors in form.errors.values():
                messages.error(request, " ".join(errors))
            return _promote_page(request, campaign, status=400)
        expected = form.cleaned_data["expected"]
        return _promote(
            request, campaign, form, _promote_page, "campaign", all_decided=True, expected=expected
        )
    return _promote_page(request, campaign)


def _promote_page(request: HttpRequest, campaign: Campaign, status: int = 200) -> HttpResponse:
    return render(
        request,
        "annotation/campaign_promote.html",
        {"campaign": campaign, "count": gold.promotable(campaign)},
        status=status,
    )
