"""Routes of the job pages."""

from django.urls import path

from jobs import views

urlpatterns = [
    path("", views.job_list, name="jobs"),
    path("start/<str:kind_name>/", views.job_start, name="job-start"),
    path("<int:job_id>/", views.job_detail, name="job-detail"),
    path("<int:job_id>/status/", views.job_status, name="job-status"),
    path("<int:job_id>/retry/", views.job_retry, name="job-retry"),
    path("<int:job_id>/output/", views.job_output, name="job-output"),
]
