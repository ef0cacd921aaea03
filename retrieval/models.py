"""ORM for benchmarks: videos and the captions that query them. A caption's *origin* video
is the single implicit positive benchmarks count (FIRE §2.1); queries are marked per caption."""

from django.conf import settings
from django.db import models


class Dataset(models.Model):
    """A text-to-video benchmark: a collection of videos and their captions."""

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    source_format = models.CharField(
        max_length=32, blank=True, help_text="Format the dataset was imported from."
    )
    has_ground_truth = models.BooleanField(
        default=False,
        help_text="True for synthetic worlds whose exhaustive relevance is known.",
    )
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DerivedMedia(models.Model):
    """A browser copy or segment clip made from a video, once per ``key`` (a hash of the source's
    fingerprint, the copy settings and the span); workers claim pending rows by a conditional
    update (see :mod:`retrieval.media.service`)."""

    class Kind(models.TextChoices):
        COPY = "copy", "browser copy"
        CLIP = "clip", "segment clip"

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        READY = "ready"
        FAILED = "failed"

    key = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    source = models.CharField(max_length=500, help_text="The original's name under the media root.")
    fingerprint = models.CharField(max_length=32, help_text="The source's at import.")
    start = models.FloatField(null=True, blank=True, help_text="Clip start in the source (s).")
    end = models.FloatField(null=True, blank=True, help_text="Clip end in the source (s).")
    copy_settings = models.JSONField(default=dict, blank=True)
    name = models.CharField(max_length=500, help_text="The file under the media root.")
    status = models.CharField(
        max_length=8, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    error = models.TextField(blank=True)
    source_seconds = models.FloatField(default=0.0, help_text="Seconds of source video it holds.")
    bytes = models.BigIntegerField(null=True, blank=True)
    encode_seconds = models.FloatField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"{self.kind} {self.name} ({self.status})"


class Video(models.Model):
    """A video, or a clip of a longer one by ``start``/``end`` seconds; ``media_state`` says
    whether a browser gets the original as it is or a derived file (served once ``ready``)."""

    class MediaState(models.TextChoices):
        AS_IS = "as_is", "plays as it is"
        PENDING = "pending", "browser file not made yet"
        READY = "ready", "browser file ready"
        FAILED = "failed", "browser file failed"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="videos")
    key = models.CharField(max_length=255)
    media = models.FileField(
        upload_to="videos/",
        max_length=500,
        blank=True,
        help_text="File under the media root.",
    )
    url = models.CharField(max_length=1000, blank=True, help_text="External video URL.")
    duration = models.FloatField(null=True, blank=True, help_text="Seconds.")
    start = models.FloatField(null=True, blank=True, help_text="Clip start in seconds.")
    end = models.FloatField(null=True, blank=True, help_text="Clip end in seconds.")
    features = models.FileField(
        upload_to="features/",
        max_length=500,
        blank=True,
        help_text="Per-video feature file (.npy) under the media root.",
    )
    split = models.CharField(max_length=32, blank=True, db_index=True)
    metadata = models.JSONField(default=dict, blank=True)
    probe = models.JSONField(null=True, blank=True, help_text="The file's facts at import.")
    media_state = models.CharField(
        max_length=8, choices=MediaState.choices, default=MediaState.AS_IS, db_index=True
    )
    derived = models.ForeignKey(
        DerivedMedia,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="videos",
        help_text="The browser copy or segment clip a browser gets instead of the original.",
    )
    browser_media = models.CharField(
        max_length=500, blank=True, help_text="The derived file's name once it is ready."
    )
    browser_start = models.FloatField(
        null=True, blank=True, help_text="Where a segment clip starts in the original (s)."
    )

    class Meta:
        ordering = ["dataset", "key"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "key"], name="video_key_unique_per_dataset")
        ]

    def __str__(self) -> str:
        return self.key

    @property
    def source_url(self) -> str:
        """Where a browser fetches the video ("" while its browser copy is not ready)."""
        if self.media_state == self.MediaState.READY and self.browser_media:
            return settings.MEDIA_URL + self.browser_media
        if self.media_state != self.MediaState.AS_IS:
            return ""
        return self.media.url if self.media else self.url

    @property
    def poster_url(self) -> str:
        """The video's still (poster and thumbnail), "" while none is made."""
        if self.media_state == self.MediaState.READY and self.browser_media:
            return settings.MEDIA_URL + poster_name(self.browser_media)
        if self.media_state == self.MediaState.AS_IS and self.probe and self.probe.get("poster"):
            return settings.MEDIA_URL + self.probe["poster"]
        return ""

    @property
    def browser_ready(self) -> bool:
        """False while the browser copy or segment clip this video needs is not made."""
        return self.media_state in (self.MediaState.AS_IS, self.MediaState.READY)

    @property
    def media_fragment(self) -> str:
        """The ``#t=a,b`` fragment that plays this segment of what :attr:`source_url` serves
        ("" for a whole video)."""
        if self.start is None and self.end is None:
            return ""
        offset = 0.0
        if self.media_state == self.MediaState.READY and self.browser_start is not None:
            offset = self.browser_start
        elif self.media_state != self.MediaState.AS_IS:
            return ""
        start = max(0.0, (self.start or 0.0) - offset)
        if self.end is None:
            return f"#t={start:.3f}"
        return f"#t={start:.3f},{max(start, self.end - offset):.3f}"


AS_IS_POSTER_DIR = "derived/posters"
"""Where the posters of files that play as they are lie, keyed by the file's fingerprint."""


def poster_name(derived: str) -> str:
    """The poster JPEG made beside a derived file (``derived/ab/<key>.mp4`` -> ``.jpg``)."""
    return derived.rsplit(".", 1)[0] + ".jpg"


BROWSER_READY_STATES = (Video.MediaState.AS_IS.value, Video.MediaState.READY.value)
"""The media states of videos a browser can be given now (the judging queue serves only these)."""


class Caption(models.Model):
    """A caption written for ``video``; a query when ``is_query`` is set."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="captions")
    key = models.CharField(max_length=255)
    text = models.TextField()
    video = models.ForeignKey(
        Video,
        on_delete=models.CASCADE,
        related_name="captions",
        help_text="The origin video the caption was written for.",
    )
    split = models.CharField(max_length=32, blank=True)
    is_query = models.BooleanField(default=False, help_text="Used as a search query in evaluation.")
    metadata = models.JSONField(default=dict, blank=True)
    role_spans = models.JSONField(
        null=True,
        blank=True,
        help_text="[start, end, role] character spans of the caption's semantic roles "
        "(retrieval.datasets.roles), computed once when a campaign pools the caption.",
    )

    class Meta:
        ordering = ["dataset", "key"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "key"], name="caption_key_unique_per_dataset"
            )
        ]
        indexes = [models.Index(fields=["dataset", "split", "is_query"])]

    def __str__(self) -> str:
        return f"{self.key}: {self.text[:60]}"


class RetrievalModel(models.Model):
    """A text-to-video model of a dataset: uploaded embeddings, a TREC run file or a built-in
    encoder; its artifacts lie under ``FIREPOOL_ARTIFACTS_DIR``, never served over HTTP."""

    class Source(models.TextChoices):
        EMBEDDINGS = "embeddings", "uploaded embeddings"
        RUN = "run", "TREC run file"
        ENCODER = "encoder", "built-in encoder"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="models")
    name = models.CharField(max_length=100)
    source = models.CharField(max_length=16, choices=Source.choices)
    encoder = models.CharField(max_length=32, blank=True, help_text="Built-in encoder name.")
    config = models.JSONField(default=dict, blank=True)
    weights = models.CharField(max_length=500, blank=True, help_text="Artifact path.")
    embeddings = models.CharField(
        max_length=500, blank=True, help_text="Artifact path of the .npz embeddings."
    )
    index = models.CharField(max_length=500, blank=True, help_text="Artifact path.")
    training_log = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["dataset", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "name"], name="model_name_unique_per_dataset"
            )
        ]

    def __str__(self) -> str:
        return f"{self.dataset.name}/{self.name}"


class Run(models.Model):
    """A model's top-k videos per query caption as dense arrays (Q, Q x k ids with -1 padding,
    Q x k scores), so a whole run loads in one row (see :mod:`retrieval.search.runs`)."""

    model = models.ForeignKey(RetrievalModel, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=100, help_text="Run id, unique per dataset.")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="runs")
    depth = models.PositiveIntegerField()
    query_count = models.PositiveIntegerField()
    arrays = models.BinaryField(help_text="npz of caption_ids, video_ids and scores.")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "name"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="run_name_unique_per_dataset")
        ]

    def __str__(self) -> str:
        return self.name


class LabelSet(models.Model):
    """Judged caption-video pairs of one dataset (from a campaign or an imported file), in
    ``arrays`` (:class:`retrieval.label_sets.judged.Judged`) so they load in one row. Sets are
    never edited in place: more labels make a new *version* with ``parent``, so scores stay
    reproducible."""

    class Source(models.TextChoices):
        CAMPAIGN = "campaign", "resolved campaign"
        QRELS = "qrels", "TREC qrels"
        FIRE_JSON = "fire-json", "FIRE JSON"
        JSONL = "jsonl", "JSON lines"
        CSV = "csv", "CSV"
        RAW = "raw", "individual labels"
        MERGE = "merge", "merged label sets"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="label_sets")
    name = models.CharField(max_length=100, help_text="Unique per dataset.")
    source = models.CharField(max_length=16, choices=Source.choices)
    description = models.TextField(blank=True)
    pair_count = models.PositiveIntegerField(default=0)
    relevant_count = models.PositiveIntegerField(default=0)
    irrelevant_count = models.PositiveIntegerField(default=0)
    disagreement_count = models.PositiveIntegerField(default=0)
    arrays = models.BinaryField(help_text="npz of caption_ids, video_ids, relevance, votes.")
    metadata = models.JSONField(default=dict, blank=True)
    is_default = models.BooleanField(
        default=False,
        help_text="The set the dataset's report uses when none is named; at most one per dataset.",
    )
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="versions",
        help_text="The label set this version was made from (it is never edited in place).",
    )
    version = models.PositiveIntegerField(
        default=1, help_text="1 for a set made from scratch, its parent's version + 1 otherwise."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "name"], name="label_set_name_unique_per_dataset"
            ),
            models.UniqueConstraint(
                fields=["dataset"],
                condition=models.Q(is_default=True),
                name="one_default_label_set_per_dataset",
            ),
        ]
        # The role permission of re-scoring (see config.roles).
        permissions = [("view_reports", "Can see label sets and re-scoring reports")]

    def __str__(self) -> str:
        return f"{self.dataset.name}/{self.name}"
