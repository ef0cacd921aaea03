"""Pure: the one rule for the names of datasets, models, runs, campaigns and label sets, and
how any stored name, even one from before the rule, travels in a link.

A name must read as one line and name one path segment: :func:`check_name` (which services
apply to every name they store) refuses blank, padded or too long names, ``.`` and ``..``,
``/`` and ``\\``, and the characters :data:`config.text_rule.REFUSED_CATEGORIES` refuses. A
name the rule accepts is its own URL segment; any other becomes ``\\`` and its
percent-escaped UTF-8 with dots escaped too, never a dot segment (WHATWG URL Standard,
"double-dot path segment"), so the round trip is exact for every string.
"""

import unicodedata
from urllib.parse import quote, unquote

from config.errors import UserError
from config.text_rule import REFUSED_CATEGORIES

NAME_MAX_LENGTH = 100
"""The ``name`` columns of Dataset, RetrievalModel, Run, LabelSet and Campaign."""

SEPARATORS = "/\\"
ESCAPE = "\\"
"""First character of the link segment of a name the rule refuses; no accepted name has it."""


class InvalidName(UserError):
    """A name the rule refuses; the message says which thing's name and why."""

    code = "invalid_name"


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name anything (a phrase to follow the name), or None if it can."""
    if not isinstance(name, str):
        return "is not text"
    if not name.strip():
        return "is empty" if not name else "is only blanks"
    if len(name) > NAME_MAX_LENGTH:
        return f"is {len(name)} characters long, over the limit of {NAME_MAX_LENGTH}"
    if name != name.strip():
        return "starts or ends with a blank"
    if name in (".", ".."):
        return "cannot be '.' or '..': links read them as folders"
    for position, char in enumerate(name, start=1):
        if char in SEPARATORS:
            return f"contains {char!r} at character {position}: names cannot hold '/' or '\\'"
        category = unicodedata.category(char)
        if category in REFUSED_CATEGORIES:
            return (
                f"contains {REFUSED_CATEGORIES[category]} (U+{ord(char):04X}) "
                f"at character {position}"
            )
    return None


def shown(name: object) -> str:
    """``name`` quoted for a message: escapes visible, cut to 60 characters."""
    text = name if isinstance(name, str) else str(name)
    return repr(text[:60]) + ("..." if len(text) > 60 else "")


def check_name(name: object, what: str) -> str:
    """``name`` if it may name a ``what`` ("dataset", "model", ...), else :class:`InvalidName`
    saying "the dataset name 'a/b' contains '/' ..."."""
    problem = name_problem(name)
    if problem is not None:
        raise InvalidName(f"the {what} name {shown(name)} {problem}")
    return name  # type: ignore[return-value]  # name_problem checked it is a str


def derived_name(text: str, fallback: str = "unnamed") -> str:
    """A name the rule accepts made from ``text`` nobody typed as one (a versioned name, a
    suggestion from stored names): separators become ``-``, refused characters and blank
    runs one space, cut to the limit; ``fallback`` when nothing is left."""
    if name_problem(text) is None:
        return text
    dashed = text.translate(str.maketrans(SEPARATORS, "-" * len(SEPARATORS)))
    kept = "".join(" " if unicodedata.category(c) in REFUSED_CATEGORIES else c for c in dashed)
    name = " ".join(kept.split())[:NAME_MAX_LENGTH].strip()
    return fallback if name in ("", ".", "..") else name


def name_to_segment(name: str) -> str:
    """The one URL path segment that names ``name`` (see the module docstring)."""
    if name_problem(name) is None:
        return name
    return ESCAPE + quote(name, safe="", errors="surrogatepass").replace(".", "%2E")


def segment_to_name(segment: str) -> str:
    """The name a :func:`name_to_segment` segment stands for; ValueError (a 404) for an
    escaped segment that is not valid percent-escaped UTF-8."""
    if not segment.startswith(ESCAPE):
        return segment
    return unquote(segment[1:], errors="surrogatepass")


class NameConverter:
    """The ``<name:...>`` path converter: any stored name, one segment (Django's converter
    protocol: ``regex``, ``to_python``, ``to_url``)."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return segment_to_name(value)

    def to_url(self, value: str) -> str:
        return name_to_segment(value)
