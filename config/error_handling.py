"""Where a :class:`config.errors.UserError` becomes a response: a page or an API answer.

Views and API views let user errors through; these two hooks, named in the settings
(``MIDDLEWARE`` and ``REST_FRAMEWORK["EXCEPTION_HANDLER"]``), show the message with the
error's status, never a traceback. The API's handler builds the one error body of the API,
``{"code", "detail"}``, for DRF's own errors too: views raise, they never build one.
"""

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from django.shortcuts import render
from django.urls import Resolver404, get_resolver, get_urlconf, resolve
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers
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


class SiteNotFoundMiddleware:
    """In debug mode too, an unknown address or a view's Http404 gets the site's own 404 page
    (``404.html``, in the site's frame) instead of Django's technical page, so what a
    developer sees is what users see. Placed after ``CommonMiddleware``, whose trailing-slash
    redirect still answers a 404 that only lacks the slash."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        if settings.DEBUG:
            # Django turns a failed URL match into its technical page before any middleware
            # sees the exception, so the match is tried here first.
            try:
                resolve(request.path_info, getattr(request, "urlconf", None))
            except Resolver404 as exc:
                return _not_found(request, exc)
        return self.get_response(request)

    def process_exception(self, request, exception: Exception):
        if settings.DEBUG and isinstance(exception, Http404):
            return _not_found(request, exception)
        return None


def _not_found(request, exception: Http404):
    """The site's 404 answer: the URL configuration's handler404 (Django's page_not_found,
    which renders ``404.html``, unless one is set)."""
    handler = get_resolver(
        getattr(request, "urlconf", None) or get_urlconf()
    ).resolve_error_handler(404)
    return handler(request, exception=exception)


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """Every API error as one body, ``{"code", "detail"}``, with the error's status: a
    UserError's code and message; DRF's errors (validation, 404, 403, throttling, a
    malformed body) keep DRF's status, headers and message, with the error's code beside
    it (``invalid`` for a serializer's errors, whose ``detail`` maps fields to messages)."""
    if isinstance(exc, UserError):
        set_rollback()  # as DRF does for its own errors: an atomic request changes nothing
        return Response({"code": exc.code, "detail": str(exc)}, status=exc.status)
    if isinstance(exc, Http404):  # what DRF's handler does, done first to know the code
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    response = exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.APIException):
        if isinstance(exc, exceptions.ValidationError):
            code, detail = exc.default_code, exc.detail
        else:
            code, detail = getattr(exc.detail, "code", exc.default_code), exc.detail
        response.data = {"code": code, "detail": detail}
    return response


class ErrorSerializer(serializers.Serializer):
    """The body of every API error, as :func:`api_exception_handler` builds it (for the schema)."""

    code = serializers.CharField()
    detail = serializers.JSONField(help_text="A message, or each invalid field's messages.")


def error_response(description: str) -> OpenApiResponse:
    """An API error response for the schema: the one body, with what the status means here."""
    return OpenApiResponse(ErrorSerializer, description=description)
