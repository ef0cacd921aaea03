"""The scoring API: upload a TREC run to be scored, then poll for its scores."""

from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.generics import get_object_or_404
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from config import roles
from jobs.models import Job
from retrieval.api.permissions import SCRIPT_AUTHENTICATION, CanScoreRuns, RunUploadThrottle
from retrieval.api.serializers import (
    JobScoresSerializer,
    RunUploadSerializer,
    ScoreLinkSerializer,
)
from retrieval.models import Dataset
from retrieval.services.run_scoring import SCORE_RUN, job_scores, submit_run_file


def error_schema(description: str) -> dict:
    """The ``{"code", "detail"}`` body of an API error, for the schema."""
    return {
        "type": "object",
        "description": description,
        "properties": {"code": {"type": "string"}, "detail": {}},
    }


class RunUploadView(APIView):
    """Register a run file as a model of the dataset and start scoring it."""

    authentication_classes = SCRIPT_AUTHENTICATION
    permission_classes = [CanScoreRuns]
    parser_classes = [MultiPartParser]
    throttle_classes = [RunUploadThrottle]

    def throttled(self, request, wait):
        raise RunUploadThrottle.refusal(wait)

    @extend_schema(
        operation_id="datasets_runs_create",
        request={"multipart/form-data": RunUploadSerializer},
        responses={
            202: ScoreLinkSerializer,
            400: error_schema("A malformed run file (the message names its line and field)."),
            404: error_schema("No such dataset or label set."),
            409: error_schema("The dataset already has a model or run with this name."),
            429: error_schema("Too many uploads; wait and try again."),
        },
        examples=[
            OpenApiExample(
                "Accepted", value={"url": "https://firepool.example/api/scores/7/", "job": 7}
            )
        ],
    )
    def post(self, request, dataset_name: str):
        """Parse the TREC run in ``run`` and register it as model ``name``; 202 with the URL
        of its scores. A malformed file is a 400 naming the line and field, and writes nothing."""
        dataset = get_object_or_404(Dataset, name=dataset_name)
        upload = RunUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        values = upload.validated_data
        job = submit_run_file(
            dataset, values["name"], values["run"], values.get("labels", ""), request.user
        )
        url = request.build_absolute_uri(reverse("run-scores", args=[job.pk]))
        body = ScoreLinkSerializer({"url": url, "job": job.pk}).data
        return Response(body, status=202, headers={"Location": url})


class JobScoresView(APIView):
    """A scoring job's status and scores, for the user who uploaded the run (or an admin)."""

    authentication_classes = SCRIPT_AUTHENTICATION
    permission_classes = [CanScoreRuns]

    @extend_schema(responses={200: JobScoresSerializer, 404: error_schema("No such job.")})
    def get(self, request, job_id: int):
        """``status`` is queued, running, done or failed; ``scores`` and ``original`` are
        fractions in [0, 1] once done (null before)."""
        job = get_object_or_404(Job, pk=job_id, kind=SCORE_RUN)
        if job.created_by_id != request.user.pk and not request.user.has_perm(
            roles.START_ADMIN_JOB
        ):
            return Response({"code": "not_found", "detail": "No such job."}, status=404)
        return Response(JobScoresSerializer(job_scores(job)).data)
