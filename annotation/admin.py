"""Admin for campaigns (created by pooling chosen runs), pairs, judgements, escalations, and
gold pairs, their answers and qualification attempts (those three for admins only)."""

from django import forms
from django.contrib import admin, messages

from annotation.campaigns import lifecycle
from annotation.campaigns.forms import CampaignSettingsForm
from annotation.campaigns.service import CampaignError, checked_pool
from annotation.gold import tasks as gold_queue
from annotation.judging import escalations
from annotation.models import (
    AnnotatorStanding,
    Campaign,
    Escalation,
    GoldJudgement,
    GoldPair,
    Judgement,
    Pair,
    QualificationAttempt,
)
from annotation.people import service as people
from config import roles
from retrieval.admin import NameRuleAdmin
from retrieval.models import Run

CREATE_FIELDS = (
    "name dataset runs depth queries seed second_label_rate max_labels lease_seconds show_roles "
    "judging_order budget gold_rate qualification qualification_threshold speed_floor extends "
    "guidelines"
).split()


class CampaignCreateForm(CampaignSettingsForm, forms.ModelForm):
    """The campaign form with runs to choose; validation pools the runs, saving writes them."""

    pool = None

    runs = forms.ModelMultipleChoiceField(
        queryset=Run.objects.select_related("dataset").order_by("dataset__name", "name"),
        help_text="Runs whose top-k videos are pooled (all from the chosen dataset).",
    )

    class Meta:
        model = Campaign
        fields = ["name", "dataset", "guidelines"]

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            self.pool = checked_pool(cleaned["dataset"], list(cleaned["runs"]), self.spec())
        except CampaignError as exc:
            raise forms.ValidationError(str(exc)) from None
        return cleaned


class CampaignChangeForm(forms.ModelForm):
    """A campaign's admin form: a new status must be one the life cycle allows."""

    def clean_status(self):
        status = self.cleaned_data["status"]
        if self.instance.pk and status != self.instance.status:
            try:
                lifecycle.check_transition(Campaign.objects.get(pk=self.instance.pk), status)
            except lifecycle.LifecycleError as exc:
                raise forms.ValidationError(str(exc)) from None
        return status


@admin.register(Campaign)
class CampaignAdmin(NameRuleAdmin):
    named = "campaign"
    list_display = ["name", "dataset", "status", "depth", "second_label_rate", "created_at"]
    list_filter = ["status", "dataset"]
    search_fields = ["name"]

    def get_queryset(self, request):
        return gold_queue.visible(super().get_queryset(request))

    def get_form(self, request, obj=None, **kwargs):
        kwargs["form"] = CampaignCreateForm if obj is None else CampaignChangeForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return [*CREATE_FIELDS]
        return ["name", "dataset", "status", "lease_seconds", "guidelines", "options"]

    def get_readonly_fields(self, request, obj=None):
        return ["dataset"] if obj is not None else []

    def save_model(self, request, obj, form, change):
        if change:
            wanted = obj.status
            if "status" in form.changed_data:  # through the life cycle's one writer
                obj.status = form.initial["status"]
            super().save_model(request, obj, form, change)
            if wanted != obj.status:
                lifecycle.change_status(obj, wanted)
            return None
        data = form.cleaned_data
        campaign = lifecycle.open_campaign(
            data["dataset"], list(data["runs"]), form.spec(), user=request.user, pool=form.pool
        )
        if campaign.status == Campaign.Status.PAUSED:
            messages.warning(
                request, "It starts paused: qualification needs gold pairs (then resume it)."
            )
        obj.pk = campaign.pk
        obj.created_at = campaign.created_at
        messages.info(request, f"Pooled {campaign.pairs.count()} pairs into {campaign.name!r}.")

    def save_related(self, request, form, formsets, change):
        if change:
            super().save_related(request, form, formsets, change)


class WithoutCampaignBlob(admin.ModelAdmin):
    """Lists read each row's campaign without its provenance blob (with it the pair list took
    2.8 s and +1.1 GB at FIRE's scale, 0.29 s without)."""

    def get_queryset(self, request):
        return super().get_queryset(request).defer("campaign__provenance")


class Unchangeable(admin.ModelAdmin):
    """Rows the admin site shows but never changes: their own service writes them."""

    def has_change_permission(self, request, obj=None):
        return False


class ShownOnly(Unchangeable):
    """Rows the admin site neither adds nor changes."""

    def has_add_permission(self, request):
        return False


@admin.register(Pair)
class PairAdmin(WithoutCampaignBlob, ShownOnly):
    """Pairs change only through annotation.judging.pair_state: the admin shows them."""

    list_display = "pk campaign caption video status label_count needed double held".split()
    list_filter = ["campaign", "status", "double", "held"]
    list_select_related = ["campaign", "caption", "video"]
    raw_id_fields = ["caption", "video", "adjudicated_by"]


@admin.register(Judgement)
class JudgementAdmin(Unchangeable):
    list_display = ["pk", "pair", "annotator", "label", "seconds", "created_at", "undone_at"]
    list_filter = ["label", "pair__campaign"]
    list_select_related = ["pair", "annotator"]
    raw_id_fields = ["pair"]


class ManagesCampaigns(admin.ModelAdmin):
    """Actions marked ``permissions=["manage_campaigns"]`` need
    :data:`config.roles.MANAGE_CAMPAIGNS`."""

    def has_manage_campaigns_permission(self, request) -> bool:
        return _manages(request)


def _manages(request) -> bool:
    return roles.has_perm(request.user, roles.MANAGE_CAMPAIGNS)


def _resolving(label, description: str):
    """An action resolving the chosen open escalations with ``label`` (None: the pairs go back
    to the queue), through the adjudication page's service."""

    @admin.action(permissions=["manage_campaigns"], description=description)
    def resolve(modeladmin, request, queryset):
        for escalation in queryset.filter(resolved_at__isnull=True):
            escalations.resolve_escalation(escalation, request.user, label=label)
        modeladmin.message_user(request, "Escalations resolved.")

    return resolve


@admin.register(Escalation)
class EscalationAdmin(ShownOnly, ManagesCampaigns):
    """Escalations are resolved by the actions below only (the adjudication page's service)."""

    list_display = ["pk", "pair", "annotator", "kind", "reason", "created_at", "resolved_at"]
    list_filter = ["pair__campaign", "kind", ("resolved_at", admin.EmptyFieldListFilter)]
    raw_id_fields = ["pair"]
    actions = ["return_to_queue", "adjudicate_relevant", "adjudicate_irrelevant"]

    return_to_queue = _resolving(None, "Return the pairs to the judging queue")
    adjudicate_relevant = _resolving(Judgement.Label.RELEVANT, "Adjudicate the pairs as relevant")
    adjudicate_irrelevant = _resolving(
        Judgement.Label.IRRELEVANT, "Adjudicate the pairs as not relevant"
    )


class AdminsOnly(ManagesCampaigns):
    """Gold labels, their answers and who may judge are for admins (manage_campaigns) only,
    whatever model permissions a user holds."""

    def has_view_permission(self, request, obj=None):
        return _manages(request) and super().has_view_permission(request, obj)

    def has_add_permission(self, request):
        return _manages(request) and super().has_add_permission(request)

    def has_change_permission(self, request, obj=None):
        return _manages(request) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return _manages(request) and super().has_delete_permission(request, obj)


@admin.register(GoldPair)
class GoldPairAdmin(WithoutCampaignBlob, AdminsOnly):
    list_display = ["pk", "campaign", "caption", "video", "label", "source", "created_at"]
    list_filter = ["campaign", "label", "source"]
    list_select_related = ["campaign", "caption", "video"]
    raw_id_fields = ["caption", "video", "pair", "created_by"]
    search_fields = ["explanation", "guideline"]


@admin.register(GoldJudgement)
class GoldJudgementAdmin(Unchangeable, AdminsOnly):
    list_display = ["pk", "gold_pair", "annotator", "label", "purpose", "seconds", "created_at"]
    list_filter = ["purpose", "label", "gold_pair__campaign"]
    list_select_related = ["gold_pair", "annotator"]
    raw_id_fields = ["gold_pair", "attempt"]


@admin.register(QualificationAttempt)
class QualificationAttemptAdmin(WithoutCampaignBlob, AdminsOnly):
    list_display = (
        "pk campaign annotator started_at finished_at correct total passed admitted_by".split()
    )
    list_filter = ["campaign", "passed"]
    list_select_related = ["campaign", "annotator", "admitted_by"]
    raw_id_fields = ["admitted_by"]
    actions = ["admit"]

    @admin.action(
        permissions=["manage_campaigns"],
        description="Admit these annotators to their campaigns by hand",
    )
    def admit(self, request, queryset):
        admitted = {(a.campaign_id, a.annotator_id): a for a in queryset}
        done = _each(request, admitted.values(), people.admit)
        messages.info(request, f"Admitted {done} annotator(s).")


def _each(request, rows, act) -> int:
    """``act(campaign, annotator, by)`` for each row's campaign and annotator, by the request's
    user; a refusal is shown and the rest go on. How many were done."""
    done = 0
    for row in rows:
        try:
            act(row.campaign, row.annotator, request.user)
        except people.PeopleError as exc:
            messages.warning(request, str(exc))
        else:
            done += 1
    return done


@admin.register(AnnotatorStanding)
class AnnotatorStandingAdmin(WithoutCampaignBlob, AdminsOnly):
    """Paused and discounted annotators, for admins to reinstate or discount."""

    list_display = (
        "campaign annotator paused_at paused_by reason reinstated_at reinstated_by "
        "discounted_labels"
    ).split()
    list_filter = ["campaign"]
    list_select_related = ["campaign", "annotator", "paused_by", "reinstated_by"]
    readonly_fields = ["discounted_at", "discounted_labels"]
    actions = ["reinstate", "discount"]

    @admin.action(permissions=["manage_campaigns"], description="Reinstate these annotators")
    def reinstate(self, request, queryset):
        rows = queryset.select_related("campaign", "annotator")
        done = _each(request, rows, people.reinstate)
        messages.info(request, f"Reinstated {done} annotator(s): {people.REINSTATED}.")

    @admin.action(
        permissions=["manage_campaigns"],
        description="Discount all their labels (the pairs go back to the queue)",
    )
    def discount(self, request, queryset):
        total = sum(
            people.discount(row.campaign, row.annotator, by=request.user)
            for row in queryset.select_related("campaign", "annotator")
        )
        messages.info(request, f"Discounted {total} labels; their pairs are back in the queue.")
