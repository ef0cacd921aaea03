"""HTTP ``Range: bytes=...`` parsing (RFC 9110 §14), so browsers can seek in videos."""

import re
from dataclasses import dataclass


class UnsatisfiableRange(ValueError):
    """The range lies wholly outside the file: answer 416 with ``Content-Range: */size``."""


@dataclass(frozen=True)
class ByteRange:
    """An inclusive byte range ``first..last`` of a file of ``size`` bytes."""

    first: int
    last: int
    size: int

    @property
    def length(self) -> int:
        return self.last - self.first + 1

    @property
    def content_range(self) -> str:
        return f"bytes {self.first}-{self.last}/{self.size}"


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The single range a ``Range`` header asks for (ASCII digits only, RFC 9110 §14.1.1), or
    None to send the whole file (malformed, other units, multi-range); a range from past the
    end or an empty suffix raises :class:`UnsatisfiableRange`."""
    if not header:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes":
        return None
    match = _RANGE_SPEC.fullmatch(spec.strip())
    if match is None:
        return None
    first_text, last_text, suffix_text = match.groups()
    if suffix_text is not None:
        # Suffix range: the last N bytes.
        if not suffix_text.strip("0"):
            raise UnsatisfiableRange(header)
        if size == 0:
            return None  # satisfiable (RFC 9110 §14.1.1) but no byte to name: the empty file
        first, last = size - _position(suffix_text, size), size - 1
    else:
        if last_text and _magnitude(last_text) < _magnitude(first_text):
            return None
        first = _position(first_text, size)
        last = _position(last_text, size) if last_text else size - 1
    if first >= size:
        raise UnsatisfiableRange(header)
    return ByteRange(first, min(last, size - 1), size)


_RANGE_SPEC = re.compile(r"([0-9]+)-([0-9]*)|-([0-9]+)", re.ASCII)
"""``int-range`` (``first-pos "-" [ last-pos ]``) or ``suffix-range`` (``"-" suffix-length``)."""


def _magnitude(digits: str) -> tuple[int, str]:
    """A key ordering digit strings by the number they spell, however long."""
    significant = digits.lstrip("0")
    return len(significant), significant


def _position(digits: str, size: int) -> int:
    """A byte position or suffix length, capped at ``size`` (``int`` refuses over 4,300 digits)."""
    if _magnitude(digits) > _magnitude(str(size)):
        return size
    return int(digits)
