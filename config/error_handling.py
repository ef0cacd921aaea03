"""Where a :class:`config.errors.UserError` becomes a response, a page or the API's one error
body ``{"code", "detail"}`` (for DRF's own errors too), never a traceback; and
:func:`bad_request` (``handler400``) for a request over Django's size limits."""

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, get_resolver, get_urlconf, resolve
from django.views import defaults
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from config.errors import UserError
from config.redirects import back


class _Middleware:
    """A middleware that only hooks ``process_*`` methods."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)


class UserErrorMiddleware(_Middleware):
    """Render a :class:`UserError` a view let through as a page with its message (a
    :class:`config.errors.NotFound` as the site's 404 page, as an ``Http404`` is)."""

    def process_exception(self, request, exception: Exception):
        if not isinstance(exception, UserError):
            return None
        if exception.status == 404:  # a lookup by a page's name or id: the site's 404 page
            return _not_found(request, Http404(str(exception)))
        match = getattr(request, "resolver_match", None)
        marked = getattr(match.func, "user_errors_back", None) if match else None
        if marked is not None:  # an action's refusal: a message on the page it came from
            url_name, names = marked
            messages.error(request, str(exception))
            return back(request, url_name, **{name: match.kwargs[name] for name in names})
        context = {"message": str(exception)}
        return render(request, "error.html", context, status=exception.status)


class Refusal:
    """Where a page that shows itself again takes a refusal: a :class:`UserError` (or only
    the ``only`` kinds of it) raised in the ``with`` block is kept (``error``, ``message``,
    ``status``) and put on ``form`` (on ``field``, or the form field the error names, else the
    whole form's) and the block is left, so the view goes on to show its page with why. Views
    never catch a UserError themselves; every other page's refusal is the middleware's."""

    def __init__(self, form=None, field: str | None = None, *, only=UserError) -> None:
        self.form, self.field, self.only = form, field, only
        self.error: UserError | None = None

    def __enter__(self) -> "Refusal":
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        if not isinstance(error, self.only):
            return False
        self.error = error
        if self.form is not None:
            named = getattr(error, "field", None)
            field = self.field or (named if named in self.form.fields else None)
            self.form.add_error(field, str(error))
        return True

    @property
    def message(self) -> str:
        return str(self.error) if self.error is not None else ""

    @property
    def status(self) -> int:
        """The refusal's status, or 400 for a form the block never reached (invalid)."""
        return self.error.status if self.error is not None else 400


def user_errors_back(url_name: str, *url_arguments: str):
    """Mark an action view whose refusals go back as a message, to the form's on-site ``next``
    or else ``url_name`` with the view's ``url_arguments`` (apply it outermost)."""

    def mark(view):
        view.user_errors_back = (url_name, url_arguments)
        return view

    return mark


class SiteNotFoundMiddleware(_Middleware):
    """In debug mode too, a 404 gets the site's own page instead of Django's technical one
    (after ``CommonMiddleware``, whose trailing-slash redirect still answers first)."""

    def __call__(self, request):
        if settings.DEBUG:
            # Django renders a failed URL match before any middleware sees it: match here.
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
    """The site's 404 answer: the URL configuration's handler404."""
    urlconf = getattr(request, "urlconf", None) or get_urlconf()
    return get_resolver(urlconf).resolve_error_handler(404)(request, exception=exception)


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """Every API error as ``{"code", "detail"}`` with its status: a UserError's, or DRF's own
    status, headers and message with the error's code (``invalid`` for a serializer's)."""
    if isinstance(exc, UserError):
        set_rollback()  # as DRF does for its own errors: an atomic request changes nothing
        return Response({"code": exc.code, "detail": str(exc)}, status=exc.status)
    request = context.get("request")
    too_large = too_large_message(exc, request) if request is not None else None
    if too_large is not None:  # read by a parser in the view: here in debug mode too
        status, code = limit_status(exc)
        return Response({"code": code, "detail": too_large}, status=status)
    if isinstance(exc, Http404):  # what DRF's handler does, done first to know the code
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    response = exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.APIException):
        validation = isinstance(exc, exceptions.ValidationError)
        code = exc.default_code if validation else getattr(exc.detail, "code", exc.default_code)
        response.data = {"code": code, "detail": exc.detail}
    return response


class ErrorSerializer(serializers.Serializer):
    """The body of every API error, as :func:`api_exception_handler` builds it (for the schema)."""

    code = serializers.CharField()
    detail = serializers.JSONField(help_text="A message, or each invalid field's messages.")


def error_response(description: str) -> OpenApiResponse:
    """An API error response for the schema: the one body, with what the status means here."""
    return OpenApiResponse(ErrorSerializer, description=description)


API_PREFIX = "/api/"


def too_large_message(exception: Exception, request) -> str | None:
    """The message of a request over one of Django's size limits, or None for another."""
    if isinstance(exception, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        sent = request.META.get("CONTENT_LENGTH") or "more"
        if str(sent).isdigit():
            sent = f"{int(sent):,}"
        return (
            f"The request is too large: {sent} bytes, over the limit of {limit:,} bytes "
            f"({limit / 2**20:.0f} MiB) for text fields (DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE). "
            "Shorten the text; files go in file fields, which have their own limit."
        )
    if isinstance(exception, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return (
            f"The request has too many fields: at most {limit:,} "
            "(DJANGO_DATA_UPLOAD_MAX_NUMBER_FIELDS)."
        )
    if isinstance(exception, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return f"The request has too many files: at most {limit:,}."
    return None


def limit_status(exception: Exception) -> tuple[int, str]:
    """The status and code of a request over a size limit: 413 for a body too large."""
    return (413, "too_large") if isinstance(exception, RequestDataTooBig) else (400, "too_many")


def bad_request(request, exception=None) -> HttpResponse:
    """``handler400``: a request over a limit gets its message as a page or, under ``/api/``,
    the API's error body; any other bad request gets Django's own answer."""
    message = too_large_message(exception, request) if exception is not None else None
    if message is None:
        return defaults.bad_request(request, exception)
    status, code = limit_status(exception)
    if request.path_info.startswith(API_PREFIX):
        return JsonResponse({"code": code, "detail": message}, status=status)
    return render(request, "error.html", {"message": message}, status=status)


class BodyLimitMiddleware(_Middleware):
    """A form post over a size limit gets :func:`bad_request`'s answer in debug mode too, where
    the CSRF check would show a traceback: placed before it, this reads the body first."""

    LIMITS = (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent)

    def process_view(self, request, callback, callback_args, callback_kwargs):
        if request.method != "POST" or getattr(callback, "csrf_exempt", False):
            return None
        try:
            request.POST  # noqa: B018 - read as the CSRF check would, to meet its limits here
        except self.LIMITS as exc:
            return bad_request(request, exc)
        return None
