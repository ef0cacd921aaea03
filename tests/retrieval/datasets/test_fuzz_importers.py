"""Fuzzing every importer and upload parser: success or a located FormatError, never a traceback.

Each parser gets random and structurally plausible but corrupted files (see
:mod:`tests.retrieval.datasets.fuzz_support`). The property: it either succeeds or raises the
project's own error (:class:`~retrieval.formats.records.FormatError`, or
:class:`~retrieval.proxies.synsets.ClassFileError` for class files) whose message names
the file and the line and field it claims. Importers that write to the database must also
leave every affected table as it was when they fail.
"""

import csv
import io
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from hypothesis import event, given
from hypothesis import strategies as st

from retrieval.datasets.importing import ImportOptionError, import_dataset, is_video_container
from retrieval.formats import CAPTION_FORMATS, embeddings, fire_json, labels, trec
from retrieval.formats.records import FormatError
from retrieval.label_sets.service import IMPORT_FORMATS, LabelSetError, import_label_file
from retrieval.models import Caption, Dataset, LabelSet, RetrievalModel, Run, Video
from retrieval.proxies.synsets import ClassFileError, read_class_file
from retrieval.search import registration
from tests.media_support import playable_bytes
from tests.retrieval.datasets.fuzz_support import (
    FUZZ,
    FUZZ_PURE,
    check_format_error,
    corruption,
    csv_text,
    json_object_text,
    mangled,
    odd_json,
    odd_text,
    outcome,
    write,
)

VIDEO_KEYS = [f"v{i}" for i in range(4)]
CAPTION_KEYS = [f"c{i}" for i in range(8)]
"""Keys of the ``world`` dataset; label and run files name them (and some unknown ones)."""

video_key = st.sampled_from(VIDEO_KEYS)
caption_key = st.sampled_from(CAPTION_KEYS)
seconds = st.one_of(st.none(), st.floats(0, 100, allow_nan=False))
caption_text = st.sampled_from(["a man sings", "a dog runs on grass", "someone cooks"])
label_name = st.sampled_from(["relevant", "irrelevant", "disagreement"])

# --- caption files -------------------------------------------------------------------------
# Caption keys are n0, n1, ... (unique per file, new to ``world``); attributes of a video
# are drawn once per file so that well-formed files import.

VIDEO_ATTRIBUTES = {
    "split": st.sampled_from(["train", "test", "", None]),
    "video_path": st.sampled_from(["", "clips/v0.mp4", None]),
    "video_url": st.sampled_from(["", "https://example.org/v.mp4"]),
    "start": st.sampled_from([None, 1.5]),
    "end": st.sampled_from([None, 4.0]),
    "duration": seconds,
}


@st.composite
def caption_jsonl(draw, rate: int) -> str:
    """A JSON Lines caption file with the odd non-object line or blank line."""
    shared = {name: st.just(draw(strategy)) for name, strategy in VIDEO_ATTRIBUTES.items()}
    lines = []
    for index in range(draw(st.integers(0, 6))):
        if draw(st.integers(0, 99)) < rate:
            lines.append(draw(st.sampled_from(["", json.dumps(draw(odd_json))])))
            continue
        fields = {
            "video_id": video_key,
            "caption_id": st.just(f"n{index}"),
            "caption": caption_text,
            **shared,
            "is_query": st.one_of(st.none(), st.booleans()),
            "verb_classes": st.lists(st.integers(0, 5), max_size=3),
            "noun_classes": st.sampled_from([[1, 2], "3 4", "[5]"]),
        }
        lines.append(draw(json_object_text(fields, rate)))
    return "\n".join(lines) + "\n"


@st.composite
def caption_csv(draw, rate: int) -> str:
    shared = {
        name: st.just("" if value is None else value)
        for name, value in ((name, draw(s)) for name, s in VIDEO_ATTRIBUTES.items())
    }

    def cells(index: int) -> dict:
        return {
            "video_id": video_key,
            "caption_id": st.just(f"n{index}"),
            "caption": caption_text,
            **shared,
            "is_query": st.sampled_from(["", "true", "0", "yes"]),
            "verb_classes": st.sampled_from(["", "1 2", "[3]"]),
            "noun_classes": st.sampled_from(["", "4", "[5, 6]"]),
        }

    return draw(csv_text(list(cells(0)), cells, rate))


@st.composite
def msrvtt_json(draw, rate: int) -> str:
    """An ``MSRVTT_data.json``-like document with odd entries and odd top-level shapes."""
    if draw(st.integers(0, 99)) < rate // 3:
        return json.dumps(draw(odd_json))
    videos = []
    for key in draw(st.lists(video_key, max_size=4, unique=True)):
        fields = {
            "video_id": st.just(key),
            "split": st.sampled_from(["train", "validate", "test"]),
            "category": st.integers(0, 19),
            "url": st.just("https://www.youtube.com/watch?v=x"),
            "start time": st.floats(0, 10),
            "end time": st.floats(10.5, 20),
        }
        videos.append(draw(json_object_text(fields, rate)))
    sentences = [
        draw(
            json_object_text(
                {"video_id": video_key, "sen_id": st.just(index), "caption": caption_text}, rate
            )
        )
        for index in range(draw(st.integers(0, 5)))
    ]
    parts = [f'"videos": [{", ".join(videos)}]', f'"sentences": [{", ".join(sentences)}]']
    if draw(st.integers(0, 99)) < rate:
        parts[draw(st.integers(0, 1))] = f'"sentences": {json.dumps(draw(odd_json))}'
    return "{" + ", ".join(parts) + "}"


def msrvtt_cells(index: int) -> dict:
    return {
        "key": st.just(f"n{index}"),
        "vid_key": st.just("msr7579"),
        "video_id": video_key,
        "sentence": caption_text,
    }


def epic_cells(index: int) -> dict:
    return {
        "narration_id": st.just(f"P01_11_{index}"),
        "participant_id": st.just("P01"),
        "video_id": st.sampled_from(["P01_11", "P02_03"]),
        "narration_timestamp": st.just("00:00:01.089"),
        "start_timestamp": st.sampled_from(["00:00:00.14", "00:00:02.00", ""]),
        "stop_timestamp": st.sampled_from(["00:00:03.37", ""]),
        "start_frame": st.sampled_from(["8", "120", ""]),
        "stop_frame": st.sampled_from(["202", ""]),
        "narration": caption_text,
        "verb": st.just("open"),
        "verb_class": st.sampled_from(["3", "0"]),
        "noun": st.just("door"),
        "noun_class": st.just("3"),
        "all_nouns": st.sampled_from(["['door']", "['tap', 'water']", ""]),
        "all_noun_classes": st.sampled_from(["[3]", "[6, 20]", "4"]),
    }


def caption_file(fmt: str, rate: int) -> st.SearchStrategy[str]:
    """Plausible, at ``rate`` % corrupted, text of a caption file in format ``fmt``."""
    return {
        "jsonl": caption_jsonl(rate),
        "csv": caption_csv(rate),
        "msrvtt-json": msrvtt_json(rate),
        "msrvtt-csv": csv_text(list(msrvtt_cells(0)), msrvtt_cells, rate),
        "epic-csv": csv_text(list(epic_cells(0)), epic_cells, rate),
    }[fmt]


@st.composite
def caption_files(draw) -> tuple[str, bytes]:
    fmt = draw(st.sampled_from(list(CAPTION_FORMATS)))
    return fmt, draw(mangled(draw(caption_file(fmt, draw(corruption)))))


SUFFIX = {"jsonl": ".jsonl", "msrvtt-json": ".json"}


@FUZZ_PURE
@given(case=caption_files())
def test_caption_parsers_fail_cleanly(tmp_path, case):
    fmt, data = case
    path = write(tmp_path / f"captions{SUFFIX.get(fmt, '.csv')}", data)
    outcome(lambda: list(CAPTION_FORMATS[fmt].parse(path)), path)


INVALID_CAPTION_VALUES = {
    "video_id": [None, True, 1.5, [], {}, "", " ", "x" * 256, "\x00", "\ud800", 2**63],
    "caption_id": [None, False, [], "", "a\x00", "\udc00", 2**64],
    "caption": [None, 1, "", "  ", "\x00", "\ud800", ["a"]],
    "split": [1, "x" * 33, "\x00", []],
    "video_path": ["../x.mp4", "/etc/passwd", "a\\b.mp4", 1, "a\x00.mp4"],
    "start": ["abc", -1, float("nan"), float("inf"), True, [], 10**400],
    "duration": ["abc", -0.5, 0, float("-inf"), {}],
    "is_query": ["maybe", 2, [], 1.0],
    "verb_classes": ["x", [1.5], {"a": 1}, [2**64], "[1, 2", "[" * 3000],
}


@FUZZ_PURE
@given(
    count=st.integers(1, 6),
    data=st.data(),
    field=st.sampled_from(sorted(INVALID_CAPTION_VALUES)),
)
def test_jsonl_error_names_line_and_field(tmp_path, count, data, field):
    """One bad value on one line: the error names exactly that line and that field."""
    bad_line = data.draw(st.integers(1, count))
    value = data.draw(st.sampled_from(INVALID_CAPTION_VALUES[field]))
    lines = []
    for line in range(1, count + 1):
        record = {"video_id": "v1", "caption_id": f"c{line}", "caption": "a cat", "split": "test"}
        if line == bad_line:
            record[field] = value
        lines.append(json.dumps(record))
    path = write(tmp_path / "captions.jsonl", ("\n".join(lines) + "\n").encode())
    with pytest.raises(FormatError) as error:
        list(CAPTION_FORMATS["jsonl"].parse(path))
    check_format_error(error.value, path)
    assert (error.value.line, error.value.field) == (bad_line, field), str(error.value)


@FUZZ_PURE
@given(count=st.integers(1, 5), data=st.data())
def test_jsonl_duplicate_field_is_named(tmp_path, count, data):
    """A field written twice in one object is refused (json.loads would keep the last)."""
    bad_line = data.draw(st.integers(1, count))
    field = data.draw(st.sampled_from(["video_id", "caption_id", "caption", "split"]))
    lines = []
    for line in range(1, count + 1):
        text = f'{{"video_id": "v1", "caption_id": "c{line}", "caption": "a cat", "split": ""}}'
        if line == bad_line:
            text = text[:-1] + f', "{field}": "again"}}'
        lines.append(text)
    path = write(tmp_path / "captions.jsonl", ("\n".join(lines) + "\n").encode())
    with pytest.raises(FormatError) as error:
        list(CAPTION_FORMATS["jsonl"].parse(path))
    assert (error.value.line, error.value.field) == (bad_line, field), str(error.value)


INVALID_CSV_CELLS = {
    "video_id": ["", " ", "x" * 256],
    "caption": ["", "   "],
    "split": ["x" * 33],
    "video_path": ["../x.mp4", "/abs.mp4", "a\\b.mp4"],
    "start": ["abc", "-1", "nan", "inf", "1e999", "9" * 400],
    "is_query": ["maybe", "2"],
    "noun_classes": ["x", "[1, 2", "1.5", "9" * 50],
}


@FUZZ_PURE
@given(
    count=st.integers(1, 6),
    data=st.data(),
    field=st.sampled_from(sorted(INVALID_CSV_CELLS)),
)
def test_csv_error_names_line_and_field(tmp_path, count, data, field):
    bad_row = data.draw(st.integers(1, count))
    value = data.draw(st.sampled_from(INVALID_CSV_CELLS[field]))
    buffer = io.StringIO()
    columns = list(
        dict.fromkeys(["video_id", "caption_id", "caption", "split", *INVALID_CSV_CELLS])
    )
    writer = csv.DictWriter(buffer, columns, lineterminator="\n")
    writer.writeheader()
    for row in range(1, count + 1):
        values = {"video_id": "v1", "caption_id": f"c{row}", "caption": "a cat", "split": "test"}
        if row == bad_row:
            values[field] = value
        writer.writerow(values)
    path = write(tmp_path / "captions.csv", buffer.getvalue().encode())
    with pytest.raises(FormatError) as error:
        list(CAPTION_FORMATS["csv"].parse(path))
    assert (error.value.line, error.value.field) == (bad_row + 1, field), str(error.value)


# --- TREC runs and qrels --------------------------------------------------------------------

trec_token = st.one_of(
    st.sampled_from(["c0", "v0", "nope", "Q0", "0", "1", "-1", "run"]),
    st.sampled_from(["nan", "inf", "-Infinity", "1e999", "9" * 400, "1e-400", "#c0", "+5"]),
    odd_text.filter(lambda text: text.strip() and not any(c.isspace() for c in text)),
)
score = st.one_of(st.floats(-10, 10), st.sampled_from(["1e308", "-2e5", "0"]))
run_id = st.sampled_from(["r", "r", "r", "other"])


@FUZZ_PURE
@given(data=st.data(), kind=st.sampled_from(["run", "qrels"]))
def test_trec_parsers_fail_cleanly(tmp_path, data, kind):
    text = data.draw(trec_text(kind, data.draw(corruption)))
    path = write(tmp_path / f"file.{kind}", data.draw(mangled(text)))
    reader = trec.read_run if kind == "run" else trec.read_qrels
    outcome(lambda: reader(path), path)


@FUZZ_PURE
@given(
    count=st.integers(1, 6),
    data=st.data(),
    score=st.sampled_from(["nan", "inf", "-inf", "1e999", "abc", "0x10", "1,5", "--1"]),
    rel=st.sampled_from(["1.5", "x", "9" * 40, "-" + "9" * 5000, "1e3", "nan"]),
)
def test_trec_errors_name_line_and_field(tmp_path, count, data, score, rel):
    bad = data.draw(st.integers(1, count))
    run = [f"c{i} Q0 v{i} {i} {score if i == bad else 0.5} r" for i in range(1, count + 1)]
    path = write(tmp_path / "bad.run", ("\n".join(run) + "\n").encode())
    with pytest.raises(FormatError) as error:
        trec.read_run(path)
    assert (error.value.line, error.value.field) == (bad, "score"), str(error.value)
    qrels = [f"c{i} 0 v{i} {rel if i == bad else 1}" for i in range(1, count + 1)]
    path = write(tmp_path / "bad.qrels", ("\n".join(qrels) + "\n").encode())
    with pytest.raises(FormatError) as error:
        trec.read_qrels(path)
    assert (error.value.line, error.value.field) == (bad, "rel"), str(error.value)


# --- label files ----------------------------------------------------------------------------


def label_fields(index: int) -> dict:
    return {
        "caption_key": st.just(CAPTION_KEYS[index]),
        "video_key": video_key,
        "caption": caption_text,
        "label": label_name,
        "labels": st.integers(0, 5),
        "adjudicated": st.booleans(),
        "annotators": st.lists(st.sampled_from(["ann1", "ann2"]), max_size=2),
        "runs": st.dictionaries(st.sampled_from(["r1", "r2"]), st.integers(1, 20), max_size=2),
        "auto_label": st.sampled_from(["", "bow>=0.90"]),
    }


def label_cells(index: int) -> dict:
    return {
        "caption_key": st.just(CAPTION_KEYS[index]),
        "video_key": video_key,
        "caption": caption_text,
        "label": label_name,
        "labels": st.sampled_from(["", "0", "3"]),
        "adjudicated": st.sampled_from(["", "true", "false"]),
        "annotators": st.sampled_from(["", "ann1", "ann1;ann2"]),
        "rank:r1": st.sampled_from(["", "1", "7"]),
    }


def raw_fields(index: int) -> dict:
    return {
        "caption_id": st.just(CAPTION_KEYS[index]),
        "video_id": video_key,
        "annotator": st.sampled_from(["ann1", "ann2", 7]),
        "label": st.sampled_from(["relevant", "irrelevant"]),
        "seconds": seconds,
        "created_at": st.sampled_from([None, "2024-05-01T10:00:00+00:00"]),
    }


@st.composite
def jsonl_lines(draw, fields, rate: int) -> str:
    """JSON Lines of ``fields(index)`` objects, with the odd non-object or blank line."""
    lines = []
    for index in range(draw(st.integers(0, 6))):
        if draw(st.integers(0, 99)) < rate:
            lines.append(draw(st.sampled_from(["", json.dumps(draw(odd_json))])))
        else:
            lines.append(draw(json_object_text(fields(index), rate)))
    return "\n".join(lines) + "\n"


FIRE_ENTRY = {
    "query": caption_text,
    "video_id": video_key,
    "label": st.sampled_from(["relevant", "irrelevant", True, 0]),
    "annotator_ids": st.just(["a1", 2]),
    "annotator_labels": st.just(["relevant", False]),
    "response_ids": st.lists(st.integers(0, 9), max_size=2),
    "queue_ids": st.lists(st.integers(0, 9), max_size=2),
    "models": st.lists(st.sampled_from(["CE", "SSB"]), max_size=2),
    "dataset": st.just("MSRVTT"),
}


@st.composite
def fire_text(draw, rate: int) -> str:
    if draw(st.integers(0, 99)) < rate // 3:
        return json.dumps(draw(odd_json))
    arrays = {}
    for name in ("annotations", "disagreements"):
        entries = [draw(json_object_text(FIRE_ENTRY, rate)) for _ in range(draw(st.integers(0, 4)))]
        if draw(st.integers(0, 99)) < rate:
            entries.append(json.dumps(draw(odd_json)))
        arrays[name] = "[" + ", ".join(entries) + "]"
    if draw(st.integers(0, 99)) < rate:
        arrays.pop(draw(st.sampled_from(sorted(arrays))))
    if draw(st.integers(0, 99)) < rate:
        arrays["annotations"] = json.dumps(draw(odd_json))
    parts = [f"{json.dumps(name)}: {value}" for name, value in arrays.items()]
    parts.append(f'"source_ds": {json.dumps(draw(odd_json))}')
    return "{" + ", ".join(parts) + "}"


@st.composite
def trec_text(draw, layout: str, rate: int) -> str:
    """Run (``qid Q0 docno rank score run``) or qrels lines, with odd tokens and widths."""
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        if layout == "run":
            fields = [caption_key, st.just("Q0"), video_key, st.integers(1, 9), score, run_id]
        else:
            fields = [caption_key, st.just("0"), video_key, st.sampled_from(["1", "0", "-1"])]
        tokens = [
            draw(trec_token) if draw(st.integers(0, 99)) < rate else str(draw(field))
            for field in fields
        ]
        if draw(st.integers(0, 99)) < rate:
            tokens = tokens[: draw(st.integers(1, len(tokens)))] + [draw(trec_token)]
        lines.append(" ".join(tokens))
    return "\n".join(lines) + "\n"


def label_file(fmt: str, rate: int) -> st.SearchStrategy[str]:
    return {
        "qrels": trec_text("qrels", rate),
        "fire-json": fire_text(rate),
        "jsonl": jsonl_lines(label_fields, rate),
        "csv": csv_text(list(label_cells(0)), label_cells, rate),
        "raw": jsonl_lines(raw_fields, rate),
    }[fmt]


LABEL_READERS = {
    "qrels": trec.read_qrels,
    "fire-json": fire_json.read_fire_json,
    "jsonl": lambda path: list(labels.read_jsonl(path)),
    "csv": lambda path: list(labels.read_csv(path)),
    "raw": lambda path: list(labels.read_raw_jsonl(path)),
}


@st.composite
def label_files(draw) -> tuple[str, bytes]:
    fmt = draw(st.sampled_from(IMPORT_FORMATS))
    return fmt, draw(mangled(draw(label_file(fmt, draw(corruption)))))


@FUZZ_PURE
@given(case=label_files())
def test_label_readers_fail_cleanly(tmp_path, case):
    fmt, data = case
    path = write(tmp_path / f"labels.{fmt}", data)
    outcome(lambda: LABEL_READERS[fmt](path), path)


INVALID_LABEL_VALUES = {
    "caption_key": [None, [], "", "\x00", "\ud800", 2**64],
    "label": ["maybe", 1, None, True, "\x00"],
    "labels": [-1, 32768, 2**64, "x", 1.5, True],
    "adjudicated": ["perhaps", 3, []],
    "annotators": ["ann1", [None], [""], {}],
    "runs": [[], {"r": 0}, {"r": -3}, {"r": "x"}, {"": 1}, {"r": 2**64}],
}


@FUZZ_PURE
@given(
    count=st.integers(1, 5),
    data=st.data(),
    field=st.sampled_from(sorted(INVALID_LABEL_VALUES)),
)
def test_label_jsonl_error_names_line_and_field(tmp_path, count, data, field):
    bad = data.draw(st.integers(1, count))
    value = data.draw(st.sampled_from(INVALID_LABEL_VALUES[field]))
    lines = []
    for line in range(1, count + 1):
        record = {"caption_key": f"c{line}", "video_key": "v1", "label": "relevant"}
        if line == bad:
            record[field] = value
        lines.append(json.dumps(record))
    path = write(tmp_path / "labels.jsonl", ("\n".join(lines) + "\n").encode())
    with pytest.raises(FormatError) as error:
        list(labels.read_jsonl(path))
    assert (error.value.line, error.value.field) == (bad, field), str(error.value)


INVALID_FIRE_VALUES = {
    "query": [None, [], {}, "", "  ", "\x00", "\ud800", 3, float("nan")],
    "video_id": [None, [], "", "\x00", 2**64, 1.5, True],
    "label": [None, [], "maybe", 2, -1, float("nan"), "\x00"],
    "annotator_labels": [{}, "relevant", ["maybe"], [2], [None]],
    "models": [{}, "CE", [None], [""], [1.5], ["\ud800"]],
}


@FUZZ_PURE
@given(
    count=st.integers(1, 5),
    data=st.data(),
    field=st.sampled_from(sorted(INVALID_FIRE_VALUES)),
)
def test_fire_json_error_names_entry_and_field(tmp_path, count, data, field):
    bad = data.draw(st.integers(0, count - 1))
    value = data.draw(st.sampled_from(INVALID_FIRE_VALUES[field]))
    entries = []
    for index in range(count):
        entry = {"query": f"cap {index}", "video_id": "v1", "label": "relevant"}
        if index == bad:
            entry[field] = value
        entries.append(entry)
    path = write(
        tmp_path / "fire.json",
        json.dumps({"annotations": entries, "disagreements": []}).encode(),
    )
    with pytest.raises(FormatError) as error:
        fire_json.read_fire_json(path)
    check_format_error(error.value, path)
    assert (error.value.line, error.value.field) == (bad, field), str(error.value)
    assert f"annotations[{bad}]" in str(error.value)


# --- embeddings (.npy and id files) ---------------------------------------------------------

DTYPES = ["<f4", "<f8", "<f2", "<i4", "|u1", "|b1", "<c8", "<U3", "|S2", "V8", "O"]


@st.composite
def npy_bytes(draw, rows: int, broken: bool) -> bytes:
    """A float32 rows x 3 .npy file, or (``broken``) one of the ways such a file goes wrong."""
    if not broken:
        buffer = io.BytesIO()
        np.save(buffer, np.arange(rows * 3, dtype=np.float32).reshape(rows, 3))
        return buffer.getvalue()
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(max_size=200))
    if kind == 1:
        buffer = io.BytesIO()
        np.savez(buffer, captions=np.zeros((rows, 3)))
        return buffer.getvalue()
    if kind == 2:
        return pickle.dumps(np.zeros((rows, 3)))
    dtype = draw(st.sampled_from(DTYPES)) if draw(st.booleans()) else "<f4"
    shape = draw(
        st.sampled_from([(rows, 3), (rows, 3), (rows,), (rows, 3, 2), (0, 3), (rows, 0), ()])
    )
    if dtype == "O":
        array = np.empty(shape, dtype=object)
    elif dtype == "V8":
        array = np.zeros(shape, dtype=[("a", "<f4"), ("b", "<f4")])
    else:
        array = np.ones(shape, dtype=dtype)
    if array.size and array.dtype.kind == "f" and draw(st.booleans()):
        flat = array.reshape(-1)
        value = draw(st.sampled_from([np.nan, np.inf, -np.inf, 1e300]))
        with np.errstate(over="ignore"):
            flat[draw(st.integers(0, flat.size - 1))] = value
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    data = buffer.getvalue()
    change = draw(st.integers(0, 5))
    if change == 0:
        return data[: draw(st.integers(0, len(data)))]  # truncated
    if change == 1:
        at = draw(st.integers(0, len(data) - 1))
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    if change == 2:
        return data.replace(b"'shape': (", b"'shape': (100000000000, ", 1)  # a huge claim
    return data


@st.composite
def id_lines(draw, keys: list[str], broken: bool) -> bytes:
    """One key per line; ``broken`` lists an odd key (long, blank, repeated) or mangles."""
    keys = list(keys)
    if broken and draw(st.booleans()):
        keys[draw(st.integers(0, len(keys) - 1))] = draw(
            st.sampled_from(["x" * 300, " ", keys[0], "unknown"])
        )
        return ("\n".join(keys) + "\n").encode()
    text = "\n".join(keys) + "\n"
    return draw(mangled(text)) if broken else text.encode()


@st.composite
def embedding_dirs(draw) -> dict[str, bytes]:
    """An embeddings directory, well formed or with one or more files broken."""
    rows = draw(st.integers(1, 4))
    broken = draw(st.sets(st.sampled_from(embeddings.FILES), max_size=2))
    files = {
        "captions.npy": draw(npy_bytes(rows, "captions.npy" in broken)),
        "videos.npy": draw(npy_bytes(rows, "videos.npy" in broken)),
        "caption_ids.txt": draw(id_lines(CAPTION_KEYS[:rows], "caption_ids.txt" in broken)),
        "video_ids.txt": draw(id_lines(VIDEO_KEYS[:rows], "video_ids.txt" in broken)),
    }
    if draw(st.integers(0, 9)) == 0:
        files.pop(draw(st.sampled_from(sorted(files))))
    return files


def write_dir(directory: Path, files: dict[str, bytes]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        old.unlink()
    for name, data in files.items():
        (directory / name).write_bytes(data)
    return directory


@FUZZ_PURE
@given(files=embedding_dirs())
def test_embeddings_reader_fails_cleanly(tmp_path, files):
    directory = write_dir(tmp_path / "emb", files)
    try:
        read = embeddings.read_embeddings(directory)
    except FormatError as exc:
        assert any(name in str(exc) for name in embeddings.FILES), str(exc)
        check_format_error(exc, exc.path)
        return
    assert read.captions.dtype == np.float32 and read.captions.ndim == 2
    assert np.isfinite(read.captions).all() and np.isfinite(read.videos).all()


# --- class files ----------------------------------------------------------------------------

CLASS_CELLS = {
    "id": st.sampled_from(["0", "1", "12", ""]),
    "key": st.sampled_from(["put", "take", "pan:frying", ""]),
    "instances": st.sampled_from(
        ["['put', 'place']", "['pan:frying']", "[]", "{[1]: 2}", "{'a': 1}", "1e999", "b'xy'"]
    ),
}


@FUZZ_PURE
@given(data=st.data())
def test_class_file_reader_fails_cleanly(tmp_path, data):
    text = data.draw(csv_text(list(CLASS_CELLS), lambda index: CLASS_CELLS, data.draw(corruption)))
    path = write(tmp_path / "verb_classes.csv", data.draw(mangled(text)))
    try:
        read_class_file(path)
    except ClassFileError as exc:
        assert str(exc).startswith(str(path)), str(exc)


# --- importers that write to the database ---------------------------------------------------


def table_counts() -> dict[str, int]:
    """Rows of every table an import may write."""
    return {
        model.__name__: model.objects.count()
        for model in (Dataset, Video, Caption, LabelSet, RetrievalModel, Run)
    }


@pytest.fixture
def world(db):
    """A dataset whose keys the fuzzed files name (and some keys they do not)."""
    dataset = Dataset.objects.create(name="world")
    videos = Video.objects.bulk_create(
        [Video(dataset=dataset, key=key, split="test") for key in VIDEO_KEYS]
    )
    Caption.objects.bulk_create(
        [
            Caption(
                dataset=dataset,
                key=key,
                text=["a man sings", "a dog runs on grass", "someone cooks"][i % 3],
                video=videos[i % len(videos)],
                split="test",
                is_query=True,
            )
            for i, key in enumerate(CAPTION_KEYS)
        ]
    )
    return dataset


def rolled_back(call) -> None:
    """Run ``call`` in a savepoint that is always rolled back, so examples stay independent.

    Inside, a failing import must leave every table as it found it.
    """
    with transaction.atomic():
        before = table_counts()
        try:
            call()
            event("success")
        except (FormatError, ImportOptionError, LabelSetError, registration.RegistrationError):
            assert table_counts() == before
            event("error, nothing written")
            raise
        finally:
            transaction.set_rollback(True)


@FUZZ
@given(case=caption_files(), target=st.sampled_from(["fuzz", "world"]))
def test_import_dataset_is_all_or_nothing(world, tmp_path, case, target):
    fmt, data = case
    path = write(tmp_path / f"captions{SUFFIX.get(fmt, '.csv')}", data)
    try:
        rolled_back(lambda: import_dataset(target, fmt, path))
    except FormatError as exc:
        check_format_error(exc, path)


VIDEO_PATHS = [
    "clips/v0.mp4",
    "clips/fake.mp4",
    "clips/notes.txt",
    "clips/escape.mp4",
    "linked/v3.mp4",
    "../outside/secret.mp4",
    "clips/../../outside/secret.mp4",
    "/etc/passwd",
    "clips/missing.webm",
    "clips/" + "x" * 300 + ".mp4",
    "x/" * 200 + "v.mp4",
    "clips/v0.mp4\x00",
]


@pytest.fixture
def video_tree(tmp_path):
    """A videos directory with a real clip, a fake one, a text file and links leading out."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42")
    (outside / "v3.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42")
    videos = tmp_path / "videos"
    (videos / "clips").mkdir(parents=True)
    (videos / "clips" / "v0.mp4").write_bytes(playable_bytes())
    (videos / "v1.webm").write_bytes(b"\x1a\x45\xdf\xa3")
    (videos / "v2.mp4").symlink_to(outside / "secret.mp4")
    (videos / "clips" / "fake.mp4").write_text("not a video")
    (videos / "clips" / "notes.txt").write_bytes(b"\x00\x00\x00\x18ftypmp42")
    (videos / "clips" / "escape.mp4").symlink_to(outside / "secret.mp4")
    (videos / "linked").symlink_to(outside, target_is_directory=True)
    return videos


@FUZZ
@given(
    rows=st.lists(
        st.tuples(video_key, st.one_of(st.none(), st.sampled_from(VIDEO_PATHS))),
        min_size=1,
        max_size=4,
    )
)
def test_imported_videos_stay_inside_their_directory(db, tmp_path, video_tree, rows):
    """Whatever paths a file names, only real videos inside the directory are imported."""
    lines = [
        json.dumps({**record(key, index), **({"video_path": path} if path else {})})
        for index, (key, path) in enumerate(rows)
    ]
    path = write(tmp_path / "captions.jsonl", ("\n".join(lines) + "\n").encode())
    media_root = Path(settings.MEDIA_ROOT).resolve()
    base = video_tree.resolve()
    try:
        rolled_back(lambda: _check_media(import_dataset("tree", "jsonl", path, video_tree)))
    except FormatError as exc:
        check_format_error(exc, path)
        assert exc.line is not None and exc.field in ("video_id", "video_path"), str(exc)
    for link in (media_root / "datasets").glob("*"):
        link.unlink()  # the media link of a rolled-back success
    assert base.is_dir() and media_root.is_dir()


def record(key: str, index: int) -> dict:
    return {"video_id": key, "caption_id": f"n{index}", "caption": "a cat", "split": "test"}


def _check_media(summary) -> None:
    """Every imported video file resolves inside the videos directory and is a video."""
    media_root = Path(settings.MEDIA_ROOT)
    for media in Video.objects.filter(dataset__name="tree").values_list("media", flat=True):
        target = (media_root / media).resolve(strict=True)
        assert target.is_relative_to((media_root / summary.media_link).resolve()), media
        assert is_video_container(target.read_bytes()[:16]), media


@FUZZ
@given(case=label_files(), existing=st.booleans(), replace=st.booleans())
def test_import_labels_is_all_or_nothing(world, tmp_path, case, existing, replace):
    fmt, data = case
    path = write(tmp_path / f"labels.{fmt}", data)
    name = "labels" if existing else "fresh"
    LabelSet.objects.get_or_create(dataset=world, name="labels", source="jsonl")
    try:
        rolled_back(lambda: import_label_file(world, path, fmt, name, replace=replace))
    except FormatError as exc:
        check_format_error(exc, path)
    except LabelSetError as exc:
        assert "already has a label set" in str(exc)


@FUZZ
@given(files=embedding_dirs())
def test_register_embeddings_is_all_or_nothing(world, tmp_path, files):
    directory = write_dir(tmp_path / "emb", files)
    try:
        rolled_back(lambda: registration.register_embeddings(world, "up", directory))
    except FormatError as exc:
        assert any(name in str(exc) for name in embeddings.FILES), str(exc)


@st.composite
def run_files(draw) -> bytes:
    return draw(mangled(draw(trec_text("run", draw(corruption)))))


@FUZZ
@given(data=run_files())
def test_register_run_file_is_all_or_nothing(world, tmp_path, data):
    path = write(tmp_path / "model.run", data)
    try:
        rolled_back(lambda: registration.register_run_file(world, "theirs", path))
    except FormatError as exc:
        check_format_error(exc, path)


# --- the management commands that wrap them -------------------------------------------------


@FUZZ
@given(case=caption_files())
def test_import_dataset_command_reports_errors(db, tmp_path, case):
    fmt, data = case
    path = write(tmp_path / f"captions{SUFFIX.get(fmt, '.csv')}", data)
    with transaction.atomic():
        try:
            call_command(
                "import_dataset",
                name="cmd",
                format=fmt,
                captions=path,
                quiet=True,
                stdout=io.StringIO(),
            )
        except CommandError as exc:
            assert path.name in str(exc)
        transaction.set_rollback(True)


@FUZZ
@given(case=label_files())
def test_import_labels_command_reports_errors(world, tmp_path, case):
    fmt, data = case
    path = write(tmp_path / f"labels.{fmt}", data)
    with transaction.atomic():
        try:
            call_command(
                "import_labels", str(path), dataset="world", format=fmt, stdout=io.StringIO()
            )
        except CommandError as exc:
            assert path.name in str(exc)
        transaction.set_rollback(True)


@FUZZ
@given(data=run_files(), files=embedding_dirs(), source=st.sampled_from(["run", "embeddings"]))
def test_register_model_command_reports_errors(world, tmp_path, data, files, source):
    if source == "run":
        target = write(tmp_path / "model.run", data)
        names = [target.name]
    else:
        target = write_dir(tmp_path / "emb", files)
        names = list(embeddings.FILES)
    with transaction.atomic():
        try:
            call_command(
                "register_model",
                dataset="world",
                name="m",
                stdout=io.StringIO(),
                **{source: target},
            )
        except CommandError as exc:
            assert any(name in str(exc) for name in names), str(exc)
        transaction.set_rollback(True)
