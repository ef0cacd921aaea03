"""Routes of the judging API."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from annotation.api.views import CampaignJobView, CampaignViewSet

router = DefaultRouter()
router.register("campaigns", CampaignViewSet, basename="campaign")
urlpatterns = [
    path("campaign-jobs/<int:job_id>/", CampaignJobView.as_view(), name="campaign-job"),
    *router.urls,
]
