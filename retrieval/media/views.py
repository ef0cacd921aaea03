"""The media page: a known video file, with HTTP Range support, to a user allowed it."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from retrieval.media import access as media_access
from retrieval.media.delivery import media_response


@require_safe
@login_required
def serve_media(request: HttpRequest, path: str) -> HttpResponse:
    """Send a known media file to a user allowed it (Range, ETag and 304); anything else is
    the same 404, so the answer says nothing about which files exist."""
    full = media_access.media_file(path)
    if full is None or not media_access.may_fetch(request.user, path):
        raise Http404("Not found")
    return media_response(request, path, full)
