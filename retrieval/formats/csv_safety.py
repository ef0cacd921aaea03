"""Pure: CSV lines that are safe to open in a spreadsheet, and the reading that undoes them.

Spreadsheets (Excel, LibreOffice Calc, Google Sheets) run a cell that starts with ``=``,
``+``, ``-``, ``@``, a tab or a carriage return as a formula, so a run named
``=HYPERLINK("http://x","y")`` would become a live link in every exported file ("CSV
Injection", OWASP; ASVS 5.0 V1.2.10, which adds the NUL character). Every CSV firepool writes
goes through :func:`csv_line`, which follows OWASP's advice:

- a **text** cell whose first character is one of :data:`TRIGGERS` gets a single quote
  prefixed, which spreadsheets read as "this cell is text" and do not show;
- a **number** (a Python ``int`` or a finite ``float``, numpy's included) is written as it
  is: ``-0.5`` must stay a number a spreadsheet can sum. The writer tells numbers from text
  by their type, never by their look, because a name such as ``-1+2`` or ``+1`` is text that
  Excel would evaluate. Callers therefore pass numbers as numbers, not preformatted
  strings; an infinite float is written as text (``'-inf``), since Excel reads ``-inf`` as a
  formula too;
- a cell is quoted (RFC 4180 §2.6-2.7) when it holds a comma, a double quote, a line break,
  a semicolon or a tab: a spreadsheet that splits on ``;`` (many locales) or on tabs would
  otherwise start a new cell in the middle of the text, where a formula could begin (OWASP
  names the separators as the second half of the defence).

The files firepool reads back (label CSVs, gold CSVs) must come back as they were, so the
escape is reversible: :func:`escape` prefixes the quote exactly when the text is some
quotes followed by a trigger (so a caption that really starts with ``'=`` is written
``''=`` and not confused with an escaped ``=``), and :func:`unescape`, which
:func:`retrieval.formats.generic.csv_rows` applies to every cell it reads, removes one
quote exactly from such cells. ``unescape(escape(s)) == s`` for every string; a file saved
back by a spreadsheet (which drops the quote) reads the same. The only text read
differently from before is a hand-made cell of quotes then a trigger (``'=x``), which is
rare and loses its first quote.

TREC run and qrels files, JSON Lines and FIRE JSON are not spreadsheet formats (whitespace-
separated or JSON, read by programs) and are written verbatim, so their keys round-trip
byte for byte.
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
    """``text`` with a single quote in front when a spreadsheet would run it as a formula
    (or when it already starts with quotes and a trigger, so that :func:`unescape` can tell
    the two apart)."""
    if text[:1] in _FIRST and _ESCAPE.match(text):
        return QUOTE + text
    return text


def unescape(text: str) -> str:
    """The text :func:`escape` was given: one leading quote removed from quotes-then-trigger."""
    if text[:1] == QUOTE and _ESCAPED.match(text):
        return text[1:]
    return text


def cell(value: object) -> str:
    """One cell's text before CSV quoting: None is empty, a finite number as Python writes
    it, anything else as escaped text."""
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
    """One CSV row ending in ``\\n``: each value through :func:`cell`, quoted where needed.

    A row of one empty cell is written ``""`` so that it is not a blank line.
    """
    texts = []
    for value in cells:
        text = cell(value)
        if _NEEDS_QUOTES.search(text):
            text = '"' + text.replace('"', '""') + '"'
        texts.append(text)
    if texts == [""]:
        return '""\n'
    return ",".join(texts) + "\n"
