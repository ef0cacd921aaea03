"""What every caption-file parser yields, the error it raises, and the field parsers they share.

Parsers are pure generators of :class:`CaptionRecord`; they never touch the ORM. Anything
wrong with a file is a :class:`FormatError` that names the file, the position and the field,
so a user can fix the file without a traceback.
"""

import ast
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TypeVar

KEY_MAX_LENGTH = 255
SPLIT_MAX_LENGTH = 32
URL_MAX_LENGTH = 1000

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class CaptionRecord:
    """One caption and the video (or clip) it was written for, as read from a file.

    ``metadata`` goes to the caption (e.g. verb and noun classes), ``video_metadata`` to the
    video (e.g. an MSR-VTT category). ``media_key`` names the media file when it is not the
    video's own key: an EPIC-KITCHENS clip plays from its parent video. ``line`` is the
    record's position in the file (a line number, or an array index for JSON documents).
    """

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


class FormatError(Exception):
    """A problem in an input file, located by path, position and field.

    ``where`` renders the position; it is ``"line {}"`` for line-based files and e.g.
    ``"sentences[{}]"`` for an entry of a JSON array.
    """

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


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` from a UTF-8 file, decoding line by line.

    Decoding each line on its own lets a stray byte be reported with its line number; a
    leading byte-order mark is dropped.
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise FormatError(path, None, None, exc.strerror or str(exc)) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FormatError(
                    path, number, None, f"invalid UTF-8 at byte {exc.start + 1} of the line"
                ) from None
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield number, text


def read_bytes(path: Path) -> bytes:
    """Read a whole file, turning OS errors into a :class:`FormatError`."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FormatError(path, None, None, exc.strerror or str(exc)) from None


def decode_utf8(path: Path, data: bytes) -> str:
    """Decode a whole file as UTF-8, reporting the line of the first bad byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(path, line, None, "invalid UTF-8") from None
    return text.removeprefix("\ufeff")


def read_json_document(path: Path) -> object:
    """Parse a whole UTF-8 JSON file; a syntax error is reported with its line and column."""
    text = decode_utf8(path, read_bytes(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(
            path, exc.lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None


# Field parsers: each takes a raw value (a JSON value or a CSV string) and returns the
# parsed value or raises ValueError with a message; callers add path, line and field.


def parse_key(value: object) -> str:
    """A non-empty identifier; JSON integers are accepted and turned into strings."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"expected a string, got {json_type(value)}")
    text = str(value).strip()
    if not text:
        raise ValueError("empty key")
    if len(text) > KEY_MAX_LENGTH:
        raise ValueError(f"key longer than {KEY_MAX_LENGTH} characters")
    return text


def parse_text(value: object) -> str:
    """Caption text: a string that is not blank."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {json_type(value)}")
    text = value.strip()
    if not text:
        raise ValueError("empty caption")
    return text


def parse_optional_str(value: object, max_length: int | None = None) -> str:
    """A string that may be missing (None or empty); surrounding blanks are dropped."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {json_type(value)}")
    text = value.strip()
    if max_length is not None and len(text) > max_length:
        raise ValueError(f"longer than {max_length} characters")
    return text


def parse_split(value: object) -> str:
    """A split name such as ``train`` or ``test``; empty means "not given"."""
    return parse_optional_str(value, SPLIT_MAX_LENGTH)


def parse_seconds(value: object) -> float | None:
    """A finite, non-negative number of seconds; None or an empty string means "not given"."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {json_type(value)}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise ValueError(f"not a number: {value.strip()!r}") from None
    else:
        raise ValueError(f"expected a number, got {json_type(value)}")
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    if number < 0:
        raise ValueError(f"negative time: {number:g}")
    return number


_TIMESTAMP = re.compile(r"(\d+):([0-5]?\d):([0-5]?\d(?:\.\d+)?)")


def parse_timestamp(value: object) -> float | None:
    """An ``HH:MM:SS.ff`` timestamp in seconds; empty means "not given"."""
    text = parse_optional_str(value)
    if not text:
        return None
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        raise ValueError(f"expected HH:MM:SS.ff, got {text!r}")
    hours, minutes, seconds = match.groups()
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
    """An integer, from JSON or from a CSV string."""
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {json_type(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError(f"not an integer: {value.strip()!r}") from None
    raise ValueError(f"expected an integer, got {json_type(value)}")


def parse_class_ids(value: object) -> list[int]:
    """Class ids given as a JSON list, a ``"[3, 10]"`` string or a ``"3 10"`` string."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                raise ValueError(f"not a list of class ids: {text!r}") from None
        else:
            value = text.replace(",", " ").split()
    if not isinstance(value, list):
        raise ValueError(f"expected a list of class ids, got {json_type(value)}")
    try:
        return [parse_int(item) for item in value]
    except ValueError:
        raise ValueError(f"not a list of class ids: {value!r}") from None


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
    return list(value)


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


def json_type(value: object) -> str:
    """Name a value's type the way JSON would, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


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


def check_clip(
    path: Path, line: int, start: float | None, end: float | None, **kwargs: str
) -> None:
    """Reject a clip whose end is not after its start."""
    if start is not None and end is not None and end <= start:
        raise FormatError(path, line, "end", f"end {end:g} is not after start {start:g}", **kwargs)
