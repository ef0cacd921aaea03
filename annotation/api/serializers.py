"""Serializers of the judging API: they validate input and shape output, nothing more."""

import functools

from django import forms
from django.db.models import Q
from django.forms.forms import NON_FIELD_ERRORS
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.settings import api_settings

from annotation.campaigns.jobs import PoolForm
from annotation.judging import task_ids
from annotation.judging.answer import JudgingAnswer, SubmitAnswer
from annotation.models import Campaign, Escalation, Judgement, Pair
from annotation.people import state as annotator_state
from annotation.people.state import State
from config.serializer_output import CompiledOutput
from config.text_validators import TextValidator
from jobs.models import Job
from jobs.runner import cleaned


@extend_schema_field(
    serializers.ListField(child=serializers.ListField(child=serializers.CharField()))
)
class RoleSpansField(serializers.JSONField):
    """A caption's role spans as the answer holds them (``[start, end, role]`` lists)."""


class TaskSerializer(serializers.Serializer):
    """A leased pair as the judging page shows it."""

    pair = serializers.CharField(
        source="token",
        help_text="The task's opaque id (32 hex digits): what submit/ and escalate/ name it "
        "by. It is not the pair's id and says nothing about the task: it stays the same for "
        "you across next/, retries and undo, and differs between annotators.",
    )
    caption = serializers.CharField(source="pair.caption.text")
    caption_key = serializers.CharField(source="pair.caption.key")
    video_url = serializers.CharField(source="pair.video.source_url")
    video_fragment = serializers.CharField(
        source="pair.video.media_fragment",
        help_text="For a segment of a longer recording, the media fragment (#t=start,end, in "
        "seconds of video_url) that plays exactly the captioned span, which the page loops; "
        "empty for a whole video.",
    )
    poster_url = serializers.CharField(
        source="pair.video.poster_url",
        help_text="A still of the video shown while it loads; empty where none was made.",
    )
    segment = serializers.CharField(
        help_text="Where a segment sits in its recording, e.g. '0:21-0:26 of P01_01, "
        "1:00:00'; empty for a whole video."
    )
    expires_at = serializers.DateTimeField()
    roles = RoleSpansField(
        help_text="[start, end, role] character spans of the caption's semantic roles "
        "(V, ARG0, ARG1, ARG2, ARGM-LOC, ARGM-DIR, ARGM-MNR, ARGM-TMP, ENT), in text order; "
        "empty when the campaign does not show roles."
    )


class ProgressSerializer(serializers.Serializer):
    judged_today = serializers.IntegerField()
    judged_total = serializers.IntegerField()
    labels_left = serializers.IntegerField(
        help_text="The campaign's labels still needed (the campaign page's figure); under "
        "FIRE's policy in a fixed order, less your answers on gold."
    )
    pairs = serializers.IntegerField()
    labels_given = serializers.IntegerField(
        help_text="The campaign's live labels, your answers on gold counted in."
    )


class CampaignBriefSerializer(serializers.ModelSerializer):
    class Meta:
        model = Campaign
        fields = ["id", "name", "status"]


class QualificationSerializer(serializers.Serializer):
    """Where the annotator stands with the campaign's qualification (``required`` false:
    none is asked; once ``admitted`` nothing of it shows)."""

    required = serializers.BooleanField()
    admitted = serializers.BooleanField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    tries_used = serializers.IntegerField()
    tries = serializers.IntegerField()
    last_score = serializers.FloatField(allow_null=True)
    retry_at = serializers.DateTimeField(
        source="next_try_at",
        allow_null=True,
        help_text="When you may try again (null: now, or never).",
    )


class FeedbackSerializer(serializers.Serializer):
    """After a qualification training answer: whether it was right, and why."""

    correct = serializers.BooleanField()
    label = serializers.CharField()
    explanation = serializers.CharField()
    guideline = serializers.CharField(allow_blank=True)


class StateSerializer(serializers.Serializer):
    """Where the annotator stands in the campaign (:mod:`annotation.people.state`): the
    same key, heading, message and next step as the judging page and the home list."""

    key = serializers.ChoiceField(
        choices=list(annotator_state.PRECEDENCE),
        help_text="The state; when several hold, the first in this list wins.",
    )
    heading = serializers.CharField()
    message = serializers.CharField()
    next_step = serializers.CharField()
    tone = serializers.ChoiceField(choices=["ok", "info", "warn", "stop", "done"])
    can_judge = serializers.BooleanField()
    action = serializers.CharField(allow_blank=True)
    rule = serializers.CharField(allow_null=True, help_text="The rule that paused you, if any.")
    since = serializers.DateTimeField(allow_null=True)
    retry_at = serializers.DateTimeField(allow_null=True)
    polls = serializers.BooleanField(help_text="Ask again shortly: something may free up.")


class ProgressStateSerializer(ProgressSerializer):
    state = StateSerializer()


class StandingSerializer(serializers.Serializer):
    """Whether the annotator may judge in the campaign now; if not, the refusal an answer
    would get (``code`` inactive or paused, and its ``detail``)."""

    may_judge = serializers.BooleanField()
    code = serializers.CharField(allow_null=True)
    detail = serializers.CharField(allow_blank=True)


class AssignmentSerializer(serializers.Serializer):
    """What to show now, what to preload next, and the annotator's progress: the
    :class:`annotation.judging.answer.JudgingAnswer` of next/, undo/ and escalate/."""

    campaign = CampaignBriefSerializer()
    current = TaskSerializer(allow_null=True)
    upcoming = TaskSerializer(allow_null=True)
    progress = ProgressSerializer()
    finished = serializers.BooleanField()
    qualification = QualificationSerializer(required=False)
    paused = serializers.CharField(
        allow_null=True,
        required=False,
        help_text="Why the annotator is paused in this campaign (null: not paused).",
    )
    state = StateSerializer()


class SubmitResponseSerializer(AssignmentSerializer):
    """submit/'s :class:`annotation.judging.answer.SubmitAnswer`."""

    judgement = serializers.UUIDField()
    created = serializers.BooleanField()
    feedback = FeedbackSerializer(allow_null=True, required=False)
    warning = serializers.CharField(
        allow_null=True,
        required=False,
        help_text="Set when the answer came too fast and more like it would pause you.",
    )


NO_TASK = "no such task of yours in this campaign"


class TaskInputSerializer(serializers.Serializer):
    """Input naming a task by its opaque id: once the fields are valid, ``pair`` becomes the
    pair id the task names for the request's user (a 404 when it names none of theirs).
    With a ``campaign`` in the context, the pair must be one of its own or its gold
    companion's (a 404 otherwise)."""

    pair = serializers.RegexField(  # malformed: a 400; naming no task of yours: a 404
        r"^[0-9a-f]{32}$",
        max_length=32,
        help_text="The task's opaque id, as next/ served it in ``pair``.",
        error_messages={"invalid": "not a task id (32 hex digits, as next/ serves it)"},
    )

    def validate(self, attrs: dict) -> dict:
        pair_id = task_ids.decode(self.context["request"].user.pk, attrs["pair"])
        if pair_id is None:
            raise NotFound(NO_TASK)
        campaign = self.context.get("campaign")
        if campaign is not None:
            in_campaign = Q(campaign=campaign) | Q(gold_task__campaign=campaign)
            if not Pair.objects.filter(in_campaign, pk=pair_id).exists():
                raise NotFound(NO_TASK)
        return {**attrs, "pair": pair_id}


class SubmitSerializer(TaskInputSerializer):
    label = serializers.ChoiceField(choices=Judgement.Label.values)
    uuid = serializers.UUIDField(
        help_text="Client-generated; a retry with the same id and the same body counts once "
        "and returns the stored judgement; the same id with another body is a 409 conflict."
    )
    seconds = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=86400)
    seconds_played = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=86400,
        help_text="Seconds of the video that played before the answer. The judging page "
        "always sends it (and takes no label before the video showed a frame); a script may "
        "leave it out, and the judgement stores it as unknown.",
    )


class EscalateSerializer(TaskInputSerializer):
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        validators=[TextValidator("reason", 2000, lines=True)],
        help_text="Why the pair cannot be judged; required unless ``kind`` is broken_video.",
    )
    kind = serializers.ChoiceField(
        choices=Escalation.Kind.values,
        default=Escalation.Kind.OTHER,
        help_text="broken_video: the video would not play (the judging page's report).",
    )
    media_error = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        validators=[TextValidator("media_error", 2000, lines=True)],
        help_text="For a broken video: what the browser said (media error code and message).",
    )
    uuid = serializers.UUIDField(
        help_text="Client-generated; a retry with the same id and body counts once; the same "
        "id with another body is a 409 conflict."
    )


class CampaignSerializer(serializers.ModelSerializer):
    dataset = serializers.CharField(source="dataset.name")
    runs = serializers.ListField(child=serializers.CharField(), source="run_names")
    pairs = serializers.IntegerField(source="pair_count", read_only=True)
    policy = serializers.CharField(source="settings.label_policy.name", read_only=True)
    confidence = serializers.FloatField(source="settings.label_policy.confidence", read_only=True)
    settle = serializers.ListField(
        child=serializers.CharField(),
        source="settings.settle",
        read_only=True,
        help_text="The scores judging must settle (C@1, C@5, C@10, AP, nDCG@10).",
    )
    half_width = serializers.FloatField(
        source="settings.half_width",
        read_only=True,
        help_text="Target half-width of their 95% intervals, in points.",
    )

    class Meta:
        model = Campaign
        fields = [
            "id",
            "name",
            "dataset",
            "runs",
            "depth",
            "query_sample",
            "second_label_rate",
            "max_labels",
            "policy",
            "confidence",
            "settle",
            "half_width",
            "status",
            "pairs",
            "created_at",
        ]


@functools.cache
def _outputs() -> dict:
    return {
        JudgingAnswer: CompiledOutput(AssignmentSerializer),
        SubmitAnswer: CompiledOutput(SubmitResponseSerializer),
        State: CompiledOutput(StateSerializer),
    }


def answer_data(found: JudgingAnswer | State) -> dict:
    """The serializer's output for a judging answer (:class:`AssignmentSerializer`, or
    :class:`SubmitResponseSerializer` after a submit) or an annotator's state
    (:class:`StateSerializer`), compiled for speed."""
    return _outputs()[type(found)](found)


# --- a new campaign ----------------------------------------------------------------------------

NOT_POSTED = ("gold", "gold_name")
"""Pool form fields the API does not take: an uploaded gold file is the New campaign page's."""


def _typed(field: forms.Field) -> serializers.Field:
    """The JSON type of one pool form field, with its help and, for a number, a flag or a
    choice, its initial value as the default (what the New campaign page shows); the bounds
    stay the form's to check."""
    common: dict = {"required": field.required, "help_text": str(field.help_text or "") or None}
    if field.initial is not None and not isinstance(field, forms.CharField):
        common = {"required": False, "default": field.initial, "help_text": common["help_text"]}
    if isinstance(field, forms.MultipleChoiceField):
        names = ", ".join(str(value) for value, _ in field.choices)
        help_text = f"{common.pop('help_text') or ''} A list of: {names} (any case).".strip()
        return serializers.ListField(child=serializers.CharField(), help_text=help_text, **common)
    if isinstance(field, forms.ChoiceField):
        return serializers.ChoiceField(choices=[value for value, _ in field.choices], **common)
    if isinstance(field, forms.BooleanField):
        return serializers.BooleanField(**common)
    if isinstance(field, forms.FloatField):  # before IntegerField, Django's FloatField's base
        return serializers.FloatField(**common)
    if isinstance(field, forms.IntegerField):
        return serializers.IntegerField(**common)
    return serializers.CharField(allow_blank=not field.required, trim_whitespace=False, **common)


class CampaignCreateSerializer(serializers.Serializer):
    """A new campaign as the pool job's form takes it, with JSON types: the dataset, the runs
    and every campaign option (``settle`` a list of metric names, ``half_width`` a number of
    points). Its fields are the form's; :meth:`validate` runs that form, so the rules (bounds,
    names, the runs and label set of the dataset) are the page's, the job's and the
    command's, and ``validated_data`` is the job's arguments."""

    def get_fields(self) -> dict[str, serializers.Field]:
        """A field for each field of the pool job's form but the page's gold upload; ``runs``
        a list of names (the form takes them comma-separated)."""
        fields = {
            name: _typed(field)
            for name, field in PoolForm.base_fields.items()
            if name not in NOT_POSTED
        }
        fields["runs"] = serializers.ListField(
            child=serializers.CharField(), min_length=1, help_text="The runs to pool, by name."
        )
        return fields

    def validate(self, attrs: dict) -> dict:
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:  # a misspelt option would otherwise be its default without a word
            raise serializers.ValidationError(
                {name: ["not an option of a new campaign"] for name in unknown[:20]}
            )
        data = {**attrs, "runs": ",".join(attrs["runs"])}
        form = PoolForm(data=data)
        if not form.is_valid():
            raise serializers.ValidationError(
                {
                    api_settings.NON_FIELD_ERRORS_KEY if name == NON_FIELD_ERRORS else name: [
                        str(message) for message in messages
                    ]
                    for name, messages in form.errors.items()
                }
            )
        return cleaned(form)


class CampaignQueuedSerializer(serializers.Serializer):
    """The pool job that creates the campaign: where to follow it, and the campaign once made."""

    job = serializers.IntegerField(help_text="The pool job's id.")
    status = serializers.ChoiceField(choices=Job.Status.values, help_text="The job's status now.")
    url = serializers.URLField(help_text="The job's status as JSON (status, progress, error).")
    campaign = serializers.IntegerField(
        allow_null=True, help_text="The campaign's id once the job made it (null until then)."
    )
    percent = serializers.FloatField(
        allow_null=True, help_text="How far the job is, 0-100 (null while it cannot say)."
    )
    message = serializers.CharField(help_text="What the job is doing or did, in words.")
    error = serializers.CharField(help_text="Why the job failed (empty unless it did).")


def queued_data(job: Job, url: str) -> dict:
    """A pool job's answer: its state and, once the job made it, the campaign's id."""
    made = job.status == Job.Status.SUCCEEDED and isinstance(job.result, dict)
    campaign = job.result.get("campaign_id") if made else None
    return CampaignQueuedSerializer(
        {
            "job": job.pk,
            "status": job.status,
            "url": url,
            "campaign": campaign,
            "percent": job.percent,
            "message": job.message or "",
            "error": job.error or "",
        }
    ).data
