"""Pure: the one rule for free text people type and others read, and the characters every rule
about text refuses: none that changes how the text around it reads (controls, invisible format
characters such as U+202E, separators, private-use, surrogate and unassigned code points); a
multi-line text may hold line breaks and tabs. Imports no Django, so pure modules use it."""

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
    """Why ``text`` holds a character no shown text may (naming it and its position), or None;
    characters in ``allowed`` pass."""
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
