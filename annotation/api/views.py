"""The judging API: campaigns, next task, submit, undo, escalate and progress."""

from django.db.models import Count, Q
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from annotation.api.permissions import CanViewCampaignReports, IsAnnotator
from annotation.api.serializers import (
    AssignmentSerializer,
    CampaignSerializer,
    ErrorSerializer,
    EscalateSerializer,
    ProgressSerializer,
    SubmitResponseSerializer,
    SubmitSerializer,
    assignment_data,
)
from annotation.models import Campaign, Pair
from annotation.services import assignment, gold_queue, sql, task_ids
from annotation.services.scores import campaign_scores
from config import roles


def valid_input(serializer_class, request) -> dict | Response:
    """The request's validated input, or the 400 response to send."""
    data = serializer_class(data=request.data)
    if not data.is_valid():
        return Response({"code": "invalid", "detail": data.errors}, status=400)
    return data.validated_data


NO_TASK = {"code": "not_found", "detail": "no such task of yours in this campaign"}


def task_input(serializer_class, request) -> dict | Response:
    """Validated input whose ``pair`` (a task's opaque id) is replaced by the pair it names
    for this annotator, or the 400/404 response to send."""
    data = valid_input(serializer_class, request)
    if isinstance(data, Response):
        return data
    pair_id = task_ids.decode(request.user.pk, data["pair"])
    if pair_id is None:
        return Response(NO_TASK, status=404)
    return {**data, "pair": pair_id}


def pair_input(serializer_class, request, campaign: Campaign) -> dict | Response:
    """:func:`task_input` naming a pair of ``campaign``, or the 400/404 response to send."""
    data = task_input(serializer_class, request)
    if isinstance(data, Response):
        return data
    in_campaign = Q(campaign=campaign) | Q(gold_task__campaign=campaign)
    if not Pair.objects.filter(in_campaign, pk=data["pair"]).exists():
        return Response(NO_TASK, status=404)
    return data


def assignment_payload(campaign: Campaign, user, got: assignment.Assignment) -> dict:
    return {
        "campaign": campaign,
        "current": got.current,
        "upcoming": got.upcoming,
        "progress": assignment.progress(campaign, user),
        # Finished only when nothing can come to this annotator any more; with no current
        # pair but work left (others hold the leases) the page waits and polls.
        "finished": got.current is None and not assignment.has_work_for(campaign, user),
        "qualification": got.qualification or gold_queue.qualification(campaign, user),
        "paused": got.paused,
    }


class CampaignViewSet(viewsets.ReadOnlyModelViewSet):
    """Campaigns: annotators see active ones and judge through the actions below."""

    serializer_class = CampaignSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        queryset = (
            gold_queue.visible(Campaign.objects.select_related("dataset"))
            .annotate(pair_count=Count("pairs"))
            .order_by("-created_at")
        )
        user = self.request.user
        if user.has_perm(roles.VIEW_CAMPAIGN_REPORTS):
            return queryset
        if user.has_perm(roles.JUDGE_PAIRS):
            return queryset.filter(Q(status=Campaign.Status.ACTIVE))
        return queryset.none()

    def judging_campaign(self, pk) -> Campaign:
        """The campaign the URL names (read by hand-written SQL: the judging actions run on
        every judgement); 404 for a pk that is not even a number, or no campaign's."""
        found = sql.campaign(pk)
        if found is None:
            raise Http404("No such campaign.")
        return found

    @extend_schema(request=None, responses={200: AssignmentSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAnnotator])
    def next(self, request, pk=None, format=None):
        """Lease the pair to judge now and the one to preload, and return both.

        A POST: taking a lease changes the queue, so a crawler or a link prefetch (GET)
        never does it. Asking again returns the same leases while they last.
        """
        campaign = self.judging_campaign(pk)
        got = assignment.assign(campaign, request.user)
        return Response(
            assignment_data(assignment_payload(campaign, request.user, got), campaign.shows_roles)
        )

    @extend_schema(
        request=SubmitSerializer,
        responses={
            200: SubmitResponseSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
        },
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAnnotator])
    def submit(self, request, pk=None, format=None):
        """Store a judgement (idempotent by its UUID) and return the next assignment."""
        campaign = self.judging_campaign(pk)
        values = task_input(SubmitSerializer, request)
        if isinstance(values, Response):
            return values
        result = assignment.submit(  # checks the pair is in the campaign: one query fewer
            request.user,
            values["pair"],
            values["label"],
            values["uuid"],
            values.get("seconds"),
            campaign=campaign,
        )
        payload = assignment_payload(campaign, request.user, result.assignment)
        payload.update(
            judgement=result.judgement.uuid, created=result.created, feedback=result.feedback
        )
        return Response(assignment_data(payload, campaign.shows_roles))

    @extend_schema(
        request=None,
        responses={200: AssignmentSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAnnotator])
    def undo(self, request, pk=None, format=None):
        """Take back your latest answer in this campaign (within two minutes) and show its
        task again: the same for every task, gold or not (see ``assignment.undo``)."""
        campaign = self.judging_campaign(pk)
        got = assignment.undo(request.user, campaign)
        return Response(
            assignment_data(assignment_payload(campaign, request.user, got), campaign.shows_roles)
        )

    @extend_schema(
        request=EscalateSerializer,
        responses={
            200: AssignmentSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: ErrorSerializer,
        },
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAnnotator])
    def escalate(self, request, pk=None, format=None):
        """Send a pair you cannot judge to the admins, with a reason (not a label)."""
        campaign = self.judging_campaign(pk)
        values = pair_input(EscalateSerializer, request, campaign)
        if isinstance(values, Response):
            return values
        got = assignment.escalate(request.user, values["pair"], values["reason"], values["uuid"])
        return Response(
            assignment_data(assignment_payload(campaign, request.user, got), campaign.shows_roles)
        )

    @extend_schema(responses={200: ProgressSerializer})
    @action(detail=True, methods=["get"], permission_classes=[IsAnnotator])
    def progress(self, request, pk=None, format=None):
        """What you judged today and how many labels the campaign still needs."""
        campaign = self.judging_campaign(pk)
        return Response(ProgressSerializer(assignment.progress(campaign, request.user)).data)

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(
        detail=True,
        methods=["get"],
        url_path="annotator-scores",
        permission_classes=[CanViewCampaignReports],
    )
    def annotator_scores(self, request, pk=None, format=None):
        """Every annotator's gold accuracy (Wilson 95% interval), sensitivity, specificity,
        agreement, pace and rolling gold accuracy in this campaign (researchers and admins)."""
        campaign = self.judging_campaign(pk)
        return Response(campaign_scores(campaign).to_json())
