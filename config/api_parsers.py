"""Request parsing for the API: malformed bodies are the client's error, never a crash."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, answering 400 to bodies nested past the recursion limit (two
    kilobytes of brackets were a 500) and refusing unread those over
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (a stream Django does not limit)."""

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
