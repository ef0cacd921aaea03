"""Request parsing for the API: malformed bodies are the client's error, never a crash."""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, with bodies nested past Python's recursion limit answered 400.

    ``json.loads`` raises RecursionError (not ValueError) for about a thousand nested
    arrays, which DRF would let through as a 500; two kilobytes of brackets are enough.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply") from None
