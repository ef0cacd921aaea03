"""Pure: the one rule for free text people type and others read (token names, pause and
escalation reasons, adjudication notes, gold explanations, campaign guidelines), and the
characters every rule about text refuses, names included (:mod:`retrieval.datasets.names`).

Text is shown on pages, in exports and in log lines, so it may hold no character that
changes how the text around it reads: control characters, invisible format characters
(among them the bidirectional overrides such as U+202E, which show "txt.exe" as
"exe.txt"), line and paragraph separators, private-use, surrogate and unassigned code
points. A line holds none of them; a multi-line text (``lines=True``, :func:`check_text`) may
also hold line breaks and tabs. Each has a longest length, which the message names.
Services check what they store; forms and serializers reach the same rule through
:class:`config.text_validators.TextValidator`, to show the message on the field. The module
imports no Django, so pure modules use it too.
"""

import unicodedata

from config.errors import UserError

REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Co": "a private-use character",
    "Cs": "an unpaired surrogate",
    "Cn": "an unassigned code point",
}
"""Unicode general categories no shown text may contain, and how a message calls each."""

LINE_BREAKS = "\n\r\t"
"""The control characters a multi-line text may hold."""


class InvalidText(UserError):
    """Text the rule refuses; the message names the field and why."""

    code = "invalid_text"


def character_problem(text: str, allowed: str = "") -> str | None:
    """Why ``text`` holds a character no shown text may (a phrase naming it and its
    position), or None; characters in ``allowed`` pass."""
    for position, char in enumerate(text, start=1):
        category = unicodedata.category(char)
        if category in REFUSED_CATEGORIES and char not in allowed:
            return (
                f"contains {REFUSED_CATEGORIES[category]} (U+{ord(char):04X}) "
                f"at character {position}"
            )
    return None


def text_problem(text: object, max_length: int, lines: bool = False) -> str | None:
    """Why ``text`` cannot be stored as a line (or, with ``lines``, a multi-line text) of at
    most ``max_length`` characters, or None if it can."""
    if not isinstance(text, str):
        return "is not text"
    if len(text) > max_length:
        return f"is {len(text):,} characters long, over the limit of {max_length:,}"
    return character_problem(text, LINE_BREAKS if lines else "")


def check_text(text: object, what: str, max_length: int) -> str:
    """``text`` if it may be the multi-line ``what`` ("note", ...), else :class:`InvalidText`
    saying "the note contains ..."; blanks are not stripped."""
    problem = text_problem(text, max_length, lines=True)
    if problem is not None:
        raise InvalidText(f"the {what} {problem}")
    return text  # type: ignore[return-value]
