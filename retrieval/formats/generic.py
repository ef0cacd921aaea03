"""The project's own caption formats: JSON Lines and CSV with the same columns.

Required: ``video_id``, ``caption_id``, ``caption`` and ``split`` (may be empty, for
``--split`` to fill). Optional: ``video_path`` (relative to the videos directory),
``video_url``, ``start``, ``end``, ``duration`` (seconds), ``is_query``, ``verb_classes`` and
``noun_classes`` (``3 10`` or ``[3, 10]``). Other columns are ignored; blank lines skipped.
"""

import csv
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path

from config.text_rule import text_problem
from retrieval.formats.csv_safety import unescape
from retrieval.formats.records import (
    URL_MAX_LENGTH,
    CaptionRecord,
    FormatError,
    check_clip,
    field_reader,
    json_type,
    loads_json,
    parse_bool,
    parse_class_ids,
    parse_key,
    parse_optional_str,
    parse_relative_path,
    parse_seconds,
    parse_split,
    parse_text,
    read_lines,
)

REQUIRED = ("video_id", "caption_id", "caption", "split")
CLASS_FIELDS = ("verb_classes", "noun_classes")
_parse_url = partial(parse_optional_str, max_length=URL_MAX_LENGTH)
"""An optional URL, bounded by the length Video.url stores."""


def parse_jsonl(path: Path) -> Iterator[CaptionRecord]:
    """Yield one record per non-blank line, each a JSON object."""
    for line, values in json_objects(path, REQUIRED):
        yield _record(path, line, values)


def parse_csv(path: Path) -> Iterator[CaptionRecord]:
    """Yield one record per data row of a CSV file whose first row names the columns."""
    for line, values in csv_rows(path, REQUIRED):
        yield _record(path, line, values)


def json_objects(path: Path, required: Sequence[str]) -> Iterator[tuple[int, dict]]:
    """Yield ``(line, object)`` for each non-blank line of a JSON Lines file, each a JSON
    object holding every ``required`` key (the JSON Lines side of :func:`csv_rows`)."""
    for line, text in read_lines(path):
        if not text.strip():
            continue
        values = loads_json(path, line, text.rstrip("\r\n"))  # columns count in the line
        if not isinstance(values, dict):
            raise FormatError(path, line, None, f"expected a JSON object, got {json_type(values)}")
        for name in required:
            if name not in values:
                raise FormatError(path, line, name, "missing required field")
        yield line, values


def csv_objects(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, object]]]:
    """:func:`csv_rows` with blank cells as None, as a JSON object would leave the key out."""
    for line, values in csv_rows(path, required):
        yield line, {name: (value if value.strip() else None) for name, value in values.items()}


def text_field(text: str, what: str, max_length: int, lines: bool = False) -> str:
    """``text`` if the text rule (:mod:`config.text_rule`) takes it as the ``what`` of a row,
    else ValueError naming it."""
    problem = text_problem(text, max_length, lines=lines)
    if problem is not None:
        raise ValueError(f"the {what} {problem}")
    return text


def csv_rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line, {column: value})`` for each non-blank data row of a CSV file whose
    header names every ``required`` column; ``line`` is the row's first physical line. Cells
    are :func:`~retrieval.formats.csv_safety.unescape`\\ d, undoing the formula escape."""
    reader = csv.reader(text for _, text in read_lines(path))
    try:
        header = next(reader, None)
        if header is None:
            raise FormatError(path, None, None, "empty file: expected a header row")
        columns = [name.strip() for name in header]
        seen: set[str] = set()
        for name in columns:
            if name in seen:
                raise FormatError(path, 1, name, "column appears twice in the header")
            seen.add(name)
        for name in required:
            if name not in seen:
                raise FormatError(path, 1, name, "missing required column")
        line = reader.line_num + 1
        for row in reader:
            if row and any(cell.strip() for cell in row):
                if len(row) != len(columns):
                    raise FormatError(
                        path, line, None, f"expected {len(columns)} cells, found {len(row)}"
                    )
                yield line, dict(zip(columns, map(unescape, row), strict=True))
            line = reader.line_num + 1
    except csv.Error as exc:
        raise FormatError(path, reader.line_num or None, None, f"invalid CSV: {exc}") from None


def _record(path: Path, line: int, values: Mapping[str, object]) -> CaptionRecord:
    """Validate one row's values (JSON-typed or CSV strings) into a record."""
    read = field_reader(path, line, values)
    video_key, caption_key = read("video_id", parse_key), read("caption_id", parse_key)
    text, split = read("caption", parse_text), read("split", parse_split)
    video_path = read("video_path", parse_relative_path)
    video_url = read("video_url", _parse_url)
    start, end = read("start", parse_seconds), read("end", parse_seconds)
    check_clip(path, line, start, end)
    duration = read("duration", parse_seconds)
    if duration == 0:
        raise FormatError(path, line, "duration", "duration must be positive")
    is_query = read("is_query", parse_bool)
    metadata = {
        name: read(name, parse_class_ids)
        for name in CLASS_FIELDS
        if values.get(name) not in (None, "")
    }
    return CaptionRecord(
        video_key=video_key,
        caption_key=caption_key,
        text=text,
        split=split,
        is_query=is_query,
        video_path=video_path,
        video_url=video_url,
        start=start,
        end=end,
        duration=duration,
        metadata=metadata,
        line=line,
    )
