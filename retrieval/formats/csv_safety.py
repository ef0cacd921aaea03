"""Pure: CSV lines that are safe to open in a spreadsheet, and the reading that undoes them.

Spreadsheets run a cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
as a formula ("CSV Injection", OWASP; ASVS 5.0 V1.2.10 adds NUL), so :func:`csv_line`, which
writes every CSV firepool makes, prefixes such **text** cells with a quote, writes
**numbers** (told by type, never by look: ``-1+2`` is text) as they are, and quotes cells
holding a separator (``,;`` tab, quote, line break; RFC 4180 §2.6-2.7). The escape is
reversible: :func:`escape` also quotes text that is already quotes then a trigger, and
:func:`unescape` (applied to every cell read) removes one quote from such cells, so
``unescape(escape(s)) == s``. TREC, JSON Lines and FIRE JSON files are written verbatim.
"""

import math
import numbers
import re
from collections.abc import Iterable

TRIGGERS = "=+-@\t\r\0"
"""First characters that make a spreadsheet treat a cell as a formula."""
QUOTE = "'"
_FIRST = frozenset(TRIGGERS + QUOTE)
_ESCAPE = re.compile(f"'*[{re.escape(TRIGGERS)}]")
"""Text that needs the quote: any number of quotes (maybe none), then a trigger."""
_ESCAPED = re.compile(f"'+[{re.escape(TRIGGERS)}]")
"""Text written with the quote: at least one quote, then a trigger."""
_NEEDS_QUOTES = re.compile('[,";\t\r\n]')


def escape(text: str) -> str:
    """``text`` with a quote in front when it is (quotes then) a formula trigger."""
    if text[:1] in _FIRST and _ESCAPE.match(text):
        return QUOTE + text
    return text


def unescape(text: str) -> str:
    """The text :func:`escape` was given: one leading quote removed from quotes-then-trigger."""
    if text[:1] == QUOTE and _ESCAPED.match(text):
        return text[1:]
    return text


def cell(value: object) -> str:
    """One cell's text before quoting: None empty, a finite number as is, else escaped text."""
    kind = value.__class__
    if kind is str:
        return escape(value)  # type: ignore[arg-type]
    if value is None:
        return ""
    if kind is int or (
        isinstance(value, numbers.Real) and kind is not bool and math.isfinite(value)
    ):
        return str(value)
    return escape(str(value))


def csv_line(cells: Iterable[object]) -> str:
    """One CSV row ending in ``\\n``, cells quoted where needed; a lone empty cell is ``""``."""
    texts = [cell(value) for value in cells]
    texts = ['"' + t.replace('"', '""') + '"' if _NEEDS_QUOTES.search(t) else t for t in texts]
    return '""\n' if texts == [""] else ",".join(texts) + "\n"
