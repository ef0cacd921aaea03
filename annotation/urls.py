"""The annotation app's pages: judging, campaigns, gold, annotators, the judging order and the
campaign's read side (agreement, adjudication, exports, resolution)."""

from django.urls import path

from annotation.campaign_read import views as campaign_read_views
from annotation.campaigns import views as campaigns_views
from annotation.gold import views as gold_views
from annotation.judging import views as judging_views
from annotation.ordering import views as ordering_views
from annotation.people import views as people_views

urlpatterns = [
    path("", campaigns_views.home, name="home"),
    path("judge/", judging_views.campaign_list, name="judge-campaigns"),
    path("judge/<int:campaign_id>/", judging_views.judge, name="judge"),
    path("campaigns/", campaigns_views.campaigns, name="campaigns"),
    path("campaigns/new/", campaigns_views.campaign_new, name="campaign-new"),
    path("campaigns/<int:campaign_id>/edit/", campaigns_views.campaign_edit, name="campaign-edit"),
    path(
        "campaigns/<int:campaign_id>/status/",
        campaigns_views.campaign_status,
        name="campaign-status",
    ),
    path(
        "campaigns/<int:campaign_id>/gold/import/",
        gold_views.gold_import,
        name="campaign-gold-import",
    ),
    path(
        "campaigns/<int:campaign_id>/gold/promote-decided/",
        gold_views.gold_promote,
        name="campaign-gold-promote",
    ),
    path("campaigns/<int:campaign_id>/", campaigns_views.campaign, name="campaign"),
    path(
        "campaigns/<int:campaign_id>/agreement/",
        campaign_read_views.agreement,
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
        campaign_read_views.adjudicate,
        name="campaign-adjudicate",
    ),
    path(
        "campaigns/<int:campaign_id>/gold/promote/",
        gold_views.promote_gold,
        name="campaign-promote-gold",
    ),
    path(
        "campaigns/<int:campaign_id>/export/<str:fmt>/",
        campaign_read_views.export,
        name="campaign-export",
    ),
    path(
        "campaigns/<int:campaign_id>/resolve/", campaign_read_views.resolve, name="campaign-resolve"
    ),
    path("campaigns/<int:campaign_id>/reopen/", ordering_views.reopen, name="campaign-reopen"),
    path(
        "campaigns/<int:campaign_id>/sample/",
        ordering_views.estimate_sample,
        name="campaign-sample",
    ),
    path(
        "campaigns/missing/<name:dataset_name>/",
        campaigns_views.judge_missing,
        name="campaign-missing",
    ),
    path(
        "reports/<name:dataset_name>/judging-orders/",
        ordering_views.judging_orders,
        name="judging-orders",
    ),
]
