"""Pure: the one rule for the names people give datasets, models, runs, campaigns and label
sets, and how any stored name, even one from before the rule, travels in a link.

A name is shown on pages, put in links, CSV cells, job descriptions and log lines, so it
must read as one line and name one path segment. :func:`check_name` refuses what breaks
that: nothing or only blanks, blanks at either end, more than :data:`NAME_MAX_LENGTH`
characters, ``.`` and ``..`` (which links resolve to the folder above), ``/`` and ``\\``
(folder separators in links and file names; browsers read ``\\`` as ``/``), and every
character every shown text refuses (:data:`config.text_rule.REFUSED_CATEGORIES`: line and
paragraph separators, control, format, private-use, surrogate and unassigned code points). Services check every name they store
with it; forms, serializers, commands and jobs reach it through them (and forms and
serializers through :class:`retrieval.forms.NameValidator`, to show the message on the
field).

Rows written before the rule may still hold any text. :func:`name_to_segment` turns every
name into one URL path segment and :func:`segment_to_name` back: a name the rule accepts is
its own segment (so links stay readable and hand-typed URLs keep working); any other name
becomes ``\\`` followed by its percent-escaped UTF-8 with dots escaped too, which no
accepted name can be (``\\`` is refused), contains no ``/`` and is never a dot segment,
which browsers would resolve away however it is escaped (WHATWG URL Standard, "double-dot
path segment"). Django's ``reverse`` quotes the segment and the server unquotes it
before :class:`NameConverter` sees it, so the round trip is exact for every string.
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
    """A name the rule accepts, made from ``text`` that nobody typed as a name (a campaign's
    name with a version number, a suggestion built from stored names, which may predate the
    rule): ``/`` and ``\\`` become ``-``, refused characters and runs of blanks one space,
    and the result is cut to the limit; ``fallback`` when nothing usable is left. A name
    the rule accepts is returned as it is."""
    if name_problem(text) is None:
        return text
    kept = [
        "-"
        if char in SEPARATORS
        else " "
        if unicodedata.category(char) in REFUSED_CATEGORIES
        else char
        for char in text
    ]
    name = " ".join("".join(kept).split())[:NAME_MAX_LENGTH].strip()
    return fallback if name in ("", ".", "..") else name


def name_to_segment(name: str) -> str:
    """The one URL path segment that names ``name`` (see the module docstring)."""
    if name_problem(name) is None:
        return name
    return ESCAPE + quote(name, safe="", errors="surrogatepass").replace(".", "%2E")


def segment_to_name(segment: str) -> str:
    """The name a path segment made by :func:`name_to_segment` stands for.

    Raises ValueError for an escaped segment that is not valid percent-escaped UTF-8 (the
    URL then matches nothing: a 404).
    """
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
