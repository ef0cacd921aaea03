"""The scoring API: upload a TREC run to be scored, then poll for its scores."""

from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from config.api_tokens import SCRIPT_AUTHENTICATION
from config.error_handling import error_response
from retrieval.api.permissions import CanScoreRuns, RunUploadThrottle
from retrieval.api.serializers import JobScoresSerializer, RunUploadSerializer, ScoreLinkSerializer
from retrieval.datasets.lookup import datasets
from retrieval.scoring.run_scoring import job_scores, scoring_jobs, submit_run_file


class RunUploadView(GenericAPIView):
    """Register a run file as a model of the dataset and start scoring it."""

    authentication_classes = SCRIPT_AUTHENTICATION
    permission_classes = [CanScoreRuns]
    parser_classes = [MultiPartParser]
    throttle_classes = [RunUploadThrottle]
    lookup_field = "name"
    lookup_url_kwarg = "dataset_name"
    serializer_class = RunUploadSerializer

    def get_queryset(self):
        return datasets()

    def throttled(self, request, wait):
        raise RunUploadThrottle.refusal(wait)

    @extend_schema(
        operation_id="datasets_runs_create",
        request={"multipart/form-data": RunUploadSerializer},
        responses={
            202: ScoreLinkSerializer,
            400: error_response("A malformed run file (the message names its line and field)."),
            404: error_response("No such dataset or label set."),
            409: error_response("The dataset already has a model or run with this name."),
            429: error_response("Too many uploads; wait and try again."),
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
        dataset = self.get_object()
        upload = self.get_serializer(data=request.data)
        upload.is_valid(raise_exception=True)
        values = upload.validated_data
        job = submit_run_file(
            dataset, values["name"], values["run"], values.get("labels", ""), request.user
        )
        url = request.build_absolute_uri(reverse("run-scores", args=[job.pk]))
        body = ScoreLinkSerializer({"url": url, "job": job.pk}).data
        return Response(body, status=202, headers={"Location": url})


class JobScoresView(GenericAPIView):
    """A scoring job's status and scores, for its uploader or an admin (others get a 404)."""

    authentication_classes = SCRIPT_AUTHENTICATION
    permission_classes = [CanScoreRuns]
    lookup_url_kwarg = "job_id"
    serializer_class = JobScoresSerializer

    def get_queryset(self):
        return scoring_jobs()

    @extend_schema(responses={200: JobScoresSerializer, 404: error_response("No such job.")})
    def get(self, request, job_id: int):
        """``status`` is queued, running, done or failed; ``scores`` and ``original`` are
        fractions in [0, 1] once done (null before)."""
        return Response(self.get_serializer(job_scores(self.get_object())).data)
