"""TREC run files (``qid Q0 docno rank score run_id``) and qrels files (``qid 0 docno rel``):
qids are caption keys, docnos video keys; fields split on ASCII whitespace, and blank and
``#`` lines are skipped, as trec_eval does."""

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TextIO

import numpy as np

from retrieval.formats.records import FormatError, read_lines

RUN_FIELDS = ("qid", "Q0", "docno", "rank", "score", "run_id")
QRELS_FIELDS = ("qid", "iter", "docno", "rel")

Ranking = list[tuple[str, float]]
Source = Path | str | Iterable[str]

WHITESPACE = " \t\n\r\f\v"
SEPARATOR = re.compile(f"[{WHITESPACE}]+")
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
INTEGER = re.compile(r"[+-]?[0-9]+")
NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
MAX_REL_DIGITS = 18
"""Longest relevance grade read (it fits a signed 64-bit integer, as trec_eval's long does)."""


@dataclass(frozen=True, slots=True)
class RunFile:
    """A parsed run: its id and, per qid in file order, ``(docno, score)`` in trec_eval order."""

    run_id: str
    rankings: dict[str, Ranking]


def trec_order(ranking: Iterable[tuple[str, float]]) -> Ranking:
    """Sort ``(docno, score)`` pairs as trec_eval ranks them, ignoring any given order:
    score then docno, both descending, as doubles (``comp_sim_docno`` in ``form_res_rels.c``;
    Python's ``str`` order is ``strcmp`` on the UTF-8 bytes)."""
    return sorted(ranking, key=lambda pair: (pair[1], pair[0]), reverse=True)


def read_run(source: Source, *, name: str | None = None) -> RunFile:
    """Parse a TREC run from a path or lines (named ``name`` in errors), each ranking put in
    trec_order (the rank column is ignored); one run_id, each (qid, docno) once, finite scores."""
    path, lines = open_source(source, name)
    run_id: str | None = None
    scores: dict[str, dict[str, float]] = {}
    for number, fields in split_lines(path, lines, RUN_FIELDS):
        qid, _, docno, _, score_text, line_run_id = fields
        score = parse_score(path, number, score_text)
        if run_id is None:
            run_id = line_run_id
        elif line_run_id != run_id:
            raise FormatError(
                path, number, "run_id", f"{line_run_id!r} differs from the first line's {run_id!r}"
            )
        ranking = scores.setdefault(qid, {})
        check_unique(path, number, ranking, qid, docno)
        ranking[docno] = score
    if run_id is None:
        raise FormatError(path, None, None, "no run lines (empty, or only blanks and comments)")
    return RunFile(run_id, {qid: trec_order(ranking.items()) for qid, ranking in scores.items()})


def write_run(
    destination: Path | str | TextIO,
    run_id: str,
    rankings: Mapping[str, Sequence[tuple[str, float]]],
) -> None:
    """Write rankings in their given order with ranks 1..n and ``repr(float)`` scores, so
    :func:`read_run` gives back identical floats; empty rankings write no lines."""
    check_token(run_id, "run_id")
    with (
        open(destination, "w", encoding="utf-8", newline="\n")  # UTF-8 with LF endings
        if isinstance(destination, str | Path)
        else nullcontext(destination)
    ) as out:
        for qid, ranking in rankings.items():
            check_token(qid, "qid")
            seen: set[str] = set()
            for rank, (docno, score) in enumerate(ranking, start=1):
                check_token(docno, "docno")
                if docno in seen:
                    raise ValueError(f"docno {docno!r} appears twice in the ranking for {qid!r}")
                seen.add(docno)
                value = float(score)
                if not math.isfinite(value):
                    raise ValueError(f"score for ({qid!r}, {docno!r}) is not finite: {value}")
                out.write(f"{qid} Q0 {docno} {rank} {value!r} {run_id}\n")


def iter_qrels(source: Source, *, name: str | None = None) -> Iterator[tuple[int, str, str, int]]:
    """Yield ``(line number, qid, docno, rel)`` per qrels line, iter ignored; ``rel`` is an
    integer (negative kept: pooled but unjudged to trec_eval); duplicates are the caller's."""
    path, lines = open_source(source, name)
    for number, (qid, _, docno, rel_text) in split_lines(path, lines, QRELS_FIELDS):
        if not INTEGER.fullmatch(rel_text):
            raise FormatError(path, number, "rel", f"not an integer: {rel_text!r}")
        if len(rel_text.lstrip("+-").lstrip("0")) > MAX_REL_DIGITS:
            raise FormatError(path, number, "rel", f"out of range: {rel_text[:40]!r}")
        yield number, qid, docno, int(rel_text)


def read_qrels(source: Source, *, name: str | None = None) -> dict[str, dict[str, int]]:
    """Parse TREC qrels into ``{qid: {docno: rel}}`` in file order, each pair once."""
    path, _ = open_source(source, name)  # the name errors use; nothing is read yet
    qrels: dict[str, dict[str, int]] = {}
    for number, qid, docno, rel in iter_qrels(source, name=name):
        judged = qrels.setdefault(qid, {})
        check_unique(path, number, judged, qid, docno)
        judged[docno] = rel
    if not qrels:
        raise FormatError(path, None, None, "no qrels lines (empty, or only blanks and comments)")
    return qrels


def qrels_lines(rows: Iterable[tuple[str, str, int]]) -> Iterator[str]:
    """``qid 0 docno rel`` lines for ``(qid, docno, rel)`` rows, checked to read back the same;
    each distinct qid and docno is checked once (an export writes half a million lines)."""
    checked: dict[str, set[str]] = {"qid": set(), "docno": set()}
    for qid, docno, rel in rows:
        for field, value in (("qid", qid), ("docno", docno)):
            seen = checked[field]
            if value.__class__ is not str or value not in seen:
                check_token(value, field)
                if len(seen) >= 200_000:
                    seen.clear()
                seen.add(value)
        if rel.__class__ is not int and (isinstance(rel, bool) or int(rel) != rel):
            raise ValueError(f"rel for ({qid!r}, {docno!r}) is not an integer: {rel!r}")
        yield f"{qid} 0 {docno} {int(rel)}\n"


def to_arrays(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    query_keys: Sequence[str],
    doc_key_to_index: Mapping[str, int],
    depth: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Dense ``(doc_index int64 [q, depth], scores float64 [q, depth])``: row ``i`` the first
    ``depth`` entries of ``rankings[query_keys[i]]``, padded with -1 and NaN; an unknown
    docno raises ``KeyError``."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    heads = [rankings.get(qid, ())[:depth] for qid in query_keys]
    lengths = np.fromiter(map(len, heads), dtype=np.int64, count=len(heads))
    total = int(lengths.sum())
    docnos = [docno for docno, _ in chain.from_iterable(heads)]
    try:
        flat_index = np.fromiter(
            map(doc_key_to_index.__getitem__, docnos), dtype=np.int64, count=total
        )
    except KeyError as exc:
        raise KeyError(f"docno {exc.args[0]!r} is not a known video") from None
    flat_scores = np.fromiter(
        (score for _, score in chain.from_iterable(heads)), dtype=np.float64, count=total
    )
    filled = np.arange(depth) < lengths[:, None]  # row by row, in the order of the flat arrays
    doc_index = np.full((len(heads), depth), -1, dtype=np.int64)
    scores = np.full((len(heads), depth), np.nan, dtype=np.float64)
    doc_index[filled] = flat_index
    scores[filled] = flat_scores
    return doc_index, scores


def open_source(source: Source, name: str | None) -> tuple[str | Path, Iterable[tuple[int, str]]]:
    """The name to report in errors and the numbered lines of a path or an iterable of lines."""
    if isinstance(source, str | Path):
        path = Path(source)
        return name or path, read_lines(path)
    return name or "<lines>", enumerate(source, start=1)


def split_lines(
    path: str | Path, lines: Iterable[tuple[int, str]], layout: tuple[str, ...]
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number, fields)`` for content lines, checking the field count."""
    for number, text in lines:
        stripped = text.strip(WHITESPACE)
        if not stripped or stripped.startswith("#"):
            continue
        fields = SEPARATOR.split(stripped)
        if len(fields) != len(layout):
            missing = len(fields) < len(layout)
            message = f"expected {len(layout)} fields ({' '.join(layout)}), got {len(fields)}"
            field = layout[len(fields)] if missing else None
            raise FormatError(path, number, field, ("missing; " if missing else "") + message)
        yield number, fields


def parse_score(path: str | Path, number: int, text: str) -> float:
    """A finite decimal score, or a FormatError for the ``score`` field."""
    if NON_FINITE.fullmatch(text):
        raise FormatError(path, number, "score", f"must be finite, got {text!r}")
    if not DECIMAL.fullmatch(text):
        raise FormatError(path, number, "score", f"not a number: {text!r}")
    value = float(text)
    if not math.isfinite(value):
        raise FormatError(path, number, "score", f"out of range: {text!r}")
    return value


def check_unique(
    path: str | Path, number: int, seen: Mapping[str, object], qid: str, docno: str
) -> None:
    """Reject a docno already listed for this qid on an earlier line."""
    if docno in seen:
        raise FormatError(path, number, "docno", f"{docno!r} is listed twice for qid {qid!r}")


def check_token(value: str, field: str) -> None:
    """Reject a value that would not read back as the same single field."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field} must be a non-empty string, got {value!r}")
    if any(char in WHITESPACE for char in value):
        raise ValueError(f"{field} {value!r} contains whitespace")
    if field == "qid" and value.startswith("#"):
        raise ValueError(f"qid {value!r} starts with '#', which reads back as a comment")
