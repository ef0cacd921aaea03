"""Redirects after a form: back to the page the form came from, when it names one on this site."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme


def back(request: HttpRequest, default: str, **kwargs) -> HttpResponse:
    """Redirect to the form's ``next`` when it is a path on this site, else to ``default``."""
    target = request.POST.get("next", "")
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(default, **kwargs)
