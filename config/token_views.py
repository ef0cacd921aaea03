"""The tokens page: make named API tokens (each key shown once), see their last use, revoke them."""

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from config import api_tokens, roles
from config.error_handling import Refusal
from config.roles import permission_required
from config.text_validators import TextValidator

REFUSAL = "Only researchers and admins use the API, so only they make API tokens."


class TokenForm(forms.Form):
    name = forms.CharField(
        validators=[TextValidator("token name", api_tokens.NAME_LENGTH)],
        help_text="What will use it, e.g. “laptop” or “nightly eval script”.",
    )


@never_cache
@require_http_methods(["GET", "POST"])
@permission_required(roles.MAKE_API_TOKENS, REFUSAL)
def tokens(request: HttpRequest) -> HttpResponse:
    """GET lists the user's tokens; POST makes one and shows its key in this answer only."""
    form = TokenForm(request.POST if request.method == "POST" else None)
    made = key = None
    if request.method == "POST" and form.is_valid():
        with Refusal(form, "name"):  # shown beside the form, on this page
            made, key = api_tokens.create(request.user, form.cleaned_data["name"])
    status = 400 if request.method == "POST" and form.errors else 200
    if made is not None:
        form = TokenForm()
    context = {
        "form": form,
        "made": made,
        "key": key,
        "tokens": api_tokens.tokens_of(request.user),
        "runs_url": request.build_absolute_uri("/api/datasets/DATASET/runs/"),
    }
    return render(request, "account/tokens.html", context, status=status)


@require_POST
@permission_required(roles.MAKE_API_TOKENS, REFUSAL)
def revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """Delete one of the user's tokens: scripts sending its key get a 401 from now on."""
    name = api_tokens.revoke(request.user, token_id)
    if name is None:
        raise Http404("No such token of yours (revoked already?).")
    messages.success(request, f"Revoked the token {name!r}: its key no longer works.")
    return redirect("account-tokens")
