"""Machine judgement files: CSV and JSON lines read alike, and every error names the file,
the line and the field."""

import json

import pytest

from annotation.assessors.file import MachineRecord, file_format, read_machine_judgements
from retrieval.formats.records import FormatError

CSV_HEADER = "caption,video,assessor,score,label,family\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(rows):
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def test_csv_and_jsonl_read_the_same_records(tmp_path):
    rows = [
        {"caption": "c0", "video": "v0", "assessor": "clip-L", "score": 0.75, "family": "clip"},
        {
            "caption": "c0",
            "video": "v1",
            "assessor": "clip-L",
            "label": "irrelevant",
            "family": "clip",
        },
        {"caption": "c1", "video": "v0", "assessor": "qwen", "score": 0, "label": "Relevant"},
    ]
    from_json = list(read_machine_judgements(write(tmp_path, "m.jsonl", jsonl(rows))))
    text = (
        CSV_HEADER
        + "c0,v0,clip-L,0.75,,clip\nc0,v1,clip-L,,irrelevant,clip\n\nc1,v0,qwen,0,Relevant,\n"
    )
    from_csv = list(read_machine_judgements(write(tmp_path, "m.csv", text)))
    assert (
        from_json
        == from_csv
        == [
            MachineRecord("c0", "v0", "clip-L", 0.75, None, "clip"),
            MachineRecord("c0", "v1", "clip-L", None, 0, "clip"),
            MachineRecord("c1", "v0", "qwen", 0.0, 1, ""),
        ]
    )
    assert [record.line for record in from_csv] == [2, 3, 5]


def test_the_format_goes_by_name_then_by_content(tmp_path):
    assert file_format(write(tmp_path, "a.CSV", "x")) == "csv"
    assert file_format(write(tmp_path, "a.ndjson", "x")) == "jsonl"
    assert file_format(write(tmp_path, "a.txt", '\n  {"caption": 1}\n')) == "jsonl"
    assert file_format(write(tmp_path, "b.txt", CSV_HEADER)) == "csv"
    record = {"caption": "c", "video": "v", "assessor": "a", "score": 0.5}
    (read,) = read_machine_judgements(write(tmp_path, "out", jsonl([record])))
    assert read.score == 0.5


def test_names_with_slashes_and_line_separators(tmp_path):
    """A key may hold ``/`` and U+2028 (JSON escapes it; the file splits lines on ``\\n``
    only); an assessor's name, shown on pages, may hold ``/`` but no line separator."""
    rows = [
        {
            "caption": "a/b\u2028c",
            "video": "dir/v\u2029w",
            "assessor": "openai/clip-vit-l/14",
            "score": 1,
        },
    ]
    path = write(tmp_path, "m.jsonl", jsonl(rows).replace("\\u2028", "\u2028"))
    (record,) = read_machine_judgements(path)
    assert (record.caption_key, record.video_key) == ("a/b\u2028c", "dir/v\u2029w")
    assert record.assessor == "openai/clip-vit-l/14"
    csv_path = write(tmp_path, "m.csv", CSV_HEADER + '"a/b\u2028c",v,x/y,0.2,,\n')
    (record,) = read_machine_judgements(csv_path)
    assert record.caption_key == "a/b\u2028c" and record.line == 2
    bad = write(tmp_path, "bad.jsonl", jsonl([{**rows[0], "assessor": "two\u2028lines"}]))
    with pytest.raises(FormatError) as caught:
        list(read_machine_judgements(bad))
    assert (caught.value.line, caught.value.field) == (1, "assessor")
    assert "line separator" in caught.value.message


GOOD = "c0,v0,m,0.5,,\n"


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        (GOOD + "c1,v0,m,abc,,\n", 3, "score", "expected a number"),
        (GOOD + "c1,v0,m,1.5,,\n", 3, "score", "between 0 and 1"),
        (GOOD + "c1,v0,m,-0.1,,\n", 3, "score", "between 0 and 1"),
        (GOOD + "c1,v0,m,nan,,\n", 3, "score", "between 0 and 1"),
        (GOOD + "c1,v0,m,,maybe,\n", 3, "label", "unknown label 'maybe'"),
        (GOOD + "c1,v0,m,,disagreement,\n", 3, "label", "relevant or irrelevant"),
        (GOOD + "c1,v0,m,,,\n", 3, "score", "a score, a label or both"),
        (GOOD + ",v0,m,0.1,,\n", 3, "caption", "missing value"),
        (GOOD + "c1,v0,,0.1,,\n", 3, "assessor", "needs a name"),
        (GOOD + "c0,v0,m,0.9,,\n", 3, "video", "already on line 2"),
        (GOOD + "c1,v0,m,0.9,,clip\n", 3, "family", "family '' on line 2"),
    ],
)
def test_a_bad_csv_row_names_file_line_and_field(tmp_path, text, line, field, message):
    path = write(tmp_path, "machine.csv", CSV_HEADER + text)
    with pytest.raises(FormatError) as caught:
        list(read_machine_judgements(path))
    error = caught.value
    assert (error.path, error.line, error.field) == (path, line, field)
    assert message in error.message
    assert str(error).startswith(f"{path}, line {line}, field {field!r}: ")


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({"video": "v", "assessor": "m", "score": 0.1}, "caption", "missing required field"),
        ({"caption": "c", "video": "v", "assessor": "m", "score": True}, "score", "boolean"),
        ({"caption": "c", "video": "v", "assessor": "m", "score": "x"}, "score", "a number"),
        ({"caption": "c", "video": "v", "assessor": "m", "label": 1}, "label", "label name"),
        ({"caption": ["c"], "video": "v", "assessor": "m", "score": 0}, "caption", "a list"),
    ],
)
def test_a_bad_json_line_names_file_line_and_field(tmp_path, row, field, message):
    first = {"caption": "c0", "video": "v0", "assessor": "m", "score": 0.5}
    path = write(tmp_path, "machine.jsonl", jsonl([first]) + "\n" + jsonl([row]))
    with pytest.raises(FormatError) as caught:
        list(read_machine_judgements(path))
    assert (caught.value.path, caught.value.line, caught.value.field) == (path, 3, field)
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("empty.csv", "", "empty file"),
        ("header.csv", CSV_HEADER, "no machine judgements"),
        ("blank.jsonl", "\n\n", "no machine judgements"),
        ("nocaption.csv", "video,assessor,score\nv,m,0.1\n", "missing required column"),
    ],
)
def test_an_empty_file_or_a_missing_column_is_named(tmp_path, name, text, message):
    path = write(tmp_path, name, text)
    with pytest.raises(FormatError) as caught:
        list(read_machine_judgements(path))
    assert caught.value.path == path and message in caught.value.message
