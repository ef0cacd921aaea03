"""ORM for benchmarks: a dataset of videos and the captions that query them.

A caption has one *origin* video (the one it was written for): the single implicit
positive that benchmarks such as MSR-VTT and MSVD count (FIRE §2.1). Which captions are
used as queries is stored per caption, because benchmarks differ: MSR-VTT 1k-A queries
one caption per test video, MSVD every test caption.
"""

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
    """A file made from a video for browsers: a browser copy or a segment clip.

    ``key`` hashes the source's fingerprint, the copy settings and the span, so a file is
    made once however many videos share it, and settings changed later make a new one (see
    :mod:`retrieval.media.service`). ``name`` lies under the media root (``derived/``);
    the original is never touched. Workers claim a pending row with a conditional update,
    so several run side by side and a stopped one's work is taken up again.
    """

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
    """A video, or a clip cut from a longer one by ``start``/``end`` seconds.

    ``probe`` holds the file's facts read at import (:class:`retrieval.media.probe.Probe`).
    ``media_state`` says what a browser gets: the original as it is (``as_is``, also for
    videos imported before probing and for URLs), or ``derived`` (a browser copy or a
    segment clip), which is served only once ``ready`` (``browser_media`` names it then).
    """

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
        """Where a browser fetches the video: its browser copy or segment clip once ready,
        the local file when it plays as it is, else the URL ("" while a copy is not ready)."""
        if self.media_state == self.MediaState.READY and self.browser_media:
            return settings.MEDIA_URL + self.browser_media
        if self.media_state != self.MediaState.AS_IS:
            return ""
        if self.media:
            return self.media.url
        return self.url

    @property
    def poster_url(self) -> str:
        """A still shown while the video loads and as its thumbnail: of its browser copy or
        segment clip (at the segment's start), or the first frame of a file that plays as it
        is; "" while none is made (or none could be)."""
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
        """The media fragment (``#t=a,b``) that plays exactly this segment of what
        :attr:`source_url` serves: the span inside a segment clip (which starts a margin
        earlier), or inside the whole recording; "" for a whole video."""
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
    """A text-to-video model registered on a dataset, from one of three sources.

    ``embeddings``: uploaded caption and video embeddings; ``run``: a TREC run file (no
    embeddings, only ranked lists); ``encoder``: a built-in encoder that firepool trains
    and runs itself. Artifacts (weights, embeddings, faiss index) live under
    ``settings.FIREPOOL_ARTIFACTS_DIR``, which is never served over HTTP.
    """

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
    """A model's ranked top-k videos for every query caption, stored as dense arrays.

    ``caption_ids`` (Q), ``video_ids`` (Q x k, -1 where a list is shorter) and ``scores``
    (Q x k) hold primary keys and scores in rank order, so a whole run loads in one row
    in O(queries x k) (see :mod:`retrieval.search.runs`).
    """

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
    """Judged relevance for caption-video pairs of one dataset, from any source.

    A resolved campaign, an imported qrels file or an imported FIRE JSON release all become
    a label set; re-scoring reads only label sets. The pairs live in ``arrays`` (see
    :class:`retrieval.label_sets.judged.Judged`) so that hundreds of thousands of judgements load in
    one row. A caption's own video is relevant by the benchmark's definition and is added
    when scoring, whether or not the set lists it. ``is_default`` marks the set a dataset's
    report uses when none is named (see :mod:`retrieval.label_sets.service` for who sets it).
    A set made from another one plus new labels (a campaign that judged only what a model's
    top k lacked) is a new row, a *version*, with ``parent`` the set it came from: label sets
    are never edited in place, so a score reported against one stays reproducible.
    """

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
