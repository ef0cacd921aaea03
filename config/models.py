"""The project layer's tables: named API tokens (see :mod:`config.api_tokens`) and attempt
counters (see :mod:`config.attempt_counts`)."""

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A named key a script sends as ``Authorization: Token <key>``; only its SHA-256 is stored."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(
        max_length=12, help_text="The key's first characters, to tell keys apart."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="api_token_name_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} / {self.name}"


class AttemptCount(models.Model):
    """How many attempts one key made in its window, which ends at ``ends``."""

    key = models.CharField(max_length=120, primary_key=True)
    count = models.PositiveIntegerField()
    ends = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.key}: {self.count} until {self.ends:%Y-%m-%d %H:%M:%S}"
