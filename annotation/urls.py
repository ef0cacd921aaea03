"""The annotation app's pages: judging, campaigns, gold, annotators, the judging order and the
campaign's read side (agreement, adjudication, exports, resolution)."""

from django.urls import path

from annotation.campaign_read import views as read_views
from annotation.campaigns import views as campaign_views
from annotation.gold import views as gold_views
from annotation.judging import views as judging_views
from annotation.ordering import views as ordering_views
from annotation.people import views as people_views

ONE = "campaigns/<int:campaign_id>/"
"""The prefix of one campaign's pages."""
ANNOTATOR = "<int:annotator_id>/"

urlpatterns = [
    path("", campaign_views.home, name="home"),
    path("judge/", judging_views.campaign_list, name="judge-campaigns"),
    path("judge/<int:campaign_id>/", judging_views.judge, name="judge"),
    path("campaigns/", campaign_views.campaigns, name="campaigns"),
    path("campaigns/new/", campaign_views.campaign_new, name="campaign-new"),
    path(f"{ONE}edit/", campaign_views.campaign_edit, name="campaign-edit"),
    path(f"{ONE}status/", campaign_views.campaign_status, name="campaign-status"),
    path(f"{ONE}gold/import/", gold_views.gold_import, name="campaign-gold-import"),
    path(f"{ONE}gold/promote-decided/", gold_views.gold_promote, name="campaign-gold-promote"),
    path(ONE, campaign_views.campaign, name="campaign"),
    path(f"{ONE}agreement/", read_views.agreement, name="campaign-agreement"),
    path(f"{ONE}annotators/", people_views.annotators, name="campaign-annotators"),
    path(f"{ONE}annotators/invite/", people_views.invite, name="campaign-annotators-invite"),
    path(f"{ONE}annotators/add/", people_views.add_annotator, name="campaign-annotators-add"),
    path(f"{ONE}annotators/made/", people_views.annotator_made, name="campaign-annotator-made"),
    path(
        f"{ONE}annotators/{ANNOTATOR}discount/",
        people_views.discount,
        name="campaign-annotator-discount",
    ),
    path(
        f"{ONE}annotators/{ANNOTATOR}<str:action>/",
        people_views.annotator_action,
        name="campaign-annotator-action",
    ),
    path(f"{ONE}adjudicate/", read_views.adjudicate, name="campaign-adjudicate"),
    path(f"{ONE}gold/promote/", gold_views.promote_gold, name="campaign-promote-gold"),
    path(f"{ONE}export/<str:fmt>/", read_views.export, name="campaign-export"),
    path(f"{ONE}resolve/", read_views.resolve, name="campaign-resolve"),
    path(f"{ONE}reopen/", ordering_views.reopen, name="campaign-reopen"),
    path(f"{ONE}sample/", ordering_views.estimate_sample, name="campaign-sample"),
    path(
        "campaigns/missing/<name:dataset_name>/",
        campaign_views.judge_missing,
        name="campaign-missing",
    ),
    path(
        "reports/<name:dataset_name>/judging-orders/",
        ordering_views.judging_orders,
        name="judging-orders",
    ),
]
