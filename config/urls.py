"""URL map of the whole site."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from retrieval import views as retrieval_views

urlpatterns = [
    path("", retrieval_views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("media/<path:path>", retrieval_views.serve_media, name="media"),
]
