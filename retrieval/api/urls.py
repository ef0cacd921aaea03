"""Routes of the scoring API."""

from django.urls import path

from retrieval.api.views import JobScoresView, RunUploadView

urlpatterns = [
    path("datasets/<name:dataset_name>/runs/", RunUploadView.as_view(), name="dataset-runs"),
    path("scores/<int:job_id>/", JobScoresView.as_view(), name="run-scores"),
]
