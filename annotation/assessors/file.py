"""Pure: files of machine judgements (a vision-language model's, run elsewhere), CSV or JSON lines.

One judgement per CSV row or JSON line, with these columns (CSV, a header row naming them)
or keys (JSONL, one object a line):

- ``caption``: the caption's key as the dataset names it (with ``video``, a pair pooled in
  the campaign or one of its gold pairs: the import tells which);
- ``video``: the video's key;
- ``assessor``: the machine's name (``openai/clip-vit-l-14``: any text on one line);
- ``score``: P(relevant) as the machine says, a number in [0, 1], and/or
- ``label``: ``relevant`` or ``irrelevant`` (the one label vocabulary,
  :mod:`retrieval.label_sets.status`); a row needs at least one of the two;
- ``family`` (optional): the model family, e.g. ``clip`` or ``mme``, the same on every row of
  one assessor.

Other columns are ignored, blank lines skipped. The format goes by the name (``.csv``;
``.jsonl``, ``.json`` or ``.ndjson``), else by the content: a first non-blank character
``{`` is JSON lines, anything else CSV. An (assessor, caption, video) may appear once.
Readers raise :class:`~retrieval.formats.records.FormatError` naming the file, line and field.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.formats.generic import csv_objects, json_objects, text_field
from retrieval.formats.labels import parse_label
from retrieval.formats.records import (
    FormatError,
    field_reader,
    parse_key,
    parse_optional_str,
    parse_probability,
    read_lines,
)
from retrieval.label_sets.status import LABELS

FORMATS = ("csv", "jsonl")
REQUIRED = ("caption", "video", "assessor")
NAME_LENGTH = 255
FAMILY_LENGTH = 64
SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}


@dataclass(frozen=True, slots=True)
class MachineRecord:
    """One machine judgement as read: ``label`` 1, 0 or None; ``score`` in [0, 1] or None
    (never both None); ``line`` takes no part in equality."""

    caption_key: str
    video_key: str
    assessor: str
    score: float | None
    label: int | None
    family: str = ""
    line: int = field(default=0, compare=False)


def file_format(path: Path, fmt: str | None = None) -> str:
    """``fmt``, or the format the name implies, or (for another name) the content's: JSON
    lines when the first non-blank character is ``{``, else CSV."""
    if fmt is None:
        fmt = SUFFIXES.get(Path(path).suffix.lower())
    if fmt is None:
        first = next((text for _, text in read_lines(Path(path)) if text.strip()), "")
        fmt = "jsonl" if first.lstrip().startswith("{") else "csv"
    if fmt not in FORMATS:
        raise FormatError(path, None, None, f"unknown machine judgement format {fmt!r}")
    return fmt


def read_machine_judgements(path: Path, fmt: str | None = None) -> Iterator[MachineRecord]:
    """Yield one record per data row (CSV) or non-blank line (JSONL), checked as the module
    says; an empty file, or one without a row, is an error."""
    path = Path(path)
    fmt = file_format(path, fmt)
    rows = csv_objects(path, REQUIRED) if fmt == "csv" else json_objects(path, REQUIRED)
    seen: dict[tuple[str, str, str], int] = {}
    families: dict[str, tuple[str, int]] = {}
    for line, values in rows:
        record = _record(path, line, values)
        key = (record.assessor, record.caption_key, record.video_key)
        if key in seen:
            raise FormatError(
                path,
                line,
                "video",
                f"assessor {record.assessor!r} judged caption {record.caption_key!r} and video "
                f"{record.video_key!r} already on line {seen[key]}",
            )
        seen[key] = line
        family, first = families.setdefault(record.assessor, (record.family, line))
        if record.family != family:
            raise FormatError(
                path,
                line,
                "family",
                f"assessor {record.assessor!r} is of family {family!r} on line {first}, "
                f"not {record.family!r}",
            )
        yield record
    if not seen:
        raise FormatError(path, None, None, "no machine judgements in the file")


def _record(path: Path, line: int, values: Mapping[str, object]) -> MachineRecord:
    read = field_reader(path, line, values)
    score, label = read("score", parse_probability), read("label", parse_machine_label)
    if score is None and label is None:
        raise FormatError(path, line, "score", "give a score, a label or both")
    return MachineRecord(
        caption_key=read("caption", parse_required_key),
        video_key=read("video", parse_required_key),
        assessor=read("assessor", parse_name),
        score=score,
        label=label,
        family=read("family", parse_family),
        line=line,
    )


def parse_required_key(value: object) -> str:
    """A caption's or video's key (:func:`~retrieval.formats.records.parse_key`); an empty
    CSV cell or a JSON null is missing."""
    if value is None:
        raise ValueError("missing value: the key as the dataset names it")
    return parse_key(value)


def parse_machine_label(value: object) -> int | None:
    """``relevant`` (1) or ``irrelevant`` (0); None or an empty string means "not given"."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    code = parse_label(value)
    if code not in LABELS:
        raise ValueError(f"a machine's label is relevant or irrelevant, not {value.strip()!r}")
    return code


def parse_name(value: object) -> str:
    """An assessor's name: shown on pages, so one line of text the text rule takes."""
    text = parse_optional_str(value)
    if not text:
        raise ValueError("an assessor needs a name")
    return text_field(text, "name", NAME_LENGTH)


def parse_family(value: object) -> str:
    """An optional model family (``clip``, ``mme``), one line of text."""
    return text_field(parse_optional_str(value), "family", FAMILY_LENGTH)
