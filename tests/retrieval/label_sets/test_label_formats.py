"""Label files, raw labels and the FIRE release layout: exact round trips and located errors."""

import json

import pytest

from retrieval.formats.fire_json import (
    FireDocument,
    FireEntry,
    entry_dict,
    fire_json_chunks,
    read_fire_json,
)
from retrieval.formats.labels import (
    LabelRecord,
    RawLabel,
    csv_lines,
    jsonl_lines,
    raw_lines,
    read_csv,
    read_jsonl,
    read_raw_jsonl,
)
from retrieval.formats.records import FormatError

RECORDS = [
    LabelRecord(
        "c1",
        "v1",
        1,
        votes=3,
        adjudicated=False,
        caption='a man says "hi", then\nleaves; café ☕',
        annotators=("ann1", "ann2", "ann3"),
        runs={"clip4clip": 1, "ssb run": 7},
    ),
    LabelRecord("c1", "v2", 0, votes=2, caption="plain", annotators=("ann1", "ann2")),
    LabelRecord("c2", "v1", -1, votes=2, adjudicated=True, runs={"ssb run": 12}),
    LabelRecord("c3", "v9", 1, caption="carriage\r\nreturn, and\rmore"),
]
RUN_NAMES = ["clip4clip", "ssb run", "ce"]


def write(path, chunks):
    path.write_text("".join(chunks), encoding="utf-8", newline="")
    return path


def error(read, path):
    """The FormatError raised while reading ``path`` to the end."""
    with pytest.raises(FormatError) as caught:
        result = read(path)
        if not isinstance(result, FireDocument):
            list(result)
    return caught.value


# Label files.


def test_jsonl_round_trip(tmp_path):
    path = write(tmp_path / "labels.jsonl", jsonl_lines(RECORDS))
    records = list(read_jsonl(path))
    assert records == RECORDS
    assert [record.line for record in records] == [1, 2, 3, 4]


def test_csv_round_trip_with_quotes_newlines_unicode_and_runs(tmp_path):
    chunks = list(csv_lines(iter(RECORDS), RUN_NAMES))
    assert chunks[0] == (
        "caption_key,video_key,caption,label,labels,adjudicated,annotators,"
        "rank:clip4clip,rank:ssb run,rank:ce\n"
    )
    assert all(chunk.endswith("\n") for chunk in chunks)
    path = write(tmp_path / "labels.csv", chunks)
    records = list(read_csv(path))
    assert records == RECORDS
    # The first record's caption spans two physical lines.
    assert [record.line for record in records] == [2, 4, 5, 6]


def test_confidence_round_trips_in_jsonl_csv_and_fire_json(tmp_path):
    records = [
        LabelRecord("c1", "v1", 1, votes=2, confidence=0.875),
        LabelRecord("c1", "v2", 0, votes=1, confidence=0.0),
        LabelRecord("c2", "v1", 0, votes=1),
    ]
    path = write(tmp_path / "c.jsonl", jsonl_lines(records))
    assert list(read_jsonl(path)) == records
    assert "confidence" not in path.read_text().splitlines()[2]
    path = write(tmp_path / "c.csv", csv_lines(records, [], confidence=True))
    assert path.read_text().splitlines()[0].endswith(",confidence")
    assert list(read_csv(path)) == records
    with pytest.raises(ValueError, match="bad confidence"):
        list(jsonl_lines([LabelRecord("c1", "v1", 1, confidence=1.5)]))
    entry = FireEntry("a caption", "v1", 1, ("a",), (1,), confidence=0.75)
    assert entry_dict(entry)["confidence"] == 0.75
    path = write(tmp_path / "c.fire.json", fire_json_chunks({}, [entry], []))
    assert read_fire_json(path).annotations == [entry]


@pytest.mark.parametrize("value", ["1.5", "-0.1", "high", "true"])
def test_a_bad_confidence_names_line_and_field(tmp_path, value):
    path = tmp_path / "c.csv"
    path.write_text(
        f"caption_key,video_key,label,confidence\nc1,v1,relevant,0.5\nc1,v2,relevant,{value}\n"
    )
    caught = error(read_csv, path)
    assert (caught.line, caught.field) == (3, "confidence")


def test_csv_reads_minimal_columns_and_skips_empty_rank_cells(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text(
        "video_key,label,caption_key,rank:a,rank:b,notes\n"
        "v1,relevant,c1,,3,x\n"
        "v2, Irrelevant ,c1,1,,\n",
        encoding="utf-8",
    )
    assert list(read_csv(path)) == [
        LabelRecord("c1", "v1", 1, runs={"b": 3}),
        LabelRecord("c1", "v2", 0, runs={"a": 1}),
    ]


def test_jsonl_defaults_and_integer_keys(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(
        '\n{"caption_key": 7, "video_key": "v1", "label": "disagreement"}\n\n', encoding="utf-8"
    )
    [record] = read_jsonl(path)
    assert record == LabelRecord("7", "v1", -1)
    assert record.line == 2


def test_writers_reject_what_would_not_read_back():
    with pytest.raises(ValueError, match="';'"):
        list(csv_lines([LabelRecord("c", "v", 1, annotators=("a;b",))], []))
    with pytest.raises(ValueError, match="not in run_names"):
        list(csv_lines([LabelRecord("c", "v", 1, runs={"x": 1})], ["y"]))
    with pytest.raises(ValueError, match="label code"):
        list(jsonl_lines([LabelRecord("c", "v", 2)]))
    with pytest.raises(ValueError, match="bad rank"):
        list(jsonl_lines([LabelRecord("c", "v", 1, runs={"x": 0})]))
    with pytest.raises(ValueError, match="surrounding blanks"):
        list(jsonl_lines([LabelRecord(" c", "v", 1)]))


LABEL_JSONL_ERRORS = [
    ("{not json}", 1, None, "invalid JSON"),
    ("[1, 2]", 1, None, "expected a JSON object"),
    ('{"video_key": "v", "label": "relevant"}', 1, "caption_key", "missing"),
    ('{"caption_key": "", "video_key": "v", "label": "relevant"}', 1, "caption_key", "empty"),
    ('{"caption_key": "c", "video_key": "v", "label": "maybe"}', 1, "label", "unknown label"),
    ('{"caption_key": "c", "video_key": "v", "label": 1}', 1, "label", "label name"),
    ('{"caption_key": "c", "video_key": "v", "label": "relevant", "labels": -1}', 1, "labels", "negative"),
    ('{"caption_key": "c", "video_key": "v", "label": "relevant", "labels": 1.5}', 1, "labels", "integer"),
    ('{"caption_key": "c", "video_key": "v", "label": "relevant", "runs": {"r": 0}}', 1, "runs", "at least 1"),
    ('{"caption_key": "c", "video_key": "v", "label": "relevant", "runs": {"r": "x"}}', 1, "runs", "integer"),
    ('{"caption_key": "c", "video_key": "v", "label": "relevant", "runs": [1]}', 1, "runs", "object"),
    ('{"caption_key": "c", "video_key": "v", "label": "relevant", "annotators": "a"}', 1, "annotators", "list"),
    ('{"caption_key": "c", "video_key": "v", "label": "relevant", "adjudicated": "x"}', 1, "adjudicated", "true or false"),
    (
        '{"caption_key": "c", "video_key": "v", "label": "relevant"}\n'
        '{"caption_key": "c", "video_key": "v", "label": "irrelevant"}',
        2,
        "video_key",
        "already labelled on line 1",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("text", "line", "field", "message"), LABEL_JSONL_ERRORS)
def test_jsonl_errors_name_file_line_and_field(tmp_path, text, line, field, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(text + "\n", encoding="utf-8")
    exc = error(read_jsonl, path)
    assert (exc.line, exc.field) == (line, field)
    assert message in exc.message
    assert str(exc).startswith(f"{path}, line {line}")
    if field:
        assert f"field {field!r}" in str(exc)


HEADER = "caption_key,video_key,label,labels,rank:r1\n"
LABEL_CSV_ERRORS = [
    (HEADER + "c,v,sometimes,,\n", 2, "label", "unknown label"),
    (HEADER + "c,v,relevant,-2,\n", 2, "labels", "negative"),
    (HEADER + "c,v,relevant,two,\n", 2, "labels", "not an integer"),
    (HEADER + "c,v,relevant,,0\n", 2, "rank:r1", "at least 1"),
    (HEADER + "c,v,relevant,,1.5\n", 2, "rank:r1", "not an integer"),
    (HEADER + "c,v,relevant,,\nx,y,relevant,,\nc,v,irrelevant,,\n", 4, "video_key", "line 2"),
    ("caption_key,video_key,labels\n", 1, "label", "missing required column"),
    ("caption_key,video_key,label,rank:\nc,v,relevant,\n", 1, "rank:", "without a run name"),
]


@pytest.mark.parametrize(("text", "line", "field", "message"), LABEL_CSV_ERRORS)
def test_csv_errors_name_file_line_and_field(tmp_path, text, line, field, message):
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    exc = error(read_csv, path)
    assert (exc.line, exc.field) == (line, field)
    assert message in exc.message
    assert str(exc).startswith(f"{path}, line {line}, field {field!r}")


@pytest.mark.parametrize(
    ("read", "text"),
    [
        (read_jsonl, ""),
        (read_jsonl, "\n  \n"),
        (read_csv, "caption_key,video_key,label\n"),
        (read_raw_jsonl, "\n"),
    ],
)
def test_a_file_without_labels_is_an_error(tmp_path, read, text):
    path = tmp_path / "empty"
    path.write_text(text, encoding="utf-8")
    exc = error(read, path)
    assert exc.line is None
    assert "no labels" in str(exc)
    assert str(exc).startswith(str(path))


def test_a_missing_file_is_a_format_error(tmp_path):
    path = tmp_path / "absent.jsonl"
    assert str(path) in str(error(read_jsonl, path))


# Raw labels.

RAW = [
    RawLabel("c1", "v1", "ann1", 1, seconds=3.25, created_at="2024-05-01T10:00:00+00:00"),
    RawLabel("c1", "v1", "ann2", 0),
    RawLabel("c1", "v2", "ann1", 0, seconds=0.0, created_at="2024-05-01T10:00:07Z"),
    RawLabel("c2 ünï", "v1", "42", 1, seconds=12.5),
]


def test_raw_round_trip(tmp_path):
    path = write(tmp_path / "raw.jsonl", raw_lines(RAW))
    labels = list(read_raw_jsonl(path))
    assert labels == RAW
    assert [label.line for label in labels] == [1, 2, 3, 4]


def test_raw_accepts_integer_ids(tmp_path):
    path = tmp_path / "raw.jsonl"
    path.write_text(
        '{"caption_id": 12, "video_id": 7, "annotator": 3, "label": "relevant"}\n',
        encoding="utf-8",
    )
    assert list(read_raw_jsonl(path)) == [RawLabel("12", "7", "3", 1)]


def raw(**changes):
    values = {"caption_id": "c", "video_id": "v", "annotator": "a", "label": "relevant"}
    values.update(changes)
    return json.dumps({key: value for key, value in values.items() if value is not ...})


RAW_ERRORS = [
    ('{"caption_id": "c",', 1, None, "invalid JSON"),
    ('"just a string"', 1, None, "expected a JSON object"),
    (raw(caption_id=...), 1, "caption_id", "missing"),
    (raw(video_id=""), 1, "video_id", "empty key"),
    (raw(annotator=None), 1, "annotator", "expected a string"),
    (raw(label="yes"), 1, "label", "unknown label"),
    (raw(label="disagreement"), 1, "label", "cannot be 'disagreement'"),
    (raw(seconds=-1), 1, "seconds", "negative"),
    (raw(seconds="inf"), 1, "seconds", "finite"),
    (raw(created_at="yesterday"), 1, "created_at", "ISO 8601"),
    (raw() + "\n\n" + raw(label="irrelevant"), 3, "annotator", "on line 1"),
]


@pytest.mark.parametrize(("text", "line", "field", "message"), RAW_ERRORS)
def test_raw_errors_name_file_line_and_field(tmp_path, text, line, field, message):
    path = tmp_path / "raw.jsonl"
    path.write_text(text + "\n", encoding="utf-8")
    exc = error(read_raw_jsonl, path)
    assert (exc.line, exc.field) == (line, field)
    assert message in exc.message
    assert str(exc).startswith(f"{path}, line {line}")
    if field:
        assert f"field {field!r}" in str(exc)


def test_raw_writer_rejects_a_disagreement():
    with pytest.raises(ValueError, match="must be 1 or 0"):
        list(raw_lines([RawLabel("c", "v", "a", -1)]))


# The FIRE release layout.

ANNOTATIONS = [
    FireEntry(
        'a man is cooking, "fast"',
        "video7020",
        1,
        annotator_ids=("11", "12", "13"),
        annotator_labels=(1, 1, 0),
        response_ids=("901", "902", "903"),
        queue_ids=("5", "5", "6"),
        models=("CLIP4CLIP", "SSB"),
        dataset="MSRVTT",
    ),
    FireEntry("une femme chante ☀", "-4wsuPCjDBc_5_15", 0, dataset="MSVD"),
]
DISAGREEMENTS = [
    FireEntry(
        "a dog runs",
        "video1",
        None,
        annotator_ids=("11", "14"),
        annotator_labels=(1, 0),
        models=("CE",),
        dataset="MSRVTT",
    )
]
METADATA = {"dataset": "MSRVTT", "campaign": "fire-1", "created": "2024-05-01", "counts": [2, 1]}


def test_fire_round_trip(tmp_path):
    text = "".join(fire_json_chunks(METADATA, ANNOTATIONS, DISAGREEMENTS))
    document = json.loads(text)
    assert list(document) == [*METADATA, "annotations", "disagreements"]
    assert "label" not in document["disagreements"][0]
    path = tmp_path / "fire.json"
    path.write_text(text, encoding="utf-8")
    read = read_fire_json(path)
    assert read == FireDocument(METADATA, ANNOTATIONS, DISAGREEMENTS)
    assert [entry.index for entry in read.annotations] == [0, 1]


def test_fire_stream_from_generators_and_with_empty_disagreements(tmp_path, monkeypatch):
    monkeypatch.setattr("retrieval.formats.fire_json.CHUNK_CHARS", 200)
    many = (
        FireEntry(f"caption {i}", f"video{i}", i % 2, models=("m",), dataset="MSRVTT")
        for i in range(50)
    )
    chunks = list(fire_json_chunks({}, many, iter(())))
    assert len(chunks) > 2
    document = json.loads("".join(chunks))
    assert document["disagreements"] == []
    assert len(document["annotations"]) == 50
    path = tmp_path / "fire.json"
    path.write_text("".join(chunks), encoding="utf-8")
    read = read_fire_json(path)
    assert read.metadata == {}
    assert read.annotations[49] == FireEntry(
        "caption 49", "video49", 1, models=("m",), dataset="MSRVTT"
    )
    assert read.disagreements == []


def test_fire_stream_with_only_disagreements_parses():
    document = json.loads("".join(fire_json_chunks({"x": 1}, [], DISAGREEMENTS)))
    assert document == {"x": 1, "annotations": [], "disagreements": [entry_dict(DISAGREEMENTS[0])]}


def test_fire_writer_keeps_labels_where_they_belong():
    with pytest.raises(ValueError, match="needs a label"):
        list(fire_json_chunks({}, DISAGREEMENTS, []))
    with pytest.raises(ValueError, match="has a label"):
        list(fire_json_chunks({}, [], ANNOTATIONS))
    with pytest.raises(ValueError, match="metadata"):
        list(fire_json_chunks({"annotations": []}, [], []))


def test_hand_written_release_document_reads(tmp_path):
    path = tmp_path / "fire.json"
    path.write_text(
        """{
  "annotations": [
    {"annotator_ids": [3, 8], "label": "relevant", "video_id": "video9770",
     "query": "a person is singing", "annotator_labels": [true, "relevant"],
     "response_ids": [101, 102], "queue_ids": [7, 7], "models": ["CLIP4CLIP"],
     "dataset": "MSRVTT"},
    {"annotator_ids": [3], "label": "irrelevant", "video_id": 42,
     "query": "  a cat  ", "annotator_labels": [0], "response_ids": [103],
     "queue_ids": [7], "models": ["SSB", "CE"], "dataset": "MSVD"}
  ],
  "disagreements": [
    {"annotator_ids": [3, 8], "video_id": "video1", "query": "cars race",
     "annotator_labels": [false, 1], "response_ids": [104, 105], "queue_ids": [8, 8],
     "models": ["CE"], "dataset": "MSRVTT"}
  ],
  "source_ds": "MSRVTT", "created_ds": "2022-10-01", "datasets": ["MSRVTT", "MSVD"]
}
""",
        encoding="utf-8",
    )
    document = read_fire_json(path)
    assert document.metadata == {
        "source_ds": "MSRVTT",
        "created_ds": "2022-10-01",
        "datasets": ["MSRVTT", "MSVD"],
    }
    assert document.annotations == [
        FireEntry(
            "a person is singing",
            "video9770",
            1,
            annotator_ids=("3", "8"),
            annotator_labels=(1, 1),
            response_ids=("101", "102"),
            queue_ids=("7", "7"),
            models=("CLIP4CLIP",),
            dataset="MSRVTT",
        ),
        FireEntry(
            "a cat",
            "42",
            0,
            annotator_ids=("3",),
            annotator_labels=(0,),
            response_ids=("103",),
            queue_ids=("7",),
            models=("SSB", "CE"),
            dataset="MSVD",
        ),
    ]
    assert document.disagreements == [
        FireEntry(
            "cars race",
            "video1",
            None,
            annotator_ids=("3", "8"),
            annotator_labels=(0, 1),
            response_ids=("104", "105"),
            queue_ids=("8", "8"),
            models=("CE",),
            dataset="MSRVTT",
        )
    ]


GOOD = {"query": "q", "video_id": "v", "label": "relevant"}


def fire(annotations=(), disagreements=(), **top):
    return json.dumps(
        {"annotations": list(annotations), "disagreements": list(disagreements), **top}
    )


FIRE_ERRORS = [
    ('{"annotations": [\n  {"query": "q",,}\n]}', "line 2", None, "invalid JSON"),
    ("[]", None, None, "expected a JSON object"),
    ('{"annotations": [{"query": "q", "video_id": "v", "label": "relevant"}]}', None, "disagreements", "missing"),
    ('{"annotations": {}, "disagreements": []}', None, "annotations", "expected a list"),
    (fire(), None, None, "no annotations"),
    (fire([GOOD, 3]), "annotations[1]", None, "expected an object"),
    (fire([GOOD, {"video_id": "v", "label": "relevant"}]), "annotations[1]", "query", "missing"),
    (fire([{**GOOD, "query": "  "}]), "annotations[0]", "query", "empty"),
    (fire([{**GOOD, "video_id": None}]), "annotations[0]", "video_id", "expected a string"),
    (fire([{"query": "q", "video_id": "v"}]), "annotations[0]", "label", "missing"),
    (fire([{**GOOD, "label": "disagreement"}]), "annotations[0]", "label", "unknown label"),
    (fire([], [{"query": "q", "video_id": ""}]), "disagreements[0]", "video_id", "empty key"),
    (fire([{**GOOD, "annotator_labels": ["relevant", 2]}]), "annotations[0]", "annotator_labels", "item 1"),
    (
        fire([], [{"query": "q", "video_id": "v", "annotator_ids": [1, 2], "annotator_labels": [1]}]),
        "disagreements[0]",
        "annotator_labels",
        "1 labels for 2 annotator_ids",
    ),
    (fire([{**GOOD, "response_ids": [1, 2.5]}]), "annotations[0]", "response_ids", "item 1"),
    (fire([{**GOOD, "queue_ids": "7"}]), "annotations[0]", "queue_ids", "expected a list"),
    (fire([{**GOOD, "models": [""]}]), "annotations[0]", "models", "empty key"),
    (fire([{**GOOD, "dataset": 3}]), "annotations[0]", "dataset", "expected a string"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "where", "field", "message"), FIRE_ERRORS)
def test_fire_errors_name_file_position_and_field(tmp_path, text, where, field, message):
    path = tmp_path / "fire.json"
    path.write_text(text, encoding="utf-8")
    exc = error(read_fire_json, path)
    assert message in exc.message
    assert exc.field == field
    prefix = ", ".join(part for part in (str(path), where, field and f"field {field!r}") if part)
    assert str(exc).startswith(prefix + ": ")


def test_fire_bad_utf8_names_the_line(tmp_path):
    path = tmp_path / "fire.json"
    path.write_bytes(b'{"annotations": [],\n"x": "\xff"}')
    assert str(error(read_fire_json, path)) == f"{path}, line 2: invalid UTF-8"
