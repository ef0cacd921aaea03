"""Pure: gold pair files (CSV or JSON lines) and the admin-only gold export.

A gold file lists ``caption_key``, ``video_key``, ``label`` (``relevant`` or ``irrelevant``),
``explanation`` and optionally ``guideline``; other columns are ignored, so the export reads
back as a gold file. Readers raise :class:`~retrieval.formats.records.FormatError` naming
the file, line and field; writers yield complete lines.
"""

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.formats.csv_safety import csv_line
from retrieval.formats.generic import csv_objects, json_objects, text_field
from retrieval.formats.labels import parse_raw_label
from retrieval.formats.records import FormatError, parse_field, parse_key, parse_optional_str
from retrieval.label_sets.judged import LABEL_NAMES

FORMATS = ("csv", "jsonl")
SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}
"""The format a gold file's name implies (the upload's stored copy keeps it)."""
REQUIRED = ("caption_key", "video_key", "label", "explanation")
TEXT_LENGTH = 2000
"""Longest explanation or guideline of a gold pair (as the promote form's)."""
EXPORT_JUDGEMENT_COLUMNS = (
    "annotator",
    "answer",
    "correct",
    "seconds",
    "judged_at",
    "purpose",
    "attempt",
)
EXPORT_PAIR_COLUMNS = (
    "caption_key",
    "video_key",
    "caption",
    "label",
    "explanation",
    "guideline",
    "source",
    "created_by",
    "created_at",
)
EXPORT_COLUMNS = (*EXPORT_PAIR_COLUMNS, *EXPORT_JUDGEMENT_COLUMNS)


@dataclass(frozen=True, slots=True)
class GoldRecord:
    """One gold pair as read from a file; ``label`` is 1 (relevant) or 0 (irrelevant)."""

    caption_key: str
    video_key: str
    label: int
    explanation: str
    guideline: str = ""
    line: int = field(default=0, compare=False)


def read_gold(path: Path, fmt: str | None = None) -> Iterator[GoldRecord]:
    """Yield one record per data row (CSV) or non-blank line (JSONL); a pair may appear once."""
    path = Path(path)
    fmt = SUFFIXES.get(path.suffix.lower()) if fmt is None else fmt
    if fmt is None:
        raise FormatError(
            path, None, None, "cannot tell the format from the name: use .csv or .jsonl"
        )
    if fmt not in FORMATS:
        raise FormatError(path, None, None, f"unknown gold file format {fmt!r}")
    rows = csv_objects(path, REQUIRED) if fmt == "csv" else json_objects(path, REQUIRED)
    seen: dict[tuple[str, str], int] = {}
    for line, values in rows:
        record = GoldRecord(
            caption_key=parse_field(path, line, "caption_key", parse_key, values["caption_key"]),
            video_key=parse_field(path, line, "video_key", parse_key, values["video_key"]),
            label=parse_field(path, line, "label", parse_raw_label, values["label"]),
            explanation=parse_field(
                path, line, "explanation", _parse_explanation, values["explanation"]
            ),
            guideline=parse_field(
                path, line, "guideline", _parse_guideline, values.get("guideline")
            ),
            line=line,
        )
        pair = (record.caption_key, record.video_key)
        if pair in seen:
            raise FormatError(
                path, line, "video_key", f"pair {pair!r} is already listed on line {seen[pair]}"
            )
        seen[pair] = line
        yield record
    if not seen:
        raise FormatError(path, None, None, "no gold pairs in the file")


def _parse_explanation(value: object) -> str:
    text = parse_optional_str(value)
    if not text:
        raise ValueError("a gold pair needs an explanation")
    return text_field(text, "explanation", TEXT_LENGTH, lines=True)


def _parse_guideline(value: object) -> str:
    return text_field(parse_optional_str(value), "guideline", TEXT_LENGTH)


# The gold template: decided pairs, as a gold file to edit and import.

TEMPLATE_COLUMNS = ("caption_key", "video_key", "caption", "label", "explanation", "guideline")


@dataclass(frozen=True, slots=True)
class GoldTemplateRow:
    """A decided pair that is not gold yet, with its settled label (1 or 0) and the
    explanation promoting it would give; ``caption`` is there to read, and ignored on import."""

    caption_key: str
    video_key: str
    caption: str
    label: int
    explanation: str


def gold_template_lines(rows: Iterable[GoldTemplateRow]) -> Iterator[str]:
    """A gold CSV file of ``rows`` that :func:`read_gold` reads back as it is, with an empty
    ``guideline`` for the admin to fill."""
    yield csv_line(TEMPLATE_COLUMNS)
    for row in rows:
        yield csv_line(
            [
                row.caption_key,
                row.video_key,
                row.caption,
                LABEL_NAMES[row.label],
                row.explanation,
                "",
            ]
        )


# The gold export: every gold pair with every answer given on it.


@dataclass(frozen=True, slots=True)
class GoldAnswer:
    """One annotator's answer on a gold pair (1 relevant, 0 irrelevant)."""

    annotator: str
    label: int
    seconds: float | None
    judged_at: str
    purpose: str
    attempt: int | None


@dataclass(frozen=True, slots=True)
class GoldExportRow:
    """A gold pair with its answers, as the gold export writes it."""

    caption_key: str
    video_key: str
    caption: str
    label: int
    explanation: str
    guideline: str
    source: str
    created_by: str
    created_at: str
    answers: tuple[GoldAnswer, ...] = ()


def _pair_values(row: GoldExportRow) -> dict[str, object]:
    """The gold pair's export columns, its label by name."""
    return {name: getattr(row, name) for name in EXPORT_PAIR_COLUMNS} | {
        "label": LABEL_NAMES[row.label]
    }


def _answer_values(row: GoldExportRow, answer: GoldAnswer) -> dict[str, object]:
    """One answer's export values in :data:`EXPORT_JUDGEMENT_COLUMNS`' order, its label by name
    (the JSON's ``label``, the CSV's ``answer``)."""
    return {
        "annotator": answer.annotator,
        "label": LABEL_NAMES[answer.label],
        "correct": answer.label == row.label,
        "seconds": answer.seconds,
        "judged_at": answer.judged_at,
        "purpose": answer.purpose,
        "attempt": answer.attempt,
    }


def gold_jsonl_lines(rows: Iterable[GoldExportRow]) -> Iterator[str]:
    """One JSON line per gold pair, its answers in a ``judgements`` list."""
    for row in rows:
        answers = [_answer_values(row, answer) for answer in row.answers]
        yield json.dumps(_pair_values(row) | {"judgements": answers}, ensure_ascii=False) + "\n"


def gold_csv_lines(rows: Iterable[GoldExportRow]) -> Iterator[str]:
    """A header, then one row per answer (the gold pair's columns repeated; one row with empty
    answer columns when nobody answered), formula cells neutralised (:mod:`retrieval.formats.csv_safety`)."""
    yield csv_line(EXPORT_COLUMNS)
    for row in rows:
        pair = list(_pair_values(row).values())
        if not row.answers:
            yield csv_line([*pair, *([""] * len(EXPORT_JUDGEMENT_COLUMNS))])
        for answer in row.answers:
            yield csv_line([*pair, *map(_cell, _answer_values(row, answer).values())])


def _cell(value: object) -> object:
    """A CSV cell: flags as ``true`` or ``false``, None empty."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else value
