"""The login page, with failed attempts throttled per username and client (see login_throttle)."""

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from config import login_throttle


class ThrottledLoginView(auth_views.LoginView):
    """Django's LoginView that answers 429, without checking the password, once over a limit."""

    throttled_template_name = "registration/login_throttled.html"

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        username = request.POST.get("username", "")
        wait = login_throttle.check_attempt(request, username)
        if wait:
            return self.throttled(request, wait)
        self.attempted_username = username
        return super().post(request, *args, **kwargs)

    def form_valid(self, form) -> HttpResponse:
        login_throttle.succeeded(self.request, self.attempted_username)
        return super().form_valid(form)

    def throttled(self, request: HttpRequest, wait: int) -> HttpResponse:
        """The 429 page: how long to wait, and a Retry-After header saying the same."""
        minutes = max(1, round(wait / 60))
        response = render(request, self.throttled_template_name, {"minutes": minutes}, status=429)
        response["Retry-After"] = str(wait)
        return response
