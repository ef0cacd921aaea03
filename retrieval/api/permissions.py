"""Authentication, permissions and the rate limit of the scoring API."""

from django.conf import settings
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.throttling import UserRateThrottle

from config import roles
from config.api_permissions import HasPermission

SCRIPT_AUTHENTICATION = [SessionAuthentication, TokenAuthentication]
"""A browser's session, or a script's ``Authorization: Token <key>`` header (keys come from
``manage.py drf_create_token <username>``). The session comes first, so an anonymous request
is a 403 as elsewhere in the API, not the 401 a token challenge would make it."""


class CanScoreRuns(HasPermission):
    """Those who may start research jobs (the researcher and admin roles)."""

    permission = roles.START_RESEARCH_JOB
    message = "Only researchers and admins can score runs."


class RunUploadThrottle(UserRateThrottle):
    """Run uploads per user, at ``FIREPOOL_RUN_UPLOAD_RATE`` (read per request)."""

    scope = "run_upload"

    def get_rate(self) -> str:
        return settings.FIREPOOL_RUN_UPLOAD_RATE
