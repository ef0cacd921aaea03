"""The record of one background job: what it runs, where it stands, how it ended."""

from django.conf import settings
from django.db import models


class Job(models.Model):
    """One run of a registered job kind with its arguments: the truth for users (the task
    backend carries only its id); a stale heartbeat marks a job whose worker died."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"

    kind = models.CharField(max_length=40)
    arguments = models.JSONField(default=dict)
    description = models.CharField(max_length=300, blank=True)
    queue = models.CharField(max_length=40, default="default")
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    done = models.BigIntegerField(default=0, help_text="Units of work done so far.")
    total = models.BigIntegerField(null=True, blank=True, help_text="Units of work in all.")
    message = models.CharField(max_length=300, blank=True, help_text="What it is doing now.")
    error = models.TextField(blank=True, help_text="Why it failed, in words for its user.")
    traceback = models.TextField(blank=True, help_text="For admins only; never shown on pages.")
    result = models.JSONField(null=True, blank=True)
    output = models.CharField(max_length=500, blank=True, help_text="File it wrote, if any.")
    attempts = models.PositiveIntegerField(default=0)
    task_id = models.CharField(max_length=64, blank=True, help_text="The task backend's id.")
    worker = models.CharField(max_length=120, blank=True)
    retry_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="retries"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["status", "heartbeat_at"])]
        permissions = [
            ("start_research_job", "Can start embedding, training, search and scoring jobs"),
            ("start_admin_job", "Can start pooling and export jobs"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} ({self.kind}, {self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)

    @property
    def percent(self) -> float | None:
        """Share of the work done when the total is known (all of it once succeeded)."""
        if self.status == self.Status.SUCCEEDED:
            return 100.0
        if not self.total:
            return None
        return min(100.0, 100.0 * self.done / self.total)


class StoredFigure(models.Model):
    """A figure computed once and kept (:mod:`jobs.figures`): ``payload`` pickled, ``inputs``
    the fingerprint of what it was computed from."""

    kind = models.CharField(max_length=60)
    subject = models.CharField(max_length=200, help_text="What it is of, e.g. a label set.")
    inputs = models.CharField(max_length=64, help_text="Fingerprint of what it was computed from.")
    payload = models.BinaryField()
    computed_at = models.DateTimeField()
    seconds = models.FloatField(help_text="How long computing it took.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "subject"], name="one_figure_per_subject")
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.subject} at {self.computed_at}"
