"""Routes of the judging API."""

from rest_framework.routers import DefaultRouter

from annotation.api.views import CampaignViewSet

router = DefaultRouter()
router.register("campaigns", CampaignViewSet, basename="campaign")
urlpatterns = router.urls
