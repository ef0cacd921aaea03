"""The retrieval app's pages: datasets, models, leaderboards, label sets, reports and media."""

from django.urls import path

from retrieval import views as retrieval_views
from retrieval.scoring import report_index

urlpatterns = [
    path("media/<path:path>", retrieval_views.serve_media, name="media"),
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
]
