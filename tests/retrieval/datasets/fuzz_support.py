"""Hypothesis strategies shared by the importer fuzz tests: odd values and corrupted files.

Every strategy here produces inputs a careless or hostile user could hand an importer:
values of the wrong JSON type, huge or non-finite numbers, NUL and lone surrogates, and
files that were truncated, re-encoded (latin-1, UTF-16), padded with NUL bytes or given
one enormous line.
"""

import csv
import io
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

from retrieval.formats.records import FormatError

SCALE = float(os.environ.get("FIREPOOL_FUZZ_SCALE", "1"))
"""Multiplies every example budget: ``FIREPOOL_FUZZ_SCALE=20`` for a long bug hunt."""

FUZZ = settings(
    max_examples=max(1, int(60 * SCALE)),
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
"""Bounded settings for tests that touch the database (and function-scoped fixtures)."""

FUZZ_PURE = settings(FUZZ, max_examples=max(1, int(150 * SCALE)))
"""More examples for pure parsers, which are fast."""

ODD_STRINGS = [
    "",
    " ",
    "\t",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfff",
    "x" * 256,
    "x" * 2000,
    "../../etc/passwd",
    "/etc/passwd",
    "a\\..\\b",
    "NaN",
    "inf",
    "-1",
    "0",
    "1e999",
    "9" * 5000,
    "00:00:01.00",
    "99999999999999999999:00:00",
    "[1, 2]",
    "[1, 2",
    "['a', 'b']",
    "[" * 3000,
    "relevant",
    "irrelevant",
    "disagreement",
    "true",
    "é",
    "☃ snow",
    "\u202eevil",
    "#comment",
]

odd_text = st.one_of(st.sampled_from(ODD_STRINGS), st.text(max_size=12))
odd_json = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**63, -(2**63) - 1, 10**30, 10**400, -1, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    odd_text,
    st.lists(st.one_of(st.integers(), st.text(max_size=4)), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
"""Any JSON value, leaning towards the awkward ones."""

RAW_JSON = [
    "1" * 5000,
    "[" * 5000 + "]" * 5000,
    "1e999",
    "-1e999",
    "NaN",
    "Infinity",
    "-0",
    '"\\u0000"',
    '"\\ud800"',
    '"x\\udfff"',
    "{}",
    "[]",
    "null",
    '"' + "x" * 70_000 + '"',
]
"""JSON value texts that ``json.dumps`` cannot produce (or would produce too slowly)."""


corruption = st.sampled_from([0, 0, 0, 3, 10, 30, 60])
"""Percent of fields a generated file gets wrong: a third of the files are well formed."""


@st.composite
def json_object_text(draw, valid: dict[str, st.SearchStrategy], rate: int = 10) -> str:
    """A JSON object of ``valid`` fields; each is missing, odd, raw or repeated at ``rate`` %."""
    pairs: list[tuple[str, str]] = []
    for name, strategy in valid.items():
        if draw(st.integers(0, 99)) >= rate:
            pairs.append((name, _dumps(draw(strategy))))
            continue
        how = draw(st.integers(0, 2))
        if how == 1:
            pairs.append((name, _dumps(draw(odd_json))))
        elif how == 2:
            pairs.append((name, draw(st.sampled_from(RAW_JSON))))
    if pairs and draw(st.integers(0, 99)) < rate:
        pairs.append(draw(st.sampled_from(pairs)))  # a key given twice
    if draw(st.integers(0, 99)) < rate:
        pairs.append((draw(st.text(max_size=6)), _dumps(draw(odd_json))))  # unknown field
    return "{" + ", ".join(f"{json.dumps(name)}: {value}" for name, value in pairs) + "}"


def _dumps(value: object) -> str:
    return json.dumps(value)


@st.composite
def csv_text(
    draw,
    columns: Sequence[str],
    row_cells: Callable[[int], dict[str, st.SearchStrategy]],
    rate: int = 10,
) -> str:
    """A CSV file with a header of ``columns`` and up to six rows of ``row_cells(index)``.

    At ``rate`` % a header column is dropped or doubled, a cell is odd or a row is short.
    """
    header = list(columns)
    if header and draw(st.integers(0, 99)) < rate:
        if draw(st.booleans()):
            header.pop(draw(st.integers(0, len(header) - 1)))
        else:
            header.append(draw(st.sampled_from(header)))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for index in range(draw(st.integers(0, 6))):
        valid = row_cells(index)
        row = []
        for name in header:
            if draw(st.integers(0, 99)) < rate:
                row.append(draw(odd_text))
            else:
                row.append(str(draw(valid.get(name, st.just("")))))
        if draw(st.integers(0, 99)) < rate:
            row = row[: draw(st.integers(0, len(row)))]  # a short row
        writer.writerow(row)
    return buffer.getvalue()


MANGLES = (
    "truncate",
    "flip",
    "insert",
    "nul",
    "utf16",
    "utf16le",
    "latin1",
    "bom",
    "crlf",
    "dup_line",
    "drop_line",
    "long_line",
    "empty",
    "random",
    "blank",
)


@st.composite
def mangled(draw, text: str) -> bytes:
    """``text`` as UTF-8 bytes; half the time corrupted the way files get corrupted."""
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        return data
    kind = draw(st.sampled_from(MANGLES))
    at = draw(st.integers(0, len(data)))
    lines = data.split(b"\n")
    if kind == "truncate":
        return data[:at]
    if kind == "flip" and data:
        index = min(at, len(data) - 1)
        return data[:index] + bytes([draw(st.integers(0, 255))]) + data[index + 1 :]
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    if kind == "nul":
        return data[:at] + b"\x00" + data[at:]
    if kind == "utf16":
        return text.encode("utf-16", "surrogatepass")
    if kind == "utf16le":
        return text.encode("utf-16-le", "surrogatepass")
    if kind == "latin1":
        return (text + "é").encode("latin-1", "replace")
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    if kind == "crlf":
        return data.replace(b"\n", b"\r\n")
    if kind == "dup_line" and lines:
        index = draw(st.integers(0, len(lines) - 1))
        return b"\n".join([*lines[: index + 1], lines[index], *lines[index + 1 :]])
    if kind == "drop_line" and lines:
        index = draw(st.integers(0, len(lines) - 1))
        return b"\n".join(lines[:index] + lines[index + 1 :])
    if kind == "long_line":
        length = draw(st.sampled_from([1000, 70_000, 300_000]))
        filler = draw(st.sampled_from([b"x", b"a,", b" ", b"[", b'"']))
        return data[:at] + filler * length + b"\n" + data[at:]
    if kind == "empty":
        return b""
    if kind == "random":
        return draw(st.binary(max_size=512))
    if kind == "blank":
        return b"\n  \n\t\n"
    return data


def write(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` (replacing what an earlier example left) and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def check_format_error(exc: FormatError, path: Path | str) -> None:
    """A FormatError must name the file and render its line and field as it claims to."""
    text = str(exc)
    assert Path(path).name in text, text
    assert exc.message, text
    if exc.line is not None:
        assert exc.where.format(exc.line) in text, text
    if exc.field:
        assert repr(exc.field) in text, text
    assert "Traceback" not in text


def outcome(call: Callable[[], object], path: Path | str) -> FormatError | None:
    """Run ``call``: success is None, a FormatError is checked and returned, anything else fails."""
    try:
        call()
    except FormatError as exc:
        check_format_error(exc, path)
        event("FormatError")
        return exc
    event("success")
    return None
