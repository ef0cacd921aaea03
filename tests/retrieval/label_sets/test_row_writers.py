"""The exports' row writers against the record writers: the same bytes for good rows, and the
same refusal, with the same message, for a bad one, also when it comes after rows whose keys
and annotators the row writer has already checked (it skips checking those again)."""

import math

import pytest

from retrieval.formats import labels

RUNS = ("mme", "jpose")
GOOD = labels.LabelRecord(
    "c1", "v1", 1, 2, False, "a dog runs", ("ann1", "ann2"), {"mme": 3}, "", 0.75
)


def pair_line(record: labels.LabelRecord) -> tuple:
    ranks = tuple(record.runs.get(name, 0) for name in RUNS)
    return (
        record.caption_key,
        record.video_key,
        record.caption,
        record.label,
        record.votes,
        record.adjudicated,
        record.annotators,
        ranks,
        record.auto_label,
        record.confidence,
    )


def outcome(lines) -> str:
    try:
        return "".join(lines)
    except ValueError as exc:
        return f"ValueError: {exc}"


BAD_PAIRS = {
    "caption key": {"caption_key": " c1"},
    "video key": {"video_key": ""},
    "annotator": {"annotators": ("ann1", "ann\x00")},
    "label": {"label": 7},
    "votes": {"votes": -1},
    "votes as a boolean": {"votes": True},
    "confidence": {"confidence": 1.5},
    "confidence not a number": {"confidence": math.nan},
    "a run's rank": {"runs": {"mme": -2}},
    "a run's rank as a boolean": {"runs": {"jpose": True}},
    "an annotator with the separator": {"annotators": ("ann1", "ann;2")},
    "an automatic label": {"auto_label": "bow>=0.90"},
}

JSONL_TAKES = {"an annotator with the separator", "an automatic label"}
"""JSON lines list annotators, and name an automatic label's rule without being asked."""


@pytest.mark.parametrize("bad", [None, *BAD_PAIRS])
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_pair_rows_are_written_and_refused_as_records_are(fmt, bad):
    changed = GOOD if bad is None else labels.LabelRecord(**{**_fields(GOOD), **BAD_PAIRS[bad]})
    records = [GOOD, labels.LabelRecord(**{**_fields(GOOD), "video_key": "v2"}), changed]
    if fmt == "csv":
        expected = outcome(labels.csv_lines(records, RUNS, confidence=True))
        got = outcome(labels.csv_pair_lines(map(pair_line, records), RUNS, confidence=True))
    else:
        expected = outcome(labels.jsonl_lines(records))
        got = outcome(labels.jsonl_pair_lines(map(pair_line, records), RUNS))
    assert got == expected
    refused = bad is not None and not (fmt == "jsonl" and bad in JSONL_TAKES)
    assert got.startswith("ValueError") == refused


def _fields(record: labels.LabelRecord) -> dict:
    return {name: getattr(record, name) for name in record.__dataclass_fields__ if name != "line"}


TIMES = {
    "with a zone": ("2024-05-01T10:00:00+00:00", True),
    "with a fraction": ("2024-05-01T10:00:00.250000+00:00", True),
    "a date": ("2024-05-01", True),
    "blanks around": (" 2024-05-01T10:00:00+00:00 ", True),
    "not a time": ("yesterday", False),
    "no such day": ("2024-02-30T10:00:00+00:00", False),
    "a NUL": ("2024-05-01T10:00:00\x00", False),
    "not ASCII digits": ("２０２４-05-01T10:00:00+00:00", None),
    "a number": (20240501, False),
}
SECONDS = {"none": None, "an integer": 3, "negative": -1.0, "not finite": math.inf, "text": "3"}


@pytest.mark.parametrize("name", TIMES)
def test_raw_rows_take_the_times_raw_records_take(name):
    created_at, good = TIMES[name]
    first = labels.RawLabel("c1", "v1", "ann1", 1, 1.5, "2024-05-01T09:00:00+00:00")
    record = labels.RawLabel("c1", "v1", "ann2", 0, 2.25, created_at)
    expected = outcome(labels.raw_lines([first, record]))
    rows = [
        (r.caption_key, r.video_key, r.annotator, r.label, r.seconds, r.created_at, False, None)
        for r in (first, record)
    ]
    got = outcome(labels.raw_label_lines(rows))
    assert got == expected
    if good is not None:
        assert got.startswith("ValueError") == (not good)


@pytest.mark.parametrize("name", SECONDS)
@pytest.mark.parametrize("played", [False, True])
def test_raw_rows_take_the_seconds_raw_records_take(name, played):
    seconds = SECONDS[name]
    record = labels.RawLabel(
        "c1",
        "v1",
        "ann2",
        0,
        1.5 if played else seconds,
        "",
        seconds_played=seconds if played else None,
    )
    row = ("c1", "v1", "ann2", 0, record.seconds, "", False, record.seconds_played)
    assert outcome(labels.raw_label_lines([row])) == outcome(labels.raw_lines([record]))
