"""ORM for the human side: campaigns, the pairs they pool (FIRE §2.2.1), leases, judgements
(FIRE §3.1), escalations and gold. Each pair keeps running counts of its labels, the labels
the policy still needs and its leases, so the next-task query is an indexed lookup.
"""

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import BooleanField, Case, F, Q, Value, When
from django.db.models.functions import Greatest

from annotation.campaigns.settings import CampaignSettings, SettingsError
from annotation.campaigns.spec import DEFAULT_LEASE_SECONDS, LEASE_SECONDS
from retrieval.label_sets.status import LABELS, LabelStatus
from retrieval.models import Caption, Dataset, Run, Video

FIRE_GUIDELINES = """\
Mark the caption RELEVANT only if every element it mentions can reasonably be considered \
present in the video: people, objects, places and activities, and also quantities, qualities \
and adjectives ("two", "red", "quickly"). For "a boy playing the violin" the video must show \
a boy who is playing the violin: a video of only a violin, or only a boy, is not relevant.

You may use interpretation and inference, but when the caption is ambiguous or vague, err \
toward NOT RELEVANT.

Sensitive categories (age, gender): accept what the caption says unless you have compelling, \
concrete reasons to believe otherwise (a baby is not "old"; an octogenarian with white hair \
and wrinkled skin is not "young"), and do not attempt finer distinctions. Make no assumptions \
about gender: accept the gender the caption describes.

Use ESCALATE, with a short reason, only when a pair cannot be judged at all (the video does \
not play, the caption is unintelligible). Escalations go to an administrator and do not \
count as labels.
"""


class CampaignManager(models.Manager):
    """Campaigns without their provenance blob (megabytes for a big pool) and without the
    hidden companions that serve gold pairs (``Campaign._base_manager`` reaches those)."""

    def get_queryset(self):
        return super().get_queryset().defer("provenance").filter(gold_of__isnull=True)


def validate_options(value) -> None:
    """Refuse a ``Campaign.options`` value :class:`CampaignSettings` cannot read."""
    try:
        CampaignSettings.from_options(value)
    except SettingsError as exc:
        raise ValidationError(str(exc)) from None


class Campaign(models.Model):
    """A judging campaign on one dataset: pooled runs, depth, and the labelling policy."""

    class Status(models.TextChoices):
        ACTIVE = "active", "active"
        PAUSED = "paused", "paused"
        CLOSED = "closed", "closed"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="campaigns")
    name = models.CharField(max_length=100, unique=True)
    runs = models.ManyToManyField(Run, through="CampaignRun", related_name="campaigns")
    depth = models.PositiveSmallIntegerField(default=10)
    query_sample = models.PositiveIntegerField(
        null=True, blank=True, help_text="Number of sampled query captions (all if empty)."
    )
    seed = models.IntegerField(default=0)
    second_label_rate = models.FloatField(default=0.1)
    max_labels = models.PositiveSmallIntegerField(
        default=3, help_text="Labels after which a tie stays a disagreement."
    )
    lease_seconds = models.PositiveIntegerField(
        default=DEFAULT_LEASE_SECONDS,
        validators=[MinValueValidator(LEASE_SECONDS[0]), MaxValueValidator(LEASE_SECONDS[1])],
    )
    provenance = models.BinaryField(
        default=bytes,
        help_text="npz: ranks int16 [pairs x runs] by pair position (1-based, 0: not retrieved).",
    )
    guidelines = models.TextField(default=FIRE_GUIDELINES)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    options = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_options],
        help_text="Optional behaviour, e.g. proxy ordering: read and written only as "
        "settings (annotation.campaigns.settings.CampaignSettings).",
    )
    gold_of = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        editable=False,
        on_delete=models.CASCADE,
        related_name="gold_companion",
        help_text="Set on the hidden companion that holds a campaign's gold tasks: that campaign.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = CampaignManager()

    class Meta:
        ordering = ["-created_at"]
        # The role permissions of campaigns (see config.roles).
        permissions = [
            ("judge_pairs", "Can judge the pairs of active campaigns"),
            ("view_campaign_reports", "Can see campaigns, their agreement and their reports"),
            ("manage_campaigns", "Can adjudicate, resolve and export campaigns"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def settings(self) -> CampaignSettings:
        """The typed ``options``, read again only when ``options`` is replaced."""
        cached = self.__dict__.get("_settings")
        if cached is None or cached[0] is not self.options:
            cached = (self.options, CampaignSettings.from_options(self.options))
            self.__dict__["_settings"] = cached
        return cached[1]

    def set_settings(self, settings: CampaignSettings, save: bool = True) -> None:
        """The one writer of ``options``: store ``settings`` (saved at once unless ``save``)."""
        self.options = settings.to_options()
        self.__dict__["_settings"] = (self.options, settings)
        if save:
            self.save(update_fields=["options"])

    @property
    def shows_roles(self) -> bool:
        """Whether the judging page underlines the captions' semantic roles (on by default)."""
        return self.settings.show_roles

    def run_names(self) -> list[str]:
        """Names of the pooled runs in provenance order (the columns of ``provenance``)."""
        return list(self.campaign_runs.order_by("position").values_list("run__name", flat=True))


class CampaignRun(models.Model):
    """A run pooled by a campaign; ``position`` is its column in the provenance array."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="campaign_runs")
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["campaign", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "run"], name="campaign_run_once"),
            models.UniqueConstraint(fields=["campaign", "position"], name="campaign_run_position"),
        ]

    def __str__(self) -> str:
        return f"{self.campaign_id}#{self.position}"


def open_slots_expression(needed=None, leased=None, held: bool | None = None):
    """How many more annotators may lease a pair, in SQL: 0 while held, else
    ``max(needed - leased, 0)``, over the row's columns or the values given in their place
    (a check constraint holds every pair to it; ``pair_state.open_slots`` says it in Python)."""
    needed = F("needed") if needed is None else needed
    leased = F("leased") if leased is None else leased
    is_held = Q(held=True) if held is None else Value(held, output_field=BooleanField())
    return Case(When(is_held, then=Value(0)), default=Greatest(needed - leased, Value(0)))


class Pair(models.Model):
    """A caption-video pair to judge, with running label counts; which runs retrieved it, at
    which ranks, is row ``pool_row`` of the campaign's provenance array."""

    class Status(models.TextChoices):
        """The names of :class:`retrieval.label_sets.status.LabelStatus`, the one vocabulary."""

        PENDING = LabelStatus.PENDING.label, LabelStatus.PENDING.label
        RELEVANT = LabelStatus.RELEVANT.label, LabelStatus.RELEVANT.label
        IRRELEVANT = LabelStatus.IRRELEVANT.label, LabelStatus.IRRELEVANT.label
        DISAGREEMENT = LabelStatus.DISAGREEMENT.label, LabelStatus.DISAGREEMENT.label

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="pairs")
    # The (campaign, caption, video) constraint indexes captions; videos need none.
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+", db_index=False)
    video = models.ForeignKey(Video, on_delete=models.CASCADE, related_name="+", db_index=False)
    position = models.PositiveIntegerField(
        help_text="Queue order (lowest first); the campaign's judging order sets and updates it."
    )
    # db_default: rows written before this column existed took their position.
    pool_row = models.PositiveIntegerField(
        default=0, db_default=0, help_text="Row of the campaign's provenance array (fixed)."
    )
    double = models.BooleanField(default=False, help_text="In the second-label sample.")
    label_count = models.PositiveSmallIntegerField(default=0)
    relevant_count = models.PositiveSmallIntegerField(default=0)
    needed = models.PositiveSmallIntegerField(
        default=1, help_text="Labels the policy still needs (leases not subtracted)."
    )
    leased = models.PositiveSmallIntegerField(default=0, help_text="Live leases.")
    open_slots = models.SmallIntegerField(
        default=1,
        help_text="max(needed - leased, 0), or 0 while held: how many more may be leased.",
    )
    held = models.BooleanField(
        default=False, help_text="Escalated: kept from annotators until an admin decides."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    adjudicated = models.CharField(
        max_length=16,
        blank=True,
        choices=[(label.label, label.label) for label in LABELS],  # Judgement.Label's
        help_text="An admin's final label; wins over the annotators' labels.",
    )
    adjudicated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    adjudicated_at = models.DateTimeField(null=True, blank=True)
    # db_default: campaign creation inserts pairs with raw SQL that does not name this column.
    auto_label = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",
        help_text="Set when a semantic proxy labelled the pair without a human, e.g. "
        "'bow>=0.90' (relevant) or 'bow<=0.05' (irrelevant); see annotation.ordering.proxy_queue.",
    )

    class Meta:
        ordering = ["campaign", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "caption", "video"], name="pair_once"),
            # The invariants annotation.judging.pair_state keeps: a writer that breaks one
            # fails here instead of corrupting the queue.
            models.CheckConstraint(
                condition=Q(open_slots__gte=0) & Q(open_slots__lte=F("needed")),
                name="pair_open_slots_within_needed",
            ),
            models.CheckConstraint(
                condition=Q(held=False) | Q(open_slots=0), name="pair_held_has_no_slots"
            ),
            models.CheckConstraint(
                condition=Q(open_slots=open_slots_expression()), name="pair_open_slots_rule"
            ),
            models.CheckConstraint(
                condition=Q(relevant_count__lte=F("label_count")),
                name="pair_relevant_within_labels",
            ),
        ]
        indexes = [
            # The next-task query walks open pairs in queue order: a partial index keeps it
            # small as the campaign fills up.
            models.Index(
                fields=["campaign", "position"], name="pair_queue", condition=Q(open_slots__gt=0)
            ),
            models.Index(fields=["campaign", "status"], name="pair_status"),
        ]

    def __str__(self) -> str:
        return f"{self.caption_id} x {self.video_id}"


class CampaignTally(models.Model):
    """Running totals of a campaign's pairs per shard, kept exact by triggers on the pair
    table (migrations 0004, 0016, 0022): summing ``needed`` per request cost ~90 ms at
    600,000 pairs, and shards make two submits wait for each other one time in sixteen."""

    SHARDS = 16
    """Rows per campaign: a pair counts in shard ``caption id % SHARDS`` (migration 0022)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="tallies")
    shard = models.SmallIntegerField()
    pairs = models.BigIntegerField(default=0, help_text="Pairs not held.")
    labels_left = models.BigIntegerField(default=0, help_text="Sum of needed over pairs not held.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "shard"], name="campaign_tally_shard"),
        ]

    def __str__(self) -> str:
        return f"tally {self.campaign_id}#{self.shard}"


class Lease(models.Model):
    """A pair handed to an annotator until ``expires_at``; expired leases free the pair."""

    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="leases")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="leases"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pair", "annotator"], name="lease_once"),
        ]

    def __str__(self) -> str:
        return f"lease of {self.pair_id} to {self.annotator_id}"


class LapsedLease(models.Model):
    """A lease that ran out recently (and was deleted to free its slot): its annotator may
    still submit within a grace period while the pair has a free slot."""

    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    expired_at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [models.Index(fields=["pair", "annotator"], name="lapsed_lease_pair")]

    def __str__(self) -> str:
        return f"lapsed lease of {self.pair_id} to {self.annotator_id}"


class Judgement(models.Model):
    """One annotator's label for one pair; ``uuid`` makes a retried submit count once."""

    class Label(models.TextChoices):
        """The labels a person gives: :data:`retrieval.label_sets.status.LABELS`, by name."""

        RELEVANT = LabelStatus.RELEVANT.label, LabelStatus.RELEVANT.label
        IRRELEVANT = LabelStatus.IRRELEVANT.label, LabelStatus.IRRELEVANT.label

    uuid = models.UUIDField(unique=True, default=uuid.uuid4)
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="judgements")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgements"
    )
    label = models.CharField(max_length=16, choices=Label.choices)
    seconds = models.FloatField(null=True, blank=True, help_text="Time spent judging.")
    seconds_played = models.FloatField(
        null=True,
        blank=True,
        help_text="Seconds of the video that played before the label (the judging page "
        "always sends it; null: a client that did not say).",
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    discounted_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="An admin discounted the annotator's labels: this one stopped counting "
        "(``undone_at`` is set with it) but stays stored and in the raw export.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["pair", "annotator"],
                condition=Q(undone_at__isnull=True),
                name="one_live_judgement_per_annotator",
            ),
        ]
        indexes = [models.Index(fields=["annotator", "created_at"], name="judgement_by_annotator")]

    def __str__(self) -> str:
        return f"{self.label} by {self.annotator_id} on {self.pair_id}"


class AnnotatorTally(models.Model):
    """Live judgements of one annotator in one campaign on one day (UTC), kept by triggers
    (migrations 0004, 0013): counting them per request cost ~1 ms per 500."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    day = models.DateField()
    judged = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "annotator", "day"], name="annotator_tally_day"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator_id} in {self.campaign_id} on {self.day}: {self.judged}"


class Escalation(models.Model):
    """A pair an annotator could not judge (``kind``: a broken video, or another reason), for
    an admin to review."""

    class Kind(models.TextChoices):
        OTHER = "other", "cannot be judged"
        BROKEN_VIDEO = "broken_video", "broken video"

    uuid = models.UUIDField(unique=True, default=uuid.uuid4)
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="escalations")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="escalations"
    )
    reason = models.TextField()
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.OTHER)
    media_error = models.TextField(
        blank=True,
        help_text="For a broken video: what the browser said (its media error's code and "
        "message, or that no picture came).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolution = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"escalation of {self.pair_id}: {self.reason[:40]}"


class QualificationAttempt(models.Model):
    """One try of an annotator at a campaign's qualification (N training pairs from its
    gold); ``passed`` is None while it runs."""

    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="qualification_attempts"
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="qualification_attempts"
    )
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    correct = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    passed = models.BooleanField(null=True, blank=True)
    admitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["campaign", "annotator", "started_at"]
        indexes = [
            models.Index(fields=["campaign", "annotator"], name="qualification_by_annotator")
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(correct__lte=F("total")), name="qualification_correct_within_total"
            ),
        ]

    def __str__(self) -> str:
        return f"qualification of {self.annotator_id} in {self.campaign_id}"


class GoldPair(models.Model):
    """A pair whose label is known, with the reason: it scores annotators and is never a
    campaign label (its answers are :class:`GoldJudgement`); ``pair``: promoted from."""

    class Source(models.TextChoices):
        IMPORTED = "imported", "imported"
        PROMOTED = "promoted", "promoted"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="gold_pairs")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+", db_index=False)
    video = models.ForeignKey(Video, on_delete=models.CASCADE, related_name="+", db_index=False)
    label = models.CharField(max_length=16, choices=Judgement.Label.choices)
    explanation = models.TextField(help_text="Why the label is right, shown after training.")
    guideline = models.TextField(
        blank=True, help_text="The guideline sentence the label rests on (optional)."
    )
    source = models.CharField(max_length=16, choices=Source.choices)
    pair = models.ForeignKey(
        Pair, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    task = models.OneToOneField(
        Pair,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="gold_task",
        help_text="The hidden pair that serves it in the queue (see annotation.gold."
        "tasks); clients never see its id, only an opaque task id.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "caption", "video"], name="gold_pair_once"),
        ]

    def __str__(self) -> str:
        return f"gold {self.label} {self.caption_id} x {self.video_id}"


class LiveGoldJudgementManager(models.Manager):
    """Gold answers not taken back (``GoldJudgement._base_manager`` sees the undone too)."""

    def get_queryset(self):
        return super().get_queryset().filter(undone_at__isnull=True)


class GoldJudgement(models.Model):
    """An annotator's answer on a gold pair, in qualification training (``attempt``) or in
    the queue (undone like any judgement); it scores the annotator, never a label."""

    class Purpose(models.TextChoices):
        QUALIFICATION = "qualification", "qualification"
        QUEUE = "queue", "queue"

    uuid = models.UUIDField(unique=True, default=uuid.uuid4)
    gold_pair = models.ForeignKey(GoldPair, on_delete=models.CASCADE, related_name="judgements")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="gold_judgements"
    )
    label = models.CharField(max_length=16, choices=Judgement.Label.choices)
    seconds = models.FloatField(null=True, blank=True, help_text="Time spent judging.")
    seconds_played = models.FloatField(
        null=True, blank=True, help_text="Seconds of the video that played (as on a judgement)."
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    purpose = models.CharField(max_length=16, choices=Purpose.choices, default=Purpose.QUEUE)
    attempt = models.ForeignKey(
        QualificationAttempt,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="judgements",
    )
    undone_at = models.DateTimeField(null=True, blank=True)

    objects = LiveGoldJudgementManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["gold_pair", "annotator"],
                condition=Q(purpose="queue", undone_at__isnull=True),
                name="gold_judgement_once_in_queue",
            ),
            models.UniqueConstraint(
                fields=["attempt", "gold_pair"],
                condition=Q(attempt__isnull=False),
                name="gold_judgement_once_per_attempt",
            ),
            models.CheckConstraint(
                condition=Q(purpose="queue", attempt__isnull=True)
                | Q(purpose="qualification", attempt__isnull=False),
                name="gold_judgement_attempt_iff_qualification",
            ),
        ]
        indexes = [
            models.Index(fields=["annotator", "created_at"], name="gold_judgement_by_annotator")
        ]

    def __str__(self) -> str:
        return f"{self.label} by {self.annotator_id} on gold {self.gold_pair_id}"


class AnnotatorStanding(models.Model):
    """Whether an annotator may judge in a campaign: paused (by a rule or an admin) until an
    admin reinstates them."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="standings")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="standings"
    )
    paused_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=300, blank=True)
    paused_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The admin who paused the annotator (empty: a rule did).",
    )
    reinstated_at = models.DateTimeField(null=True, blank=True)
    reinstated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    discounted_at = models.DateTimeField(null=True, blank=True)
    discounted_labels = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "annotator"], name="standing_once"),
        ]

    def __str__(self) -> str:
        state = "paused" if self.paused_at else "active"
        return f"{self.annotator_id} in {self.campaign_id}: {state}"


class StandingEvent(models.Model):
    """One step in an annotator's history with a campaign (:class:`AnnotatorStanding` holds
    only the present state)."""

    class Action(models.TextChoices):
        INVITED = "invited", "invited"
        ADMITTED = "admitted", "admitted"
        PAUSED = "paused", "paused"
        REINSTATED = "reinstated", "reinstated"
        DISCOUNTED = "discounted", "discounted"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    action = models.CharField(max_length=16, choices=Action.choices)
    at = models.DateTimeField()
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The admin who acted (empty: a rule, or a command run without a user).",
    )
    reason = models.CharField(max_length=300, blank=True)
    labels = models.PositiveIntegerField(default=0, help_text="Labels discounted.")
    since = models.DateTimeField(
        null=True, blank=True, help_text="Discounted labels given from this time on (empty: all)."
    )

    class Meta:
        ordering = ["campaign", "annotator", "at", "pk"]
        indexes = [models.Index(fields=["campaign", "annotator"], name="standing_event_by_person")]

    def __str__(self) -> str:
        return f"{self.annotator_id} {self.action} in {self.campaign_id} at {self.at}"


class AnnotatorModel(models.Model):
    """An annotator's estimated confusion in one campaign as the adaptive policy's last refit
    left it (no row: the prior)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    sensitivity = models.FloatField(help_text="P(says relevant | relevant).")
    specificity = models.FloatField(help_text="P(says irrelevant | irrelevant).")
    evidence = models.FloatField(
        default=0.0, help_text="Answers that informed the estimate (gold answers, later labels)."
    )
    fitted_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "annotator"], name="annotator_model_once"),
            models.CheckConstraint(
                condition=Q(sensitivity__gte=0, sensitivity__lte=1)
                & Q(specificity__gte=0, specificity__lte=1),
                name="annotator_model_probabilities",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator_id} in {self.campaign_id}: {self.sensitivity:.3f}/{self.specificity:.3f}"


class PolicyFit(models.Model):
    """The adaptive label policy's last refit of a campaign (a prior per stratum, the best
    pooled rank minus one) and whether another is asked for (``requested_at``)."""

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="+")
    priors = models.JSONField(default=list, blank=True, help_text="P(relevant) per stratum.")
    labels = models.PositiveIntegerField(default=0, help_text="Live labels at the last fit.")
    fitted_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(
        default=0.0, help_text="How long the last refit took, fit to re-ordered queue."
    )
    requested_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"fit of {self.campaign_id} at {self.fitted_at}"


class Assessor(models.Model):
    """A machine that judged some of a campaign's pairs (a vision-language model run
    elsewhere): its judgements are a feature of a relevance predictor, never a label, a
    count or an export row (see :mod:`annotation.assessors`)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assessors")
    name = models.CharField(max_length=255)
    family = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="Model family (e.g. 'clip', 'mme'): a run's own family judging it is circular.",
    )
    source_file = models.CharField(
        max_length=255, blank=True, default="", help_text="The file it was imported from."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign", "name"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "name"], name="assessor_once"),
        ]

    def __str__(self) -> str:
        return f"assessor {self.name} of {self.campaign_id}"


class MachineJudgement(models.Model):
    """An assessor's judgement of one pooled pair or of one gold pair of its campaign (exactly
    one of ``pair`` and ``gold_pair``; a pair both pooled and gold is stored as pooled): a
    score in [0, 1], a label, or both."""

    assessor = models.ForeignKey(Assessor, on_delete=models.CASCADE, related_name="judgements")
    # The (assessor, pair) constraint indexes assessors; reads go by assessor.
    pair = models.ForeignKey(
        Pair, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    gold_pair = models.ForeignKey(
        GoldPair,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,
        help_text="A gold pair not pooled in the campaign: read only for gold accuracy.",
    )
    score = models.FloatField(null=True, blank=True, help_text="P(relevant) as the machine says.")
    label = models.CharField(
        max_length=16,
        blank=True,
        default="",
        choices=[(label.label, label.label) for label in LABELS],
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["assessor", "pair"], name="machine_judgement_once"),
            models.UniqueConstraint(
                fields=["assessor", "gold_pair"], name="machine_judgement_gold_once"
            ),
            models.CheckConstraint(
                condition=Q(pair__isnull=True, gold_pair__isnull=False)
                | Q(pair__isnull=False, gold_pair__isnull=True),
                name="machine_judgement_pair_or_gold",
            ),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=0, score__lte=1),
                name="machine_judgement_score_probability",
            ),
            models.CheckConstraint(
                condition=Q(score__isnull=False) | ~Q(label=""),
                name="machine_judgement_score_or_label",
            ),
        ]

    def __str__(self) -> str:
        on = self.pair_id if self.pair_id is not None else f"gold {self.gold_pair_id}"
        return f"{self.assessor_id} on {on}: {self.score} {self.label}"


class RelevancePredictor(models.Model):
    """A campaign's last fitted relevance predictor (:mod:`annotation.prediction`): every pooled
    pair's cross-fitted probability of relevance, replaced whole by each fit."""

    campaign = models.OneToOneField(
        Campaign, on_delete=models.CASCADE, related_name="relevance_predictor"
    )
    arrays = models.BinaryField(
        default=bytes,
        help_text="npz: pair_ids int64, probability float32 and fold int16, in pool order.",
    )
    feature_names = models.JSONField(default=list, blank=True)
    quality = models.JSONField(
        null=True,
        blank=True,
        help_text="Out-of-fold log loss, Brier score and AUC (None: no labels).",
    )
    labelled = models.PositiveIntegerField(default=0, help_text="Pairs with a target.")
    method = models.CharField(max_length=255, blank=True, default="")
    fitted_at = models.DateTimeField()
    seconds = models.FloatField(default=0.0, help_text="How long the fit took, inputs included.")

    def __str__(self) -> str:
        return f"relevance predictor of {self.campaign_id} at {self.fitted_at}"


class ActiveStage(models.Model):
    """One stage of a campaign's active draws (:mod:`annotation.active.stages`): every pooled
    query's inclusion probability and predicted metrics, frozen before the draw, which queries
    were drawn to be judged in full, and, once they are, the estimates they give."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="active_stages")
    number = models.PositiveIntegerField(help_text="1 for the first stage.")
    seed = models.PositiveIntegerField(default=0)
    drawn_at = models.DateTimeField()
    arrays = models.BinaryField(
        default=bytes,
        help_text=(
            "npz: caption_ids int64 (the pooled queries), probability float64, judged bool "
            "(judged in full once this stage is: earlier stages' queries and this draw's) and "
            "predicted float64 (queries x runs x metrics)."
        ),
    )
    run_names = models.JSONField(default=list)
    metrics = models.JSONField(default=list)
    drawn = models.PositiveIntegerField(default=0, help_text="Queries this stage drew.")
    pairs = models.PositiveIntegerField(default=0, help_text="Pairs it served again.")
    labels_before = models.PositiveIntegerField(default=0, help_text="Labels given before it.")
    estimates = models.JSONField(
        null=True,
        blank=True,
        help_text="run -> metric -> estimate, low, high, label and sampling variance, once "
        "every drawn query is judged in full (None before).",
    )
    estimated_at = models.DateTimeField(null=True, blank=True)
    stopped = models.TextField(
        blank=True,
        default="",
        help_text="Why no stage was drawn after this one, in the stopping rule's words (blank "
        "while one may be).",
    )

    class Meta:
        ordering = ["campaign", "number"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "number"], name="active_stage_once"),
        ]

    def __str__(self) -> str:
        return f"active stage {self.number} of {self.campaign_id}"
