"""Request parsing for the API: malformed bodies are the client's error, never a crash."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, with bodies nested past Python's recursion limit answered 400, and
    bodies over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` refused unread (the 413 of
    :func:`config.error_handling.bad_request`, as for a form).

    ``json.loads`` raises RecursionError (not ValueError) for about a thousand nested
    arrays, which DRF would let through as a 500; two kilobytes of brackets are enough.
    DRF reads a JSON body from the request's stream, which Django does not limit.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        length = request.META.get("CONTENT_LENGTH") if request is not None else None
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and str(length or "").isdigit() and int(length) > limit:
            raise RequestDataTooBig("the JSON body is over DATA_UPLOAD_MAX_MEMORY_SIZE")
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply") from None
