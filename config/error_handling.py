"""Where a :class:`config.errors.UserError` becomes a response: a page or an API answer.

Views and API views let user errors through; these two hooks, named in the settings
(``MIDDLEWARE`` and ``REST_FRAMEWORK["EXCEPTION_HANDLER"]``), show the message with the
error's status, never a traceback.
"""

from django.shortcuts import render
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from config.errors import UserError


class UserErrorMiddleware:
    """Render a :class:`UserError` a view let through as a page with its message."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception: Exception):
        if not isinstance(exception, UserError):
            return None
        context = {"message": str(exception)}
        return render(request, "error.html", context, status=exception.status)


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF's handler, plus ``{"code", "detail"}`` with the error's status for a UserError."""
    if isinstance(exc, UserError):
        set_rollback()  # as DRF does for its own errors: an atomic request changes nothing
        return Response({"code": exc.code, "detail": str(exc)}, status=exc.status)
    return exception_handler(exc, context)
