"""URL map of the whole site."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation import views as annotation_views
from retrieval import views as retrieval_views

urlpatterns = [
    path("", annotation_views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("media/<path:path>", retrieval_views.serve_media, name="media"),
    path("judge/", annotation_views.campaign_list, name="judge-campaigns"),
    path("judge/<int:campaign_id>/", annotation_views.judge, name="judge"),
    path("api/", include("annotation.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
]
