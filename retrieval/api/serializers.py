"""Serializers of the scoring API: they validate an upload and shape a job's scores."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from retrieval.datasets.names import NAME_MAX_LENGTH
from retrieval.forms import NameValidator
from retrieval.models import LabelSet
from retrieval.scoring.run_scoring import STATUS_NAMES
from retrieval.scoring.score_intervals import ACTIVE, LABEL_NOISE, PREDICTION, SAMPLED, UNJUDGED


@extend_schema_field(OpenApiTypes.BINARY)
class UploadField(serializers.FileField):
    """A file part of a multipart body (the schema says binary, not a URL)."""


class RunUploadSerializer(serializers.Serializer):
    """A TREC run file to register as a model and score."""

    run = UploadField(
        allow_empty_file=True,  # the run parser says what is wrong with an empty file
        help_text="A TREC run file: qid Q0 docno rank score run_id (qid = caption key, "
        "docno = video key).",
    )
    name = serializers.CharField(
        max_length=NAME_MAX_LENGTH,
        validators=[NameValidator("model")],
        help_text="The model's name; unique on the dataset.",
    )
    labels = serializers.CharField(
        max_length=LabelSet._meta.get_field("name").max_length,
        required=False,
        allow_blank=True,
        help_text="A label set of the dataset; by default the dataset's default label set.",
    )


class ScoreLinkSerializer(serializers.Serializer):
    """Where to poll for an upload's scores."""

    url = serializers.URLField()
    job = serializers.IntegerField()


class MetricsField(serializers.DictField):
    """``{"C@1", "C@5", "C@10", "AP", "nDCG@10", "Judged@10"}`` as fractions in [0, 1]."""

    child = serializers.FloatField(allow_null=True, min_value=0.0, max_value=1.0)


class IntervalSerializer(serializers.Serializer):
    """A corrected score's 95% interval from the labels, fractions in [0, 1]."""

    value = serializers.FloatField(allow_null=True, min_value=0.0, max_value=1.0)
    low = serializers.FloatField(allow_null=True, min_value=0.0, max_value=1.0)
    high = serializers.FloatField(allow_null=True, min_value=0.0, max_value=1.0)
    parts = serializers.ListField(
        child=serializers.ChoiceField(choices=(LABEL_NOISE, UNJUDGED, SAMPLED, ACTIVE)),
        help_text="What the interval holds; empty: the score is exact (low = value = high).",
    )
    dominant = serializers.ChoiceField(
        choices=(LABEL_NOISE, PREDICTION),
        allow_null=True,
        required=False,
        help_text="Of an active estimate: which part holds more of its variance; else null.",
    )


class JobScoresSerializer(serializers.Serializer):
    """A scoring job's status and, once done, the run's corrected and original scores."""

    status = serializers.ChoiceField(choices=STATUS_NAMES)
    error = serializers.CharField(allow_null=True)
    label_set = serializers.CharField(allow_null=True, help_text="The label set scored with.")
    queries = serializers.IntegerField(
        allow_null=True, help_text="Query captions scored: those the run answers."
    )
    scores = MetricsField(allow_null=True, help_text="Under the corrected positives.")
    original = MetricsField(allow_null=True, help_text="With each caption's own video only.")
    pooled = serializers.BooleanField(help_text="Whether the label set's campaign pooled the run.")
    intervals = serializers.DictField(
        child=IntervalSerializer(),
        allow_null=True,
        help_text="Per corrected C@1, C@5, C@10, AP and nDCG@10: its 95% interval from the "
        "labels (label noise, unjudged pooled pairs, a sampled estimate).",
    )
