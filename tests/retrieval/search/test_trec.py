"""TREC run and qrels files: trec_eval's ordering, exact round trips, and located errors."""

import io
import math

import numpy as np
import pytest

from retrieval.formats.records import FormatError
from retrieval.formats.trec import (
    RunFile,
    qrels_lines,
    read_qrels,
    read_run,
    to_arrays,
    trec_order,
    write_run,
)


def test_ties_are_broken_by_descending_docno_and_rank_is_ignored():
    lines = [
        "q1 Q0 v1 1 0.5 run",
        "q1 Q0 v3 2 0.5 run",
        "q1 Q0 v10 3 0.5 run",
        "q1 Q0 v2 4 0.5 run",
        "q1 Q0 a 5 0.9 run",
        "q1 Q0 z 6 0.1 run",
        # The rank column says the opposite of the scores; trec_eval ignores it.
        "q2 Q0 b 1 -1 run",
        "q2 Q0 a 2 2e-3 run",
    ]
    run = read_run(lines)
    assert run == RunFile(
        "run",
        {
            "q1": [("a", 0.9), ("v3", 0.5), ("v2", 0.5), ("v10", 0.5), ("v1", 0.5), ("z", 0.1)],
            "q2": [("a", 0.002), ("b", -1.0)],
        },
    )
    assert list(run.rankings) == ["q1", "q2"]


def test_docno_ties_compare_like_strcmp_on_utf8_bytes():
    # "Z" (0x5A) < "a" (0x61) < "é" (0xC3 0xA9 in UTF-8): descending puts "é" first.
    ranking = trec_order([("Z", 1.0), ("é", 1.0), ("a", 1.0), ("a0", 1.0)])
    assert [docno for docno, _ in ranking] == ["é", "a0", "a", "Z"]
    assert sorted(d.encode() for d, _ in ranking)[::-1] == [d.encode() for d, _ in ranking]


def test_negative_and_positive_zero_tie():
    run = read_run(["q Q0 a 1 -0.0 r", "q Q0 b 2 0 r"])
    assert [docno for docno, _ in run.rankings["q"]] == ["b", "a"]


def test_blank_and_comment_lines_and_tabs_are_accepted(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(
        "\ufeff# a comment\n\nq1\tQ0  v1 1 3.5 r\r\n   \nq1 Q0 v2 2 1 r", encoding="utf-8"
    )
    assert read_run(path) == RunFile("r", {"q1": [("v1", 3.5), ("v2", 1.0)]})


def test_write_then_read_is_identical(tmp_path):
    rng = np.random.default_rng(0)
    rankings = {}
    for q in range(20):
        docs = rng.choice(500, size=30, replace=False)
        # Mix awkward floats, exact ties and float32 values.
        scores = rng.standard_normal(20) * 10.0 ** rng.integers(-30, 30, 20)
        scores = [*scores.tolist(), 0.1, 0.1, 1 / 3, -0.0, 1e-310, float(np.float32(0.7))]
        scores += [5e300, -2.5, 7.0, 7.0]
        rankings[f"caption-{q}"] = trec_order(
            (f"video{d}", s) for d, s in zip(docs.tolist(), scores, strict=True)
        )
    path = tmp_path / "out.run"
    write_run(path, "model-a", rankings)
    run = read_run(path)
    assert run == RunFile("model-a", rankings)
    for qid, ranking in rankings.items():
        for (_, expected), (_, actual) in zip(ranking, run.rankings[qid], strict=True):
            assert actual.hex() == expected.hex()
    first = path.read_text().splitlines()[0].split()
    assert first[:2] == ["caption-0", "Q0"] and first[3] == "1" and first[5] == "model-a"


def test_write_keeps_given_order_and_numbers_ranks():
    out = io.StringIO()
    write_run(out, "r", {"q": [("b", 1.0), ("a", np.float32(2.5))], "empty": []})
    assert out.getvalue() == "q Q0 b 1 1.0 r\nq Q0 a 2 2.5 r\n"


@pytest.mark.parametrize(
    ("rankings", "message"),
    [
        ({"q": [("a", math.nan)]}, "not finite"),
        ({"q": [("a b", 1.0)]}, "whitespace"),
        ({"#q": [("a", 1.0)]}, "comment"),
        ({"q": [("a", 1.0), ("a", 2.0)]}, "twice"),
    ],
)
def test_write_rejects_what_would_not_read_back(rankings, message):
    with pytest.raises(ValueError, match=message):
        write_run(io.StringIO(), "r", rankings)


@pytest.mark.parametrize(
    ("bad_line", "field", "message"),
    [
        ("q2 Q0 v1 1 0.5", "run_id", "missing; expected 6 fields"),
        ("q2 Q0 v1 1 0.5 run extra", None, "expected 6 fields"),
        ("q2 Q0 v1 1 high run", "score", "not a number: 'high'"),
        ("q2 Q0 v1 1 1_0 run", "score", "not a number"),
        ("q2 Q0 v1 1 0x1p3 run", "score", "not a number"),
        ("q2 Q0 v1 1 \u0661 run", "score", "not a number"),
        ("q2 Q0 v1 1 NaN run", "score", "must be finite, got 'NaN'"),
        ("q2 Q0 v1 1 -inf run", "score", "must be finite"),
        ("q2 Q0 v1 1 1e999 run", "score", "out of range"),
        ("q1 Q0 v1 7 0.2 run", "docno", "'v1' is listed twice for qid 'q1'"),
        ("q2 Q0 v1 1 0.5 other", "run_id", "'other' differs from the first line's 'run'"),
    ],
)
def test_malformed_run_lines_name_line_and_field(tmp_path, bad_line, field, message):
    path = tmp_path / "run.txt"
    path.write_text(f"q1 Q0 v1 1 0.9 run\n# comment\n{bad_line}\n", encoding="utf-8")
    with pytest.raises(FormatError) as caught:
        read_run(path)
    error = caught.value
    assert (error.line, error.field) == (3, field)
    assert message in error.message
    prefix = f"{path}, line 3, field '{field}': " if field else f"{path}, line 3: "
    assert str(error).startswith(prefix)


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n"])
def test_empty_run_is_an_error(tmp_path, content):
    path = tmp_path / "run.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(FormatError, match="no run lines") as caught:
        read_run(path)
    assert str(caught.value).startswith(str(path))


def test_errors_in_lines_use_the_given_name():
    with pytest.raises(FormatError) as caught:
        read_run(["q Q0 v 1 x r"], name="upload.run")
    assert str(caught.value) == "upload.run, line 1, field 'score': not a number: 'x'"


def test_unreadable_run_file_is_a_format_error(tmp_path):
    with pytest.raises(FormatError):
        read_run(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"q Q0 v 1 1 r\nq Q0 \xff 2 1 r\n")
    with pytest.raises(FormatError) as caught:
        read_run(bad)
    assert caught.value.line == 2


def test_qrels_round_trip(tmp_path):
    qrels = {"c1": {"v2": 1, "v1": 0, "v9": 3}, "c2": {"v1": -1}}
    path = tmp_path / "labels.qrels"
    rows = [(qid, docno, rel) for qid, judged in qrels.items() for docno, rel in judged.items()]
    path.write_text("".join(qrels_lines(rows)))
    assert path.read_text() == "c1 0 v2 1\nc1 0 v1 0\nc1 0 v9 3\nc2 0 v1 -1\n"
    assert read_qrels(path) == qrels
    assert list(read_qrels(path)["c1"]) == ["v2", "v1", "v9"]


@pytest.mark.parametrize(
    ("bad_line", "field", "message"),
    [
        ("c1 0 v3", "rel", "missing; expected 4 fields"),
        ("c1 0 v3 1 x", None, "expected 4 fields"),
        ("c1 0 v3 1.5", "rel", "not an integer: '1.5'"),
        ("c1 0 v1 0", "docno", "listed twice"),
    ],
)
def test_malformed_qrels_lines_name_line_and_field(bad_line, field, message):
    with pytest.raises(FormatError) as caught:
        read_qrels(["c1 0 v1 1", bad_line], name="q.txt")
    assert (caught.value.line, caught.value.field) == (2, field)
    assert message in str(caught.value)


def test_empty_qrels_is_an_error():
    with pytest.raises(FormatError, match="no qrels lines"):
        read_qrels([])


def test_qrels_lines_reject_non_integers():
    with pytest.raises(ValueError, match="not an integer"):
        list(qrels_lines([("c", "v", 0.5)]))


def test_to_arrays_pads_and_truncates():
    rankings = {"a": [("v2", 0.9), ("v0", 0.5), ("v1", 0.1)], "b": [("v1", 2.0)], "x": []}
    index = {"v0": 0, "v1": 1, "v2": 2}
    doc_index, scores = to_arrays(rankings, ["b", "missing", "a"], index, depth=2)
    assert doc_index.dtype == np.int64 and scores.dtype == np.float64
    np.testing.assert_array_equal(doc_index, [[1, -1], [-1, -1], [2, 0]])
    np.testing.assert_array_equal(scores, [[2.0, np.nan], [np.nan, np.nan], [0.9, 0.5]])


def test_to_arrays_matches_a_loop_on_a_parsed_run():
    rng = np.random.default_rng(1)
    lines = [
        f"q{q} Q0 v{d} 0 {rng.integers(0, 5)} r"
        for q in range(50)
        for d in rng.choice(100, size=rng.integers(0, 40), replace=False)
    ]
    run = read_run(lines)
    keys = [f"q{q}" for q in range(50)]
    doc_index, scores = to_arrays(run.rankings, keys, {f"v{d}": d for d in range(100)}, depth=25)
    for row, qid in enumerate(keys):
        ranking = run.rankings.get(qid, [])[:25]
        width = len(ranking)
        assert doc_index[row, :width].tolist() == [int(d[1:]) for d, _ in ranking]
        assert scores[row, :width].tolist() == [s for _, s in ranking]
        assert (doc_index[row, width:] == -1).all() and np.isnan(scores[row, width:]).all()


def test_to_arrays_names_an_unknown_video():
    with pytest.raises(KeyError, match="'v9' is not a known video"):
        to_arrays({"a": [("v9", 1.0)]}, ["a"], {"v0": 0}, depth=5)
