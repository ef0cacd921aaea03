"""URL map of the whole site."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation import views as annotation_views
from annotation.campaign_read import views as resolve_views
from annotation.campaigns import views as campaign_views
from annotation.people import views as people_views
from config import token_views
from config.auth_views import ThrottledLoginView
from retrieval import report_index
from retrieval import views as retrieval_views


def _favicon_url() -> str:
    return f"{settings.STATIC_URL}favicon.svg"


urlpatterns = [
    path("", annotation_views.home, name="home"),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The admin site's login form goes through the same throttle as the site's own.
    path("admin/login/", ThrottledLoginView.as_view(), name="admin-login"),
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico where a page names no icon (a JSON answer, a video). The
    # file's unhashed name, which stays the same across deployments: the redirect is permanent.
    path(
        "favicon.ico",
        RedirectView.as_view(url=lazy(_favicon_url, str)(), permanent=True),
        name="favicon",
    ),
    path("account/tokens/", token_views.tokens, name="account-tokens"),
    path("account/tokens/<int:token_id>/revoke/", token_views.revoke, name="account-token-revoke"),
    path("media/<path:path>", retrieval_views.serve_media, name="media"),
    path("judge/", annotation_views.campaign_list, name="judge-campaigns"),
    path("judge/<int:campaign_id>/", annotation_views.judge, name="judge"),
    path("campaigns/", annotation_views.campaigns, name="campaigns"),
    path("campaigns/new/", campaign_views.campaign_new, name="campaign-new"),
    path("campaigns/<int:campaign_id>/edit/", campaign_views.campaign_edit, name="campaign-edit"),
    path(
        "campaigns/<int:campaign_id>/status/",
        campaign_views.campaign_status,
        name="campaign-status",
    ),
    path(
        "campaigns/<int:campaign_id>/gold/import/",
        campaign_views.gold_import,
        name="campaign-gold-import",
    ),
    path(
        "campaigns/<int:campaign_id>/gold/promote-decided/",
        campaign_views.gold_promote,
        name="campaign-gold-promote",
    ),
    path("campaigns/<int:campaign_id>/", annotation_views.campaign, name="campaign"),
    path(
        "campaigns/<int:campaign_id>/agreement/",
        annotation_views.agreement,
        name="campaign-agreement",
    ),
    path(
        "campaigns/<int:campaign_id>/annotators/",
        people_views.annotators,
        name="campaign-annotators",
    ),
    path(
        "campaigns/<int:campaign_id>/annotators/invite/",
        people_views.invite,
        name="campaign-annotators-invite",
    ),
    path(
        "campaigns/<int:campaign_id>/annotators/add/",
        people_views.add_annotator,
        name="campaign-annotators-add",
    ),
    path(
        "campaigns/<int:campaign_id>/annotators/made/",
        people_views.annotator_made,
        name="campaign-annotator-made",
    ),
    path(
        "campaigns/<int:campaign_id>/annotators/<int:annotator_id>/discount/",
        people_views.discount,
        name="campaign-annotator-discount",
    ),
    path(
        "campaigns/<int:campaign_id>/annotators/<int:annotator_id>/<str:action>/",
        people_views.annotator_action,
        name="campaign-annotator-action",
    ),
    path(
        "campaigns/<int:campaign_id>/adjudicate/",
        annotation_views.adjudicate,
        name="campaign-adjudicate",
    ),
    path(
        "campaigns/<int:campaign_id>/gold/promote/",
        annotation_views.promote_gold,
        name="campaign-promote-gold",
    ),
    path(
        "campaigns/<int:campaign_id>/export/<str:fmt>/",
        annotation_views.export,
        name="campaign-export",
    ),
    path("campaigns/<int:campaign_id>/resolve/", resolve_views.resolve, name="campaign-resolve"),
    path("campaigns/<int:campaign_id>/reopen/", annotation_views.reopen, name="campaign-reopen"),
    path(
        "campaigns/<int:campaign_id>/sample/",
        annotation_views.estimate_sample,
        name="campaign-sample",
    ),
    path(
        "campaigns/missing/<name:dataset_name>/",
        annotation_views.judge_missing,
        name="campaign-missing",
    ),
    path("datasets/", retrieval_views.datasets, name="datasets"),
    path("datasets/<name:dataset_name>/", retrieval_views.dataset, name="dataset"),
    path(
        "datasets/<name:dataset_name>/leaderboard/",
        retrieval_views.leaderboard,
        name="leaderboard",
    ),
    path(
        "datasets/<name:dataset_name>/leaderboard/export/<str:fmt>/",
        retrieval_views.leaderboard_export,
        name="leaderboard-export",
    ),
    path("upload/dataset/", retrieval_views.upload_dataset, name="upload-dataset"),
    path("datasets/<name:dataset_name>/add-model/", retrieval_views.add_model, name="add-model"),
    path(
        "datasets/<name:dataset_name>/models/<name:model_name>/",
        retrieval_views.dataset_model,
        name="dataset-model",
    ),
    path("label-sets/", retrieval_views.label_sets, name="label-sets"),
    path(
        "datasets/<name:dataset_name>/default-label-set/",
        retrieval_views.choose_default_label_set,
        name="choose-default-label-set",
    ),
    path("reports/", report_index.reports, name="reports"),
    path("reports/<name:dataset_name>/", retrieval_views.report, name="report"),
    path("reports/<name:dataset_name>/data/", retrieval_views.report_data, name="report-data"),
    path(
        "reports/<name:dataset_name>/judging-orders/",
        annotation_views.judging_orders,
        name="judging-orders",
    ),
    path("jobs/", include("jobs.urls")),
    path("api/", include("annotation.api.urls")),
    path("api/", include("retrieval.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
]

handler400 = "config.error_handling.bad_request"
