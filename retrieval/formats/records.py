"""What every caption-file parser yields, the error it raises (naming file, position and
field, so a user can fix the file without a traceback) and the field parsers they share."""

import ast
import json
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import TypeVar

from config.errors import UserError

KEY_MAX_LENGTH = 255
SPLIT_MAX_LENGTH = 32
URL_MAX_LENGTH = 1000
DEFAULT_MAX_UPLOAD_BYTES = 2 * 1024**3
"""Size limit of an imported file when Django's settings do not set FIREPOOL_MAX_UPLOAD_BYTES."""
MAX_LINE_BYTES = 16 * 1024**2
"""Longest line a line-based file may have; longer means a binary or mangled file."""
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class CaptionRecord:
    """One caption and its video (or clip); ``metadata`` goes to the caption,
    ``video_metadata`` to the video, ``media_key`` names the media file when it is not the
    video's own (an EPIC clip plays from its parent video); ``line`` is a line number or
    array index."""

    video_key: str
    caption_key: str
    text: str
    split: str = ""
    is_query: bool | None = None
    video_path: str = ""
    video_url: str = ""
    start: float | None = None
    end: float | None = None
    duration: float | None = None
    metadata: dict = field(default_factory=dict)
    video_metadata: dict = field(default_factory=dict)
    media_key: str = ""
    line: int = 0


class FormatError(UserError):
    """A problem in an input file, located by path, position (rendered by ``where``:
    ``"line {}"``, or e.g. ``"sentences[{}]"`` for a JSON array entry) and field."""

    def __init__(
        self,
        path: Path | str,
        line: int | None,
        field: str | None,
        message: str,
        *,
        where: str = "line {}",
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        self.where = where
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [str(self.path)]
        if self.line is not None:
            parts.append(self.where.format(self.line))
        if self.field:
            parts.append(f"field {self.field!r}")
        return f"{', '.join(parts)}: {self.message}"


def environment_upload_limit() -> int:
    """``FIREPOOL_MAX_UPLOAD_BYTES`` from the environment, or the default."""
    return int(os.environ.get("FIREPOOL_MAX_UPLOAD_BYTES", DEFAULT_MAX_UPLOAD_BYTES))


_upload_limit: Callable[[], int] = environment_upload_limit


def read_upload_limit_from(source: Callable[[], int]) -> None:
    """Make ``source`` what :func:`max_upload_bytes` asks: the retrieval app installs one
    reading Django's settings, so this module stays free of Django."""
    global _upload_limit
    _upload_limit = source


def max_upload_bytes() -> int:
    """The size limit of imported files (``FIREPOOL_MAX_UPLOAD_BYTES``), read at call time."""
    return int(_upload_limit())


@contextmanager
def _os_errors(path: Path | str) -> Iterator[None]:
    """Turn an OS error met while reading ``path`` into a FormatError naming it."""
    try:
        yield
    except OSError as exc:
        raise FormatError(path, None, None, exc.strerror or str(exc)) from None


def check_size(path: Path | str, *, name: Path | str | None = None) -> int:
    """The file's size, or a FormatError (naming it ``name``, default the path) if it is
    missing or over the limit: an oversized upload is refused before it is read."""
    shown = path if name is None else name
    with _os_errors(shown):
        return check_size_of(os.stat(path).st_size, shown)


def check_size_of(size: int, name: Path | str) -> int:
    """``size``, or a FormatError naming the file ``name`` when it is over the upload limit."""
    limit = max_upload_bytes()
    if size > limit:
        message = f"file is {size:,} bytes, over the limit of {limit:,} bytes"
        raise FormatError(name, None, None, message + " (FIREPOOL_MAX_UPLOAD_BYTES)")
    return size


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` from a UTF-8 file, decoded line by line so that a stray
    byte is reported with its line; a leading BOM is dropped. NUL bytes and lines over
    :data:`MAX_LINE_BYTES` (binary and UTF-16 files have them) are errors."""
    check_size(path)
    with _os_errors(path), open(path, "rb") as handle:
        lines = iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b"")
        for number, raw in enumerate(lines, start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise FormatError(path, number, None, f"line longer than {MAX_LINE_BYTES:,} bytes")
            nul = raw.find(b"\x00")
            if nul >= 0:
                raise FormatError(path, number, None, _nul_message(nul))
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FormatError(
                    path, number, None, f"invalid UTF-8 at byte {exc.start + 1} of the line"
                ) from None
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield number, text


def _nul_message(offset: int) -> str:
    return f"NUL byte at byte {offset + 1} of the line (a binary or UTF-16 file?)"


class DuplicateKeyError(UserError):
    """A JSON object names the same key twice (json.loads would silently keep the last)."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"key {key!r} appears twice in one object")


def _unique_object(pairs: list[tuple[str, object]]) -> dict:
    """``object_pairs_hook`` for json.loads that rejects repeated keys."""
    values: dict = {}
    for key, value in pairs:
        if key in values:
            raise DuplicateKeyError(key)
        values[key] = value
    return values


def loads_json(path: Path | str, line: int | None, text: str) -> object:
    """Parse JSON text; every failure (syntax, repeated keys, deep nesting, huge integers)
    is a FormatError at ``line``, or for a whole document (None) at the error's own line."""
    try:
        return json.loads(text, object_pairs_hook=_unique_object)
    except json.JSONDecodeError as exc:
        where = exc.lineno if line is None else line
        raise FormatError(
            path, where, None, f"invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None
    except DuplicateKeyError as exc:
        raise FormatError(path, line, exc.key, "field appears twice in one JSON object") from None
    except RecursionError:
        raise FormatError(path, line, None, "invalid JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal with more than 4300 digits
        raise FormatError(path, line, None, f"invalid JSON: {exc}") from None


def read_json_document(path: Path) -> object:
    """Parse a whole UTF-8 JSON file after checking its size; a syntax error is reported
    with its line and column, a bad or NUL byte with its line."""
    check_size(path)
    with _os_errors(path):
        data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(path, line, None, "invalid UTF-8") from None
    nul = data.find(b"\x00")
    if nul >= 0:
        line_start = data.rfind(b"\n", 0, nul) + 1
        line = data.count(b"\n", 0, nul) + 1
        raise FormatError(path, line, None, _nul_message(nul - line_start))
    return loads_json(path, None, text.removeprefix("\ufeff"))


# Field parsers: each takes a raw value (a JSON value or a CSV string) and returns the
# parsed value or raises ValueError with a message; callers add path, line and field.


def check_chars(text: str) -> str:
    """Reject NUL (PostgreSQL refuses it) and lone surrogates (no database encodes them),
    which JSON escapes can smuggle past UTF-8 decoding."""
    if "\x00" in text:
        raise ValueError("contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"contains an unpaired surrogate (U+{ord(text[exc.start]):04X})") from None
    return text


def parse_key(value: object) -> str:
    """A non-empty identifier; JSON integers are accepted and turned into strings."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"expected a string, got {json_type(value)}")
    if isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
        raise ValueError("integer key out of range")
    text = check_chars(str(value).strip())
    if not text:
        raise ValueError("empty key")
    if len(text) > KEY_MAX_LENGTH:
        raise ValueError(f"key longer than {KEY_MAX_LENGTH} characters")
    return text


def parse_text(value: object) -> str:
    """Caption text: a string that is not blank."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {json_type(value)}")
    text = check_chars(value.strip())
    if not text:
        raise ValueError("empty caption")
    return text


def parse_optional_str(value: object, max_length: int | None = None) -> str:
    """A string that may be missing (None or empty); surrounding blanks are dropped."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {json_type(value)}")
    text = check_chars(value.strip())
    if max_length is not None and len(text) > max_length:
        raise ValueError(f"longer than {max_length} characters")
    return text


parse_split = partial(parse_optional_str, max_length=SPLIT_MAX_LENGTH)
"""A split name such as ``train`` or ``test``; empty means "not given"."""


def parse_seconds(value: object) -> float | None:
    """A finite, non-negative number of seconds; None or an empty string means "not given"."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected a number, got {json_type(value)}")
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise ValueError(f"not a number: {value.strip()!r}") from None
    else:
        try:
            number = float(value)
        except OverflowError:
            raise ValueError(f"number out of range: {value:.20}...") from None
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    if number < 0:
        raise ValueError(f"negative time: {number:g}")
    return number


_TIMESTAMP = re.compile(r"(\d+):([0-5]?\d):([0-5]?\d(?:\.\d+)?)")


def parse_probability(value: object) -> float | None:
    """A probability in [0, 1]; None or an empty string means "not given"."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"expected a number, got {json_type(value)}") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"a probability lies between 0 and 1, got {value!r}")
    return number


def parse_timestamp(value: object) -> float | None:
    """An ``HH:MM:SS.ff`` timestamp in seconds; empty means "not given"."""
    text = parse_optional_str(value)
    if not text:
        return None
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        raise ValueError(f"expected HH:MM:SS.ff, got {text!r}")
    hours, minutes, seconds = match.groups()
    if len(hours) > 9:
        raise ValueError(f"timestamp out of range: {text[:40]!r}")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f"}


def parse_bool(value: object) -> bool | None:
    """A JSON boolean, or one of 1/0, true/false, yes/no in CSV; empty means "not given"."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if not text:
            return None
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValueError(f"expected true or false, got {value.strip()!r}")
    raise ValueError(f"expected true or false, got {json_type(value)}")


def parse_int(value: object) -> int:
    """A signed 64-bit integer, from JSON or from a CSV string."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"expected an integer, got {json_type(value)}")
    number = value
    if isinstance(value, str):
        text = value.strip()
        if len(text) > 40:
            raise ValueError(f"not an integer: {text[:40]!r}...")
        try:
            number = int(text)
        except ValueError:
            raise ValueError(f"not an integer: {text!r}") from None
    if not INT_MIN <= number <= INT_MAX:
        raise ValueError("integer out of range (more than 64 bits)")
    return number


def parse_class_ids(value: object) -> list[int]:
    """Class ids given as a JSON list, a ``"[3, 10]"`` string or a ``"3 10"`` string."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                raise ValueError(f"not a list of class ids: {text[:80]!r}") from None
        else:
            value = text.replace(",", " ").split()
    if not isinstance(value, list):
        raise ValueError(f"expected a list of class ids, got {json_type(value)}")
    try:
        return [parse_int(item) for item in value]
    except ValueError:
        raise ValueError(f"not a list of class ids: {value!r:.80}") from None


def parse_str_list(value: object) -> list[str]:
    """A list of strings written as a JSON or Python literal (``"['tap', 'water']"``)."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        if len(text) > 10_000:
            raise ValueError("list of strings longer than 10,000 characters")
        try:
            value = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(f"not a list of strings: {text[:80]!r}") from None
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"not a list of strings: {value!r:.80}")
    return [check_chars(item) for item in value]


def parse_list(
    value: object, parse: Callable[[object], T], expected: str = "a list"
) -> tuple[T, ...]:
    """Each item of a JSON list (missing: none) through ``parse``, naming a bad item's position."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError(f"expected {expected}, got {json_type(value)}")
    items = []
    for position, item in enumerate(value):
        try:
            items.append(parse(item))
        except ValueError as exc:
            raise ValueError(f"item {position}: {exc}") from None
    return tuple(items)


def parse_relative_path(value: object) -> str:
    """A relative POSIX path that cannot leave its base directory (no ``..``, not absolute)."""
    text = parse_optional_str(value)
    if not text:
        return ""
    if "\\" in text or "\x00" in text:
        raise ValueError(f"not a plain relative path: {text!r}")
    path = PurePosixPath(text)
    if path.is_absolute() or ".." in path.parts:
        raise ValueError(f"path escapes the videos directory: {text!r}")
    return path.as_posix()


_JSON_TYPES = (
    (type(None), "null"),
    (bool, "a boolean"),
    (int | float, "a number"),
    (str, "a string"),
    (list, "a list"),
    (dict, "an object"),
)


def json_type(value: object) -> str:
    """Name a value's type the way JSON would, for error messages."""
    kinds = (name for kind, name in _JSON_TYPES if isinstance(value, kind))
    return next(kinds, type(value).__name__)


def parse_field(
    path: Path,
    line: int | None,
    name: str,
    parse: Callable[[object], T],
    value: object,
    **kwargs: str,
) -> T:
    """Run a field parser, turning its ValueError into a :class:`FormatError` for that field."""
    try:
        return parse(value)
    except ValueError as exc:
        raise FormatError(path, line, name, str(exc), **kwargs) from None


def entry_reader(
    path: Path, index: int, value: object, required: tuple[str, ...], *, where: str
) -> Callable[[str, Callable[[object], T]], T]:
    """The :func:`field_reader` of ``value``, an entry of a JSON array, if it is an object
    holding every ``required`` field; else a :class:`FormatError` at ``where``."""
    if not isinstance(value, dict):
        message = f"expected an object, got {json_type(value)}"
        raise FormatError(path, index, None, message, where=where)
    for name in required:
        if name not in value:
            raise FormatError(path, index, name, "missing required field", where=where)
    return field_reader(path, index, value, where=where)


def field_reader(
    path: Path, line: int | None, values: Mapping[str, object], **kwargs: str
) -> Callable[[str, Callable[[object], T]], T]:
    """A function that parses field ``name`` of ``values`` with ``parse`` (:func:`parse_field`)."""

    def read(name: str, parse: Callable[[object], T]) -> T:
        return parse_field(path, line, name, parse, values.get(name), **kwargs)

    return read


def check_clip(
    path: Path, line: int, start: float | None, end: float | None, name: str = "end", **kwargs: str
) -> None:
    """Reject a clip whose end (field ``name``) is not after its start."""
    if start is not None and end is not None and end <= start:
        raise FormatError(path, line, name, f"end {end:g} is not after start {start:g}", **kwargs)
