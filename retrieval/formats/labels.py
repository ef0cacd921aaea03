"""Label files: one judged caption-video pair per record (JSONL or CSV), and raw labels.

A label record carries the pair's label, how many annotator labels it rests on
(``labels``), whether an admin adjudicated it, the caption, the annotators, per run the
1-based rank it retrieved the video at (in CSV a ``rank:<run name>`` column, empty: not
retrieved; annotators joined with ``;``) and optionally the ``confidence`` a model-based
resolution (Dawid & Skene 1979) gave it. A raw label file holds one annotator's label per
line. Readers raise :class:`~retrieval.formats.records.FormatError` naming line and field;
writers are generators of complete lines, so callers can stream them.
"""

import functools
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from retrieval.formats.csv_safety import csv_line
from retrieval.formats.generic import csv_rows, json_objects
from retrieval.formats.records import (
    KEY_MAX_LENGTH,
    FormatError,
    field_reader,
    json_type,
    parse_bool,
    parse_field,
    parse_int,
    parse_key,
    parse_list,
    parse_optional_str,
    parse_probability,
    parse_seconds,
)
from retrieval.label_sets.judged import DISAGREEMENT, LABEL_CODES, LABEL_NAMES, MAX_VOTES

REQUIRED = ("caption_key", "video_key", "label")
CSV_COLUMNS = (
    "caption_key", "video_key", "caption", "label", "labels", "adjudicated", "annotators",
)  # fmt: skip
CONFIDENCE = "confidence"
"""Optional column/field: the pair's probability of relevance under a model-based resolution."""
AUTO_LABEL = "auto_label"
"""Optional column/field: the proxy rule that labelled the pair without a human, if any."""
RANK_PREFIX = "rank:"
ANNOTATOR_SEPARATOR = ";"
RAW_REQUIRED = ("caption_id", "video_id", "annotator", "label")
DUPLICATES = ("first", "last", "all")
"""What a raw file's second line by one annotator on one pair means (see DUPLICATES_HELP)."""
DUPLICATES_HELP = (
    "A raw file in which one annotator labelled one pair on two lines (a re-posted crowd "
    "task) is refused unless this says what to keep: first (the earliest line), last (the "
    "latest line) or all (each line a label of its own, as crowd-kit counts them)."
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LabelRecord:
    """One judged pair: ``label`` 1, 0 or -1 (a disagreement), ``votes`` the labels behind it
    (0: unknown), ``runs`` run name -> 1-based rank, ``auto_label`` the proxy rule that
    labelled it (``"bow>=0.90"``; empty for humans); ``line`` takes no part in equality."""

    caption_key: str
    video_key: str
    label: int
    votes: int = 0
    adjudicated: bool = False
    caption: str = ""
    annotators: tuple[str, ...] = ()
    runs: dict[str, int] = field(default_factory=dict)
    auto_label: str = ""
    confidence: float | None = None
    line: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class RawLabel:
    """One annotator's label (1 or 0) for one pair, with the ``seconds`` it took, the
    ``seconds_played`` of the video and an ISO 8601 ``created_at``, each optional."""

    caption_key: str
    video_key: str
    annotator: str
    label: int
    seconds: float | None = None
    created_at: str = ""
    line: int = field(default=0, compare=False)
    discounted: bool = False
    """An admin discounted it: stored and listed, but it no longer counts."""
    seconds_played: float | None = None


# Reading label files.


def read_jsonl(path: Path) -> Iterator[LabelRecord]:
    """Yield one record per non-blank line of a label JSONL file."""
    seen: dict[tuple[str, str], int] = {}
    for line, values in json_objects(path, REQUIRED):
        read = field_reader(path, line, values)
        annotators, runs = read("annotators", _parse_annotator_list), read("runs", _parse_runs)
        yield _label_record(path, line, read, annotators, runs, seen)
    if not seen:
        raise FormatError(path, None, None, "no labels (empty, or only blank lines)")


def read_csv(path: Path) -> Iterator[LabelRecord]:
    """Yield one record per data row of a label CSV file; ``rank:<run>`` columns give runs."""
    seen: dict[tuple[str, str], int] = {}
    run_columns: dict[str, str] | None = None
    for line, values in csv_rows(path, REQUIRED):
        if run_columns is None:
            run_columns = _run_columns(path, values)
        read = field_reader(path, line, values)
        annotators = read("annotators", _parse_annotator_cell)
        runs = {
            name: parse_field(path, line, column, parse_rank, values[column].strip())
            for column, name in run_columns.items()
            if values[column].strip()
        }
        yield _label_record(path, line, read, annotators, runs, seen)
    if not seen:
        raise FormatError(path, None, None, "no labels (only a header row)")


def _label_record(
    path: Path,
    line: int,
    read: Callable[[str, Callable[[object], T]], T],
    annotators: tuple[str, ...],
    runs: dict[str, int],
    seen: dict[tuple[str, str], int],
) -> LabelRecord:
    """Validate the fields JSONL and CSV share (``read``: the line's :func:`field_reader`)
    into a record whose pair no earlier line (in ``seen``, pair: line) labelled."""
    adjudicated = read("adjudicated", parse_bool)
    record = LabelRecord(
        caption_key=read("caption_key", parse_key),
        video_key=read("video_key", parse_key),
        label=read("label", parse_label),
        votes=read("labels", parse_count),
        adjudicated=bool(adjudicated),
        caption=read("caption", _parse_caption),
        annotators=annotators,
        runs=runs,
        auto_label=read(AUTO_LABEL, parse_optional_str),
        confidence=read(CONFIDENCE, parse_probability),
        line=line,
    )
    pair = (record.caption_key, record.video_key)
    if pair in seen:
        message = f"{_owner(pair)} is already labelled on line {seen[pair]}"
        raise FormatError(path, line, "video_key", message)
    seen[pair] = line
    return record


def _run_columns(path: Path, values: Mapping[str, str]) -> dict[str, str]:
    """Map each ``rank:<run name>`` column to its run name, rejecting empty or repeated names."""
    columns: dict[str, str] = {}
    for column in values:
        if not column.startswith(RANK_PREFIX):
            continue
        name = column.removeprefix(RANK_PREFIX).strip()
        if not name:
            raise FormatError(path, 1, column, "rank column without a run name")
        if name in columns.values():
            raise FormatError(path, 1, column, f"run {name!r} has two rank columns")
        columns[column] = name
    return columns


# Field parsers for label files; like those in records.py they raise ValueError.


def parse_label(value: object) -> int:
    """A label name, ``relevant``, ``irrelevant`` or ``disagreement``, as its code."""
    if not isinstance(value, str):
        raise ValueError(f"expected a label name, got {json_type(value)}")
    code = LABEL_CODES.get(value.strip().lower())
    if code is None:
        expected = ", ".join(map(repr, LABEL_CODES))
        raise ValueError(f"unknown label {value.strip()!r}; expected one of {expected}")
    return code


def parse_count(value: object) -> int:
    """A number of labels from 0 to :data:`MAX_VOTES`; missing (None or empty) means 0."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return 0
    count = parse_int(value)
    if count < 0:
        raise ValueError(f"negative count: {count}")
    if count > MAX_VOTES:
        raise ValueError(f"count {count} is over {MAX_VOTES:,}")
    return count


def parse_rank(value: object) -> int:
    """A 1-based rank: an integer of at least 1."""
    rank = parse_int(value)
    if rank < 1:
        raise ValueError(f"rank must be at least 1, got {rank}")
    return rank


def _parse_caption(value: object) -> str:
    """Caption text, kept exactly as written; missing means empty."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {json_type(value)}")
    return value


_parse_annotator_list = partial(parse_list, parse=parse_key, expected="a list of annotators")
"""A JSON list of annotator names (strings or integers); missing means none."""


def _parse_annotator_cell(value: object) -> tuple[str, ...]:
    """Annotator names joined with ``;`` in one CSV cell; empty parts are skipped."""
    text = parse_optional_str(value)
    return tuple(name.strip() for name in text.split(ANNOTATOR_SEPARATOR) if name.strip())


def _parse_runs(value: object) -> dict[str, int]:
    """A JSON object mapping run names to 1-based ranks; missing means none."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"expected an object of run ranks, got {json_type(value)}")
    runs = {}
    for name, rank in value.items():
        run = parse_key(name)
        try:
            runs[run] = parse_rank(rank)
        except ValueError as exc:
            raise ValueError(f"run {run!r}: {exc}") from None
    return runs


# Writing label files.


def jsonl_lines(records: Iterable[LabelRecord], *, auto_label: bool = False) -> Iterator[str]:
    """Yield one JSON line per record, as :func:`read_jsonl` reads them; with ``auto_label``
    every line has an ``auto_label`` field, else only records with an automatic label."""
    names: set[str] = set()
    for record in records:
        _check_record(record, names)
        values = {
            "caption_key": record.caption_key,
            "video_key": record.video_key,
            "caption": record.caption,
            "label": LABEL_NAMES[record.label],
            "labels": record.votes,
            "adjudicated": record.adjudicated,
            "annotators": list(record.annotators),
            "runs": dict(record.runs),
        }
        if auto_label or record.auto_label:
            values[AUTO_LABEL] = record.auto_label
        if record.confidence is not None:
            values[CONFIDENCE] = record.confidence
        yield json.dumps(values, ensure_ascii=False) + "\n"


def csv_lines(
    records: Iterable[LabelRecord],
    run_names: Sequence[str],
    *,
    auto_label: bool = False,
    confidence: bool = False,
) -> Iterator[str]:
    """Yield the header, then one CSV row per record with a ``rank:<run>`` column per run,
    after ``auto_label`` and ``confidence`` columns when asked; what would not read back (an
    automatic label without ``auto_label``, an unlisted run, ``;`` in an annotator) raises
    ValueError."""
    names = list(run_names)
    if len(set(names)) != len(names):
        raise ValueError("run_names lists a run twice")
    for name in names:
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise ValueError(f"run name {name!r} is empty or has surrounding blanks")
    extra = ([AUTO_LABEL] if auto_label else []) + ([CONFIDENCE] if confidence else [])
    yield csv_line([*CSV_COLUMNS, *extra, *(RANK_PREFIX + name for name in names)])
    checked: set[str] = set()
    for record in records:
        _check_record(record, checked)
        _check_annotators(record.annotators)
        unknown = set(record.runs).difference(names)
        if unknown:
            message = f"has ranks for runs not in run_names: {sorted(unknown)}"
            raise ValueError(f"{_owner(_keys(record))} {message}")
        if record.auto_label and not auto_label:
            raise ValueError(f"{_owner(_keys(record))} {AUTOMATIC}")
        ranks = [record.runs.get(name, "") for name in names]
        yield csv_line(
            [
                record.caption_key,
                record.video_key,
                record.caption,
                LABEL_NAMES[record.label],
                record.votes,
                "true" if record.adjudicated else "false",
                ANNOTATOR_SEPARATOR.join(record.annotators),
                *([record.auto_label] if auto_label else []),
                *([record.confidence] if confidence else []),
                *ranks,
            ]
        )


def _check_record(record: LabelRecord, names: set[str]) -> None:
    """Reject a record that would not read back as itself; ``names`` caches the annotator
    and run names already checked (they repeat on every record)."""
    keys = _keys(record)
    for value in keys:
        _check_key(value, keys)
    for name in (*record.annotators, *record.runs):
        if name not in names:
            _check_key(name, keys)
            names.add(name)
    _check_values(keys, record.label, record.votes, record.confidence)
    _check_ranks(keys, record.runs.items())


def _keys(record: "LabelRecord | RawLabel") -> tuple[str, ...]:
    """The keys that name a record in errors: its pair, and a raw label's annotator."""
    if isinstance(record, RawLabel):
        return record.caption_key, record.video_key, record.annotator
    return record.caption_key, record.video_key


def _owner(keys: tuple) -> str:
    """How an error names the record of ``keys`` (:func:`_keys`, or a plain row's)."""
    return f"{'label' if len(keys) == 3 else 'pair'} ({', '.join(map(repr, keys))})"


AUTOMATIC = "has an automatic label: write it with auto_label=True"


def _check_values(keys: tuple, label: object, votes: object, confidence: object) -> None:
    """Reject a label code, labels count or confidence that would not read back."""
    if label not in LABEL_NAMES:
        raise ValueError(f"{_owner(keys)} has an unknown label code {label!r}")
    if votes.__class__ is not int or votes < 0:
        raise ValueError(f"{_owner(keys)} has a bad labels count {votes!r}")
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise ValueError(f"{_owner(keys)} has a bad confidence {confidence!r}")


def _check_ranks(keys: tuple, runs: Iterable[tuple[str, object]]) -> None:
    """Reject a rank that is not an integer of at least 1."""
    for run, rank in runs:
        if rank.__class__ is not int or rank < 1:
            raise ValueError(f"{_owner(keys)} has a bad rank {rank!r} for run {run!r}")


def _check_key(value: object, keys: tuple) -> None:
    """Reject a key or name that :func:`parse_key` would not give back unchanged."""
    plain = type(value) is str and value.isprintable() and value == value.strip()
    if plain and value and len(value) <= KEY_MAX_LENGTH:
        return  # the common case, without parse_key's work (printable: no NUL, no surrogate)
    try:
        parsed = parse_key(value)
    except ValueError as exc:
        raise ValueError(f"{_owner(keys)}: {value!r}: {exc}") from None
    if parsed != value:
        raise ValueError(f"{_owner(keys)}: {value!r} has surrounding blanks or is not a string")


# Raw labels: one annotator's label per line.


def read_raw_jsonl(path: Path, duplicates: str | None = None) -> Iterator[RawLabel]:
    """Yield one raw label per non-blank line, skipping ``"discounted": true`` ones; a second
    line by one annotator on one pair is refused unless ``duplicates`` says to keep the
    ``first``, the ``last`` (yielded where it is) or ``all`` (as crowd-kit counts rows)."""
    if duplicates not in (None, *DUPLICATES):
        raise ValueError(f"duplicates must be one of {', '.join(DUPLICATES)} or None")
    first_line: dict[tuple[str, str, str], int] = {}  # (caption, video, annotator): line
    latest: dict[tuple[str, str, str], RawLabel] = {}  # with "last", in order of last line
    for line, values in json_objects(path, RAW_REQUIRED):
        if values.get("discounted") is True:
            continue
        read = field_reader(path, line, values)
        label = RawLabel(
            caption_key=read("caption_id", parse_key),
            video_key=read("video_id", parse_key),
            annotator=read("annotator", parse_key),
            label=read("label", parse_raw_label),
            seconds=read("seconds", parse_seconds),
            created_at=read("created_at", parse_created_at),
            line=line,
            seconds_played=read("seconds_played", parse_seconds),
        )
        triple = (label.caption_key, label.video_key, label.annotator)
        if triple not in first_line:
            first_line[triple] = line
        elif duplicates is None:
            message = (
                f"{label.annotator!r} already labelled ({label.caption_key!r}, "
                f"{label.video_key!r}) on line {first_line[triple]} (a re-posted task? "
                f"choose --duplicates {', '.join(DUPLICATES)})"
            )
            raise FormatError(path, line, "annotator", message)
        elif duplicates == "first":
            continue
        if duplicates == "last":
            latest.pop(triple, None)
            latest[triple] = label
        else:
            yield label
    if not first_line:
        raise FormatError(path, None, None, "no labels (empty, or only blank lines)")
    yield from latest.values()


GOLD_REQUIRED = ("caption_id", "video_id", "label")


def read_gold_jsonl(path: Path) -> dict[tuple[str, str], int]:
    """Trusted labels of some pairs, in the raw file's layout, as {(caption key, video key):
    1 or 0}; a pair given twice must be given the same label."""
    first: dict[tuple[str, str], tuple[int, int]] = {}  # pair: (label, line)
    for line, values in json_objects(path, GOLD_REQUIRED):
        read = field_reader(path, line, values)
        pair = (read("caption_id", parse_key), read("video_id", parse_key))
        label = read("label", parse_raw_label)
        given, given_on = first.setdefault(pair, (label, line))
        if given != label:
            message = f"pair {pair!r} has another label on line {given_on}"
            raise FormatError(path, line, "label", message)
    if not first:
        raise FormatError(path, None, None, "no labels (empty, or only blank lines)")
    return {pair: label for pair, (label, _) in first.items()}


def parse_raw_label(value: object) -> int:
    """One annotator's label: ``relevant`` or ``irrelevant``, never a disagreement."""
    code = parse_label(value)
    if code == DISAGREEMENT:
        raise ValueError("a single annotator's label cannot be 'disagreement'")
    return code


def parse_created_at(value: object) -> str:
    """An optional ISO 8601 time, kept as written."""
    text = parse_optional_str(value)
    if text:
        try:
            datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not an ISO 8601 time: {text!r}") from None
    return text


def raw_lines(records: Iterable[RawLabel]) -> Iterator[str]:
    """Yield one JSON line per raw label, in the layout :func:`read_raw_jsonl` reads."""
    for record in records:
        keys = _keys(record)
        for name in keys:
            _check_key(name, keys)
        if record.label not in LABEL_NAMES or record.label == DISAGREEMENT:
            raise ValueError(f"{_owner(keys)} must be 1 or 0, got {record.label!r}")
        try:
            for seconds in (record.seconds, record.seconds_played):
                parse_seconds(seconds)  # None passes
            parse_created_at(record.created_at)
        except ValueError as exc:
            raise ValueError(f"{_owner(keys)}: {exc}") from None
        values = {
            "caption_id": record.caption_key,
            "video_id": record.video_key,
            "annotator": record.annotator,
            "label": LABEL_NAMES[record.label],
            "seconds": record.seconds,
            "created_at": record.created_at or None,
        }
        if record.seconds_played is not None:
            values["seconds_played"] = record.seconds_played
        if record.discounted:
            values["discounted"] = True
        yield json.dumps(values, ensure_ascii=False) + "\n"


# Writing plain rows: the campaign exports' fast path.

CACHE_LIMIT = 4_096
"""Distinct strings a writer's caches hold before starting over (about 1 MiB each): repeats
are near one another or few, and at 50,000 the caches held 12-13 MiB of a FIRE-scale
export's peak (tracemalloc, ``bench/export_bench.py``) at no gain in time."""


class Memo(dict):
    """``compute(key)`` per distinct key, worked out once (a ``json.dumps`` per value cost
    2.5 s of a 12 s FIRE-scale export); holds at most ``limit`` keys, then starts over."""

    def __init__(self, compute: Callable[[Any], Any], limit: int = CACHE_LIMIT) -> None:
        super().__init__()
        self.compute = compute
        self.limit = limit

    def __missing__(self, key: Any) -> Any:
        if len(self) >= self.limit:
            self.clear()
        value = self[key] = self.compute(key)
        return value


def json_string(text: str) -> str:
    """``json.dumps(text, ensure_ascii=False)``, without the encoder where nothing needs
    escaping (printable text without quotes or backslashes, what nearly every key is)."""
    if text.__class__ is str and text.isprintable() and '"' not in text and "\\" not in text:
        return '"' + text + '"'
    return json.dumps(text, ensure_ascii=False)


def json_number(value: object) -> str:
    """A number as ``json.dumps`` writes it (``repr`` for a float)."""
    return float.__repr__(value) if value.__class__ is float else json.dumps(value)


PairLine = tuple
"""One pair for :func:`jsonl_pair_lines` and :func:`csv_pair_lines`: (caption key, video
key, caption, label code, votes, adjudicated, annotators tuple, ranks (one per run name, 0:
not retrieved), auto label, confidence or None), written as that :class:`LabelRecord`."""


def _checked_keys() -> Memo:
    """Keys and names checked once each by :func:`_check_key` (an error is then told by the
    record writer: :func:`_told_as_records`)."""
    return Memo(lambda key: _check_key(key, ()))


def _checked_runs(run_names: Sequence[str], ranks: tuple) -> tuple:
    """A tuple of ranks (one per run, 0: not retrieved) as ``(name, rank)`` pairs, checked."""
    runs = tuple((name, rank) for name, rank in zip(run_names, ranks, strict=True) if rank)
    for name, _ in runs:
        _check_key(name, ())
    _check_ranks((), runs)
    return runs


def _told_as_records(write_records: Callable[..., Iterable[str]]):
    """A row writer whose refusal (ValueError) is told again by ``write_records(row, *args,
    **options)``, the record writer on the row refused, so that its error names the pair or
    label as the record writer's does (the row writers check each key once, out of its row);
    the row writer's own error stands where the record writer takes the row."""

    def decorate(write_rows: Callable[..., Iterator[str]]) -> Callable[..., Iterator[str]]:
        @functools.wraps(write_rows)
        def write(rows: Iterable[tuple], *args, **options) -> Iterator[str]:
            last: list[tuple] = []

            def tracked() -> Iterator[tuple]:
                for row in rows:
                    last[:] = [row]
                    yield row

            try:
                yield from write_rows(tracked(), *args, **options)
            except ValueError:
                if last:  # raises the record writer's error, if it refuses the row too
                    for _ in write_records(last[0], *args, **options):
                        pass
                raise

        return write

    return decorate


def _row_record(row: PairLine, run_names: Sequence[str]) -> LabelRecord:
    key, video, caption, label, votes, adjudicated, annotators, ranks, auto, confidence = row
    runs = {name: rank for name, rank in zip(run_names, ranks, strict=True) if rank}
    return LabelRecord(
        key, video, label, votes, adjudicated, caption, annotators, runs, auto, confidence
    )


@_told_as_records(lambda row, names, **options: jsonl_lines([_row_record(row, names)], **options))
def jsonl_pair_lines(
    rows: Iterable[PairLine], run_names: Sequence[str], *, auto_label: bool = False
) -> Iterator[str]:
    """:func:`jsonl_lines` for plain rows (:data:`PairLine`), byte for byte and with its
    errors, each distinct string encoded once (:class:`Memo`): the campaign exports' writer."""
    encoded = Memo(json_string)
    keys = _checked_keys()
    names = list(run_names)

    def runs_json(ranks: tuple) -> str:
        runs = _checked_runs(names, ranks)
        return "{" + ", ".join(f"{encoded[name]}: {rank}" for name, rank in runs) + "}"

    def people_json(annotators: tuple) -> str:
        for name in annotators:
            keys[name]
        return ", ".join([encoded[name] for name in annotators])

    runs_text, people_text = Memo(runs_json), Memo(people_json)
    labels = {code: json_string(name) for code, name in LABEL_NAMES.items()}
    for row in rows:
        key, video, caption, label, votes, adjudicated, annotators, ranks, auto, score = row
        keys[key], keys[video]
        _check_values((), label, votes, score)
        line = (
            f'{{"caption_key": {encoded[key]}, "video_key": {encoded[video]}, '
            f'"caption": {encoded[caption]}, "label": {labels[label]}, "labels": {votes}, '
            f'"adjudicated": {"true" if adjudicated else "false"}, '
            f'"annotators": [{people_text[annotators]}], "runs": {runs_text[ranks]}'
        )
        if auto_label or auto:
            line += f', "auto_label": {encoded[auto]}'
        if score is not None:
            line += f', "confidence": {json_number(score)}'
        yield line + "}\n"


def _check_annotators(names: Iterable[str]) -> None:
    """Refuse an annotator name holding the CSV separator: it would not read back."""
    for name in names:
        if ANNOTATOR_SEPARATOR in name:
            raise ValueError(
                f"annotator {name!r} contains {ANNOTATOR_SEPARATOR!r}, "
                "which separates annotators in CSV"
            )


@_told_as_records(
    lambda row, names, **options: csv_lines([_row_record(row, names)], names, **options)
)
def csv_pair_lines(
    rows: Iterable[PairLine],
    run_names: Sequence[str],
    *,
    auto_label: bool = False,
    confidence: bool = False,
) -> Iterator[str]:
    """:func:`csv_lines` for plain rows (:data:`PairLine`), byte for byte and with its errors,
    each distinct text escaped once (:class:`Memo`): the campaign exports' writer."""
    names = list(run_names)
    options = {"auto_label": auto_label, "confidence": confidence}
    yield from csv_lines((), names, **options)  # the header; checks the run names
    cells = Memo(lambda text: csv_line([text])[:-1] if text else "")
    keys = _checked_keys()

    def annotator_cell(annotators: tuple) -> str:
        for name in annotators:
            keys[name]
        _check_annotators(annotators)
        return cells[ANNOTATOR_SEPARATOR.join(annotators)]

    def rank_cells(ranks: tuple) -> str:
        _checked_runs(names, ranks)
        return "".join("," + str(rank) if rank else "," for rank in ranks)

    annotators_text, ranks_text = Memo(annotator_cell), Memo(rank_cells)
    labels = {code: cells[name] for code, name in LABEL_NAMES.items()}
    for row in rows:
        key, video, caption, label, votes, adjudicated, annotators, ranks, auto, score = row
        keys[key], keys[video]
        _check_values((), label, votes, score)
        joined, text = annotators_text[annotators], ranks_text[ranks]
        if auto and not auto_label:
            raise ValueError(AUTOMATIC)
        line = (
            f"{cells[key]},{cells[video]},{cells[caption]},{labels[label]},"
            f"{votes},{'true' if adjudicated else 'false'},{joined}"
        )
        if auto_label:
            line += "," + cells[auto]
        if confidence:
            line += "," + ("" if score is None else csv_line([score])[:-1])
        yield line + text + "\n"


RawLine = tuple
"""One raw label for :func:`raw_label_lines`: (caption key, video key, annotator, label
code, seconds or None, created_at or "", discounted[, seconds played or None])."""


def _raw_record(row: RawLine) -> RawLabel:
    key, video, annotator, label, seconds, created_at, discounted, *more = row
    return RawLabel(
        key,
        video,
        annotator,
        label,
        seconds,
        created_at or "",
        discounted=discounted,
        seconds_played=more[0] if more else None,
    )


@_told_as_records(lambda row: raw_lines([_raw_record(row)]))
def raw_label_lines(rows: Iterable[RawLine]) -> Iterator[str]:
    """:func:`raw_lines` for plain rows (:data:`RawLine`), byte for byte and with its errors,
    each distinct key and name encoded and checked once: the campaign exports' writer."""
    encoded = Memo(json_string)
    keys = _checked_keys()
    labels = {code: json_string(name) for code, name in LABEL_NAMES.items() if code != DISAGREEMENT}
    for row in rows:
        caption_key, video_key, annotator, label, seconds, created_at, discounted, *more = row
        keys[caption_key], keys[video_key], keys[annotator]
        name = labels.get(label)
        if name is None:
            raise ValueError(f"a raw label must be 1 or 0, got {label!r}")
        spent = _raw_figure(seconds)
        when = _raw_time(created_at) if created_at else "null"
        line = (
            f'{{"caption_id": {encoded[caption_key]}, "video_id": {encoded[video_key]}, '
            f'"annotator": {encoded[annotator]}, "label": {name}, "seconds": {spent}, '
            f'"created_at": {when}'
        )
        played = more[0] if more else None
        if played is not None:
            line += f', "seconds_played": {_raw_figure(played)}'
        yield line + (', "discounted": true}\n' if discounted else "}\n")


def _raw_time(created_at: object) -> str:
    """A label's time as JSON, checked as :func:`parse_created_at` checks it: printable ASCII
    without blanks around it needs only the parse (the full check per label was a fifth of
    the raw export's time at FIRE's scale)."""
    plain = created_at.__class__ is str and created_at.isascii() and created_at.isprintable()
    if plain and created_at == created_at.strip():
        datetime.fromisoformat(created_at)
        return '"' + created_at + '"'
    parse_created_at(created_at)
    return json_string(created_at)


def _raw_figure(seconds: object) -> str:
    """A number of seconds as JSON (``null`` for None), checked as the reader checks it."""
    if seconds is None:
        return "null"
    if seconds.__class__ is float and 0.0 <= seconds < math.inf:
        return float.__repr__(seconds)
    parse_seconds(seconds)
    return json_number(seconds)
