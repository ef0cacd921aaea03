"""The judging API: campaigns (listed, read, and created by admins through the pool job), next
task, submit, undo, escalate, progress and standing."""

import functools

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from annotation.active import reading as active_reading
from annotation.api.permissions import (
    CampaignAccess,
    CanManageCampaigns,
    CanViewCampaignReports,
    IsAnnotator,
)
from annotation.api.serializers import (
    AssignmentSerializer,
    CampaignCreateSerializer,
    CampaignQueuedSerializer,
    CampaignSerializer,
    EscalateSerializer,
    ProgressSerializer,
    ProgressStateSerializer,
    StandingSerializer,
    SubmitResponseSerializer,
    SubmitSerializer,
    answer_data,
    queued_data,
)
from annotation.campaign_read import live_figures
from annotation.campaigns.lookup import listed_campaigns
from annotation.judging import answer, queue, statements, submit
from annotation.models import Campaign
from annotation.people.progress import annotator_progress
from config import roles
from config.api_tokens import SCRIPT_AUTHENTICATION, TokenAuthentication
from config.error_handling import ErrorSerializer, error_response
from jobs import runner
from jobs.registry import get_kind

REFUSALS = {400: ErrorSerializer, 404: ErrorSerializer, 409: ErrorSerializer}
"""The errors a judging write may answer (``config.error_handling``'s one body)."""
judging_action = functools.partial(action, detail=True, permission_classes=[IsAnnotator])
"""An action of an annotator on one campaign."""
report_action = functools.partial(
    action, detail=True, methods=["get"], permission_classes=[CanViewCampaignReports]
)
"""A campaign's stored figures, for researchers and admins."""


class CampaignViewSet(viewsets.ReadOnlyModelViewSet):
    """Campaigns: annotators see active ones and judge through the actions below; admins
    create them (:meth:`create`)."""

    serializer_class = CampaignSerializer
    permission_classes = [CampaignAccess]
    # A script's token as well as a session for creating a campaign (as for scoring runs); the
    # judging actions declare their own permissions and take the session only. Class
    # attributes, not overridden methods: a judging request's call path stays as it was.
    authentication_classes = [SessionAuthentication, TokenAuthentication]
    token_actions = ("create",)
    lookup_value_regex = "[0-9]+"
    """Campaign ids are digits: anything else is no campaign's, a 404 by routing."""

    def get_queryset(self):
        user = self.request.user
        if roles.has_perm(user, roles.VIEW_CAMPAIGN_REPORTS):
            return listed_campaigns()
        if roles.has_perm(user, roles.JUDGE_PAIRS):
            return listed_campaigns(active_only=True)
        return listed_campaigns().none()

    def get_object(self) -> Campaign:
        """The campaign the URL names (404 if none): the judging actions read it with one
        hand-written statement, several times cheaper than :meth:`get_queryset`. The
        permission class has checked the permission; a campaign passes no rule of its own
        unless :data:`roles.OBJECT_RULES` gives it one, so only then is it asked again."""
        if self.action == "retrieve":
            return super().get_object()
        found = statements.campaign(self.kwargs[self.lookup_field])
        if found is None:
            raise NotFound("No such campaign.")
        if any(model == found._meta.label_lower for _, model in roles.OBJECT_RULES):
            self.check_object_permissions(self.request, found)
        return found

    def valid_input(self, serializer_class, **context) -> dict:
        """The request's input validated by ``serializer_class`` (a 400 or 404 raised)."""
        serializer = serializer_class(
            data=self.request.data, context={**self.get_serializer_context(), **context}
        )
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    @extend_schema(
        request=CampaignCreateSerializer,
        responses={
            202: CampaignQueuedSerializer,
            400: error_response("A field is invalid: ``detail`` names each with its messages."),
            401: error_response("The token is invalid or revoked."),
            403: error_response("Only admins create campaigns."),
        },
    )
    def create(self, request, format=None):
        """Queue the pool job that creates a campaign (admins): the dataset, the runs and
        every option of the New campaign page and ``create_campaign``, checked by the pool
        job's form before anything is queued; 202 with the job and where to follow it."""
        arguments = self.valid_input(CampaignCreateSerializer)
        job = runner.find_job(runner.create(get_kind("pool"), arguments, request.user).pk)
        url = request.build_absolute_uri(reverse("campaign-job", args=[job.pk]))
        return Response(queued_data(job, url), status=202, headers={"Location": url})

    @extend_schema(request=None, responses={200: AssignmentSerializer})
    @judging_action(methods=["post"])
    def next(self, request, pk=None, format=None):
        """Lease the pair to judge now and the one to preload, and return both.

        A POST: taking a lease changes the queue, so a crawler or a link prefetch (GET)
        never does it. Asking again returns the same leases while they last.
        """
        return Response(answer_data(answer.next_task(self.get_object(), request.user)))

    @extend_schema(
        request=SubmitSerializer,
        responses={200: SubmitResponseSerializer, **REFUSALS},
    )
    @judging_action(methods=["post"])
    def submit(self, request, pk=None, format=None):
        """Store a judgement (idempotent by its UUID) and return the next assignment."""
        campaign = self.get_object()
        values = self.valid_input(SubmitSerializer)
        # submit_label checks the pair is in the campaign: one query fewer
        submitted = answer.submit_label(campaign, request.user, **values)
        return Response(answer_data(submitted))

    @extend_schema(
        request=None,
        responses={200: AssignmentSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
    )
    @judging_action(methods=["post"])
    def undo(self, request, pk=None, format=None):
        """Take back your latest answer in this campaign (within two minutes) and show its
        task again: the same for every task, gold or not (see ``submit.undo``)."""
        return Response(answer_data(answer.undo_label(self.get_object(), request.user)))

    @extend_schema(
        request=EscalateSerializer,
        responses={200: AssignmentSerializer, **REFUSALS},
    )
    @judging_action(methods=["post"])
    def escalate(self, request, pk=None, format=None):
        """Send a pair you cannot judge to the admins, with a reason (not a label), or
        report its video broken (``kind`` broken_video, with the browser's error)."""
        campaign = self.get_object()
        values = self.valid_input(EscalateSerializer, campaign=campaign)
        escalated = answer.escalate_pair(campaign, request.user, **values)
        return Response(answer_data(escalated))

    @extend_schema(responses={200: ProgressStateSerializer})
    @judging_action(methods=["get"])
    def progress(self, request, pk=None, format=None):
        """What you judged today, how many labels the campaign still needs, and your state
        in it as your home list shows it (``judging`` there: a pair is free for you now; ``nothing_free``: work is left, but others hold it)."""
        campaign = self.get_object()
        (listed,) = annotator_progress([campaign], request.user)
        data = ProgressSerializer(queue.progress(campaign, request.user)).data
        return Response({**data, "state": answer_data(listed.state)})

    @extend_schema(responses={200: StandingSerializer, 404: ErrorSerializer})
    @judging_action(methods=["get"])
    def standing(self, request, pk=None, format=None):
        """Whether you may judge in this campaign now, and if not the refusal your next
        answer would get (``inactive``: the campaign is paused or closed; ``paused``: you
        are, with the reason). The judging page asks every few seconds while a pair is on
        screen, so that an admin's pause shows without an answer: one statement
        (:func:`statements.judging_standing`, read instead of :meth:`get_object`'s), and it
        writes nothing."""
        found = None
        if int(pk) <= statements.MAX_ID:  # digits by routing; beyond: no row, no overflow
            found = statements.judging_standing(int(pk), request.user.pk)
        if found is None or found.gold_of is not None:
            raise NotFound("No such campaign.")
        refused = submit.refusal(found.status, found.paused_reason)
        return Response(
            {
                "may_judge": refused is None,
                "code": None if refused is None else refused.code,
                "detail": "" if refused is None else refused.message,
            }
        )

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @report_action(url_path="annotator-scores")
    def annotator_scores(self, request, pk=None, format=None):
        """Every annotator's gold accuracy (Wilson 95% interval), sensitivity, specificity,
        agreement, pace and rolling gold accuracy in this campaign (researchers and admins)."""
        campaign = self.get_object()
        stored = live_figures.live_figure(campaign, live_figures.SCORES)
        return Response(
            {
                **stored.value.to_json(),
                "computed_at": stored.computed_at.isoformat(),
                "current": stored.current,
            }
        )

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @report_action(url_path="active-stages")
    def active_stages(self, request, pk=None, format=None):
        """The campaign's active stages as stored (researchers and admins): each stage's
        queries drawn, pairs served and labels before it; drawn queries still being judged;
        the last estimated stage's estimates of every run's scores in [0, 1] (estimate, low,
        high of the 95% interval, its label and sampling variances); and whether every score
        to settle is within the campaign's half-width; ``stopped``: why no stage followed the
        last one (blank while one may). Read only: estimates are stored by
        the ``active-stage`` and ``fit-predictor`` jobs."""
        return Response(active_reading.stored_report(self.get_object()))


class CampaignJobView(GenericAPIView):
    """The pool job a ``POST /api/campaigns/`` queued, for admins and their tokens: where a
    script follows the campaign it asked for (other jobs are a 404 here)."""

    authentication_classes = SCRIPT_AUTHENTICATION
    permission_classes = [CanManageCampaigns]
    lookup_url_kwarg = "job_id"
    serializer_class = CampaignQueuedSerializer

    def get_queryset(self):
        return runner.jobs_of_kind("pool")

    @extend_schema(responses={200: CampaignQueuedSerializer, 404: error_response("No such job.")})
    def get(self, request, job_id: int):
        """``status`` is queued, running, succeeded or failed; ``campaign`` the new campaign's
        id once it succeeded, ``error`` why it failed."""
        job = self.get_object()
        return Response(queued_data(job, request.build_absolute_uri()))
