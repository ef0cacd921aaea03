"""URL map of the whole site: accounts, the admin site, the API, and each app's own ``urls``."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config import token_views
from config.auth_views import ThrottledLoginView


def _favicon_url() -> str:
    return f"{settings.STATIC_URL}favicon.svg"


urlpatterns = [
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The admin site's login form goes through the same throttle as the site's own.
    path("admin/login/", ThrottledLoginView.as_view(), name="admin-login"),
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico where a page names none; the unhashed name never changes.
    path(
        "favicon.ico",
        RedirectView.as_view(url=lazy(_favicon_url, str)(), permanent=True),
        name="favicon",
    ),
    path("account/tokens/", token_views.tokens, name="account-tokens"),
    path("account/tokens/<int:token_id>/revoke/", token_views.revoke, name="account-token-revoke"),
    path("", include("annotation.urls")),
    path("", include("retrieval.urls")),
    path("jobs/", include("jobs.urls")),
    path("api/", include("annotation.api.urls")),
    path("api/", include("retrieval.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
]

handler400 = "config.error_handling.bad_request"
