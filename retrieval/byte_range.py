"""HTTP ``Range: bytes=...`` parsing (RFC 9110 §14), so browsers can seek in videos."""

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
    """Return the single range a ``Range`` header asks for, or None to send the whole file.

    Malformed headers, other units and multi-range requests are ignored (None), as the RFC
    allows; a syntactically valid range that starts beyond the end raises
    :class:`UnsatisfiableRange`.
    """
    if not header:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first_text, dash, last_text = spec.strip().partition("-")
    if not dash:
        return None
    first_text, last_text = first_text.strip(), last_text.strip()
    try:
        if first_text == "":
            # Suffix range: the last N bytes.
            suffix = int(last_text)
            first, last = max(size - suffix, 0), size - 1
        else:
            first = int(first_text)
            last = int(last_text) if last_text else size - 1
    except ValueError:
        return None
    if first_text == "" and last_text.isdigit() and int(last_text) == 0:
        raise UnsatisfiableRange(header)
    if first < 0 or (last_text and last < first):
        return None
    if first >= size:
        raise UnsatisfiableRange(header)
    return ByteRange(first, min(last, size - 1), size)
