"""Permissions and the rate limit of the scoring API (and of the add-model page, which
registers run files the same way); its authentication is
``config.api_tokens.SCRIPT_AUTHENTICATION``."""

from django.conf import settings
from rest_framework.exceptions import Throttled
from rest_framework.throttling import SimpleRateThrottle

from config import attempt_counts, roles
from config.errors import UserError


class CanScoreRuns(roles.HasPerm):
    """Those who may score runs; a job's scores only its uploader or an admin."""

    permission = roles.SCORE_RUNS
    message = "Only researchers and admins can score runs."


class RunUploadLimit(UserError):
    """Over the run-upload rate, on the add-model page (the API answers DRF's 429)."""

    code = "throttled"
    status = 429


class RunUploadThrottle(SimpleRateThrottle):
    """Run files registered per user at ``FIREPOOL_RUN_UPLOAD_RATE``, one count for the scoring
    API and the add-model page (:meth:`check`), kept by :mod:`config.attempt_counts` (DRF's
    cache history was per worker and let parallel uploads through)."""

    scope = "run_upload"

    def get_rate(self) -> str:
        return settings.FIREPOOL_RUN_UPLOAD_RATE

    def allow_request(self, request, view) -> bool:
        user = request.user
        who = f"user:{user.pk}" if user.is_authenticated else f"ip:{self.get_ident(request)}"
        self.count = attempt_counts.add(f"{self.scope}:{who}", self.duration)
        return self.count.number <= self.num_requests

    def wait(self) -> float:
        return self.count.seconds_left()

    @staticmethod
    def refusal(wait: float | None) -> Throttled:
        """The refusal both doors give; DRF's own words say when to try again."""
        rate = settings.FIREPOOL_RUN_UPLOAD_RATE
        return Throttled(wait, detail=f"Too many run files uploaded: at most {rate} per user.")

    def check(self, request) -> None:
        """Count one upload; :class:`RunUploadLimit` with the API's message once over the rate."""
        if not self.allow_request(request, None):
            raise RunUploadLimit(str(self.refusal(self.wait()).detail))
