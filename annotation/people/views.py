"""The campaign's people page: every annotator with their scores and status, and an admin's
actions on them (each a POST to :mod:`annotation.people.service`; a discount is confirmed
on a GET page that names its count first). Researchers read it; only admins act.
"""

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from annotation.assessors import service as machine_assessors
from annotation.campaign_read import live_figures
from annotation.campaign_read.views import form_errors
from annotation.campaigns.lookup import campaign_by_id
from annotation.models import Campaign
from annotation.people import service as people
from annotation.people.forms import DiscountForm, InviteForm, NewAnnotatorForm, PauseForm
from config import roles
from config.error_handling import Refusal, user_errors_back

researchers_only = roles.permission_required(
    roles.VIEW_CAMPAIGN_REPORTS, "Only researchers and admins can see a campaign's annotators."
)
admins_only = roles.permission_required(
    roles.MANAGE_CAMPAIGNS, "Only admins can act on a campaign's annotators."
)


def _back(campaign: Campaign) -> HttpResponse:
    return redirect("campaign-annotators", campaign_id=campaign.pk)


def _people_page(
    request: HttpRequest, campaign: Campaign, new_form=None, status: int = 200
) -> HttpResponse:
    live = live_figures.live_figures(campaign, (live_figures.SCORES,))
    page = people.campaign_people(campaign, scores=live[live_figures.SCORES])
    return render(
        request,
        "annotation/annotators.html",
        {
            "campaign": campaign,
            "live": live,
            "page": page,
            "assessors": machine_assessors.campaign_assessors(campaign),
            "invite_form": InviteForm(choices=page.invitable),
            "new_form": new_form or NewAnnotatorForm(),
        },
        status=status,
    )


@require_safe
@researchers_only
def annotators(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Everyone with a part in the campaign: qualification, gold scores, labels, pace, status;
    and the machine assessors beside them."""
    return _people_page(request, campaign_by_id(campaign_id))


def _admit(request, campaign, annotator) -> str:
    people.admit(campaign, annotator, request.user)
    return f"{annotator.username} is admitted: they judge without further qualification."


def _pause(request, campaign, annotator) -> str:
    form = PauseForm(request.POST)
    if not form.is_valid():
        raise people.PeopleError(" ".join(e for errors in form.errors.values() for e in errors))
    people.pause(campaign, annotator, request.user, form.cleaned_data["reason"])
    return (
        f"{annotator.username} is paused: the pairs they held went back to the queue, and "
        "they are served nothing and their answers are refused until reinstated."
    )


def _reinstate(request, campaign, annotator) -> str:
    people.reinstate(campaign, annotator, request.user)
    return f"{annotator.username} is reinstated: they are served pairs again; {people.REINSTATED}."


ACTIONS = {"admit": _admit, "pause": _pause, "reinstate": _reinstate}


@user_errors_back("campaign-annotators", "campaign_id")
@require_POST
@admins_only
def annotator_action(
    request: HttpRequest, campaign_id: int, annotator_id: int, action: str
) -> HttpResponse:
    """Admit, pause or reinstate one annotator, then back to the people page with a message."""
    act = ACTIONS.get(action)
    if act is None:
        raise Http404("unknown action")
    campaign = campaign_by_id(campaign_id)
    annotator = people.annotator(annotator_id)
    messages.success(request, act(request, campaign, annotator))
    return _back(campaign)


@require_http_methods(["GET", "HEAD", "POST"])
@admins_only
def discount(request: HttpRequest, campaign_id: int, annotator_id: int) -> HttpResponse:
    """GET: how many of the annotator's labels (since a time) a discount takes back, on how
    many pairs. POST, with that count: do it."""
    campaign = campaign_by_id(campaign_id)
    annotator = people.annotator(annotator_id)
    posted = request.method == "POST"
    form = DiscountForm(request.POST if posted else request.GET)
    if not form.is_valid():
        return _confirmation(request, campaign, annotator, form, None, status=400)
    since = form.cleaned_data["since"]
    preview = people.discount_preview(campaign, annotator, since)
    if not posted:
        return _confirmation(request, campaign, annotator, form, preview)
    expected = form.cleaned_data["expected"]
    if expected is None:
        messages.error(request, "Nothing was discounted: confirm the count on this page first.")
        return _confirmation(request, campaign, annotator, form, preview, status=400)
    if expected != preview.labels:
        messages.warning(
            request,
            f"The count changed from {expected} to {preview.labels} since you looked "
            "(labels came in or were undone): nothing was discounted; confirm again.",
        )
        return _confirmation(request, campaign, annotator, form, preview, status=409)
    n = people.discount(campaign, annotator, since, by=request.user)
    if n:
        messages.success(
            request,
            f"Discounted {n} label{'s' if n != 1 else ''} of {annotator.username}: "
            f"{preview.pairs} pair{'s' if preview.pairs != 1 else ''} went back to the "
            "judging queue.",
        )
    else:
        messages.info(request, f"{annotator.username} had no labels to discount.")
    return _back(campaign)


def _confirmation(request, campaign, annotator, form, preview, status: int = 200):
    return render(
        request,
        "annotation/annotator_discount.html",
        {"campaign": campaign, "annotator": annotator, "form": form, "preview": preview},
        status=status,
    )


@user_errors_back("campaign-annotators", "campaign_id")
@require_POST
@admins_only
def invite(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Put annotators on the campaign's list before their first label."""
    campaign = campaign_by_id(campaign_id)
    form = InviteForm(request.POST, choices=people.judges())
    if not form.is_valid():
        form_errors(request, form)
        return _back(campaign)
    names = people.invite(campaign, form.cleaned_data["annotators"], request.user)
    messages.success(request, f"Invited {', '.join(names)} to {campaign.name}.")
    return _back(campaign)


NEW_ACCOUNT_KEY = "firepool-new-annotator"
"""Session key holding a just-made account until :func:`annotator_made` shows it."""


@require_POST
@admins_only
def add_annotator(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Make a new annotator account and invite it (a refused name: the page again, 400), then
    redirect to :func:`annotator_made` (POST, redirect, GET)."""
    campaign = campaign_by_id(campaign_id)
    form = NewAnnotatorForm(request.POST)
    if form.is_valid():
        with Refusal(form, only=people.PeopleError):  # on the field an AccountError names
            made = people.create_annotator(
                campaign, form.cleaned_data["username"], form.cleaned_data["email"], request.user
            )
            request.session[NEW_ACCOUNT_KEY] = {
                "campaign": campaign.pk,
                "username": made.username,
                "email": made.email,
                "password": made.password,
            }
            return redirect("campaign-annotator-made", campaign_id=campaign.pk)
    return _people_page(request, campaign, new_form=form, status=400)


@require_safe
@admins_only
def annotator_made(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Show the account :func:`add_annotator` just made with its password, once: it waits in
    the server-side session and is taken out as the (never cached) page is drawn."""
    campaign = campaign_by_id(campaign_id)
    made = request.session.get(NEW_ACCOUNT_KEY) or {}
    made = request.session.pop(NEW_ACCOUNT_KEY) if made.get("campaign") == campaign.pk else None
    response = render(
        request, "annotation/annotator_created.html", {"campaign": campaign, "made": made}
    )
    add_never_cache_headers(response)
    return response
