"""The retrieval app's pages: datasets, models, leaderboards, label sets, reports and media."""

from django.urls import path

from retrieval.datasets import views as datasets
from retrieval.label_sets import views as label_sets
from retrieval.media import views as media
from retrieval.scoring import views as scoring

urlpatterns = [
    path("media/<path:path>", media.serve_media, name="media"),
    path("datasets/", datasets.datasets, name="datasets"),
    path("datasets/<name:dataset_name>/", datasets.dataset, name="dataset"),
    path(
        "datasets/<name:dataset_name>/leaderboard/",
        scoring.leaderboard,
        name="leaderboard",
    ),
    path(
        "datasets/<name:dataset_name>/leaderboard/export/<str:fmt>/",
        scoring.leaderboard_export,
        name="leaderboard-export",
    ),
    path("upload/dataset/", datasets.upload_dataset, name="upload-dataset"),
    path("datasets/<name:dataset_name>/add-model/", datasets.add_model, name="add-model"),
    path(
        "datasets/<name:dataset_name>/models/<name:model_name>/",
        datasets.dataset_model,
        name="dataset-model",
    ),
    path("label-sets/", label_sets.label_sets, name="label-sets"),
    path(
        "datasets/<name:dataset_name>/default-label-set/",
        label_sets.choose_default_label_set,
        name="choose-default-label-set",
    ),
    path("reports/", scoring.reports, name="reports"),
    path("reports/<name:dataset_name>/", scoring.report, name="report"),
    path("reports/<name:dataset_name>/data/", scoring.report_data, name="report-data"),
]
