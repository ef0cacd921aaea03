"""The leaderboard: hand-computed scores, intervals, Holm marks, Webber & Park, exports, sorting."""

import csv
import io
import json
import re

import ir_measures
import numpy as np
import pytest
from ir_measures import AP, Success, nDCG

from retrieval.scoring import analysis, leaderboard, score_intervals
from retrieval.scoring.leaderboard import SortError, mark_column, mean_error, sort_rows, webber_park
from retrieval.scoring.leaderboard_formats import csv_header, leaderboard_columns, render, to_latex
from retrieval.scoring.rescoring import Qrels, points, rescore

# Four queries; query q's own video is item q. Runs rank three items each.
RUNS = {
    "A": np.array([[0, 5, 6], [5, 1, 6], [6, 7, 8], [3, 9, 5]]),
    "B": np.array([[5, 0, 6], [1, 2, 3], [8, 9, 2], [9, 8, 3]]),
    "U": np.array([[7, 0, 1], [1, 0, 2], [2, 0, 1], [0, 1, 2]]),
}
ORIGINAL = Qrels.of(range(4), range(4), [1] * 4)
# Judged: (query 1, item 5) and (2, 7) relevant, both found only by A; (0, 5) irrelevant.
CORRECTED = Qrels.of([1, 2, 0], [5, 7, 5], [1, 1, 0]).union(ORIGINAL)


def board(**kwargs):
    result = rescore(
        RUNS,
        CORRECTED,
        original=ORIGINAL,
        pooled={name: RUNS[name] for name in ("A", "B")},
        pool_depth=3,
    )
    options = {"dataset": "toy", "label_set": "judged", "pooled_runs": ["A", "B"]}
    return leaderboard.build(result, **{**options, "resamples": 500, **kwargs})


def rows(b):
    return {row.run: row for row in b.rows}


def test_scores_by_hand():
    r = rows(board())
    # A: original first positives at ranks 1, 2, none (depth + 1 = 4), 1.
    assert r["A"].original["C@1"].value == pytest.approx(0.5)
    assert r["A"].original["C@5"].value == pytest.approx(0.75)
    assert r["A"].original["MedR"].value == pytest.approx(1.5)
    # Corrected: (1, 5) at rank 1 and (2, 7) at rank 2 become positives.
    assert r["A"].corrected["C@1"].value == pytest.approx(0.75)
    assert r["A"].corrected["C@5"].value == pytest.approx(1.0)
    assert r["A"].corrected["MedR"].value == pytest.approx(1.0)
    # B: first positives at ranks 2, 1, 3, 3.
    assert r["B"].corrected["C@1"].value == pytest.approx(0.25)
    assert r["B"].corrected["MedR"].value == pytest.approx(2.5)
    # AP of A with corrected positives: q0 1/1; q1 (1 + 2/2)/2; q2 1/2 / 2; q3 1.
    ap = (1.0 + 1.0 + 0.25 + 1.0) / 4
    assert r["A"].corrected["AP"].value == pytest.approx(ap)
    # Judged@10 of U: a third of each of its first three lists, nothing of the last.
    assert r["U"].judged == pytest.approx(0.25)
    assert r["A"].pooled is True and r["U"].pooled is False


def _ir_measures(run: np.ndarray, qrels: Qrels) -> dict:
    judged = [
        ir_measures.Qrel(f"q{q}", f"d{i}", int(v))
        for q, i, v in zip(qrels.rows, qrels.items, qrels.rel, strict=True)
    ]
    scored = [
        ir_measures.ScoredDoc(f"q{q}", f"d{i}", float(run.shape[1] - rank))
        for q in range(run.shape[0])
        for rank, i in enumerate(run[q])
        if i >= 0
    ]
    return ir_measures.calc_aggregate([Success @ 1, Success @ 5, AP, nDCG @ 10], judged, scored)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scores_equal_ir_measures(seed):
    rng = np.random.default_rng(seed)
    runs = {name: np.stack([rng.permutation(30)[:10] for _ in range(20)]) for name in "xyz"}
    original = Qrels.of(range(20), range(20), [1] * 20)
    extra = Qrels.of(rng.integers(0, 20, 60), rng.integers(0, 30, 60), rng.integers(0, 2, 60))
    # A pair drawn twice keeps one judgement; originals last so they stay relevant.
    keys = np.unique(np.stack([extra.rows, extra.items]), axis=1, return_index=True)[1]
    corrected = extra.without(~np.isin(np.arange(len(extra)), keys)).union(original)
    result = rescore(runs, corrected, original=original)
    r = rows(leaderboard.build(result, dataset="d", label_set="s", resamples=50))
    for name, ids in runs.items():
        for block, qrels in (("corrected", corrected), ("original", original)):
            expected = _ir_measures(ids, qrels)
            cells = getattr(r[name], block)
            assert cells["C@1"].value == pytest.approx(expected[Success @ 1], abs=1e-9)
            assert cells["C@5"].value == pytest.approx(expected[Success @ 5], abs=1e-9)
            assert cells["AP"].value == pytest.approx(expected[AP], abs=1e-9)
            assert cells["nDCG@10"].value == pytest.approx(expected[nDCG @ 10], abs=1e-9)


def test_intervals_contain_the_estimate_and_are_seeded():
    first, again, other = board(seed=3), board(seed=3), board(seed=4)
    assert first == again
    for row in first.rows:
        for block in (row.corrected, row.original):
            for cell in block.values():
                assert cell.low <= cell.value <= cell.high
    assert first.rows != other.rows  # another seed, other intervals


def test_bootstrap_interval_by_hand():
    # Every query scores the same: no resample can differ.
    same = analysis.bootstrap_intervals({"a": np.full(10, 0.3)}, resamples=100)["a"]
    assert (same.low, same.estimate, same.high) == pytest.approx((0.3, 0.3, 0.3))
    values = {"a": np.r_[np.zeros(50), np.ones(50)]}
    interval = analysis.bootstrap_intervals(values, resamples=4000, seed=1)["a"]
    # The binomial standard error of a mean of 100 fair coins is 0.05: about +-0.098.
    assert interval.low == pytest.approx(0.5 - 0.098, abs=0.02)
    assert interval.high == pytest.approx(0.5 + 0.098, abs=0.02)
    median = analysis.bootstrap_intervals({"r": np.array([1.0, 2, 3])}, "median", 200)["r"]
    assert median.estimate == 2.0 and 1.0 <= median.low <= median.high <= 3.0


def test_resampled_medians_of_few_values_match_index_draws():
    # Ranks cut at depth 10 take few values: one multinomial per resample instead of one
    # draw per query must give the same distribution of medians as drawing queries.
    rng = np.random.default_rng(0)
    for n in (301, 300):  # odd and even counts (the even median averages the middle two)
        ranks = np.minimum(rng.geometric(0.25, n), 11).astype(float)
        fast = analysis._resampled_medians(ranks[:, None], 20_000, np.random.default_rng(1))
        index = np.random.default_rng(2).integers(0, n, (20_000, n))
        slow = np.median(ranks.take(index), axis=1)
        for value in np.union1d(fast, slow):
            assert np.mean(fast == value) == pytest.approx(np.mean(slow == value), abs=0.015)


def test_holm_marks_on_a_constructed_case():
    n = 40
    best = np.ones(n)
    close = best.copy()
    close[0] = 0.0  # one query worse: indistinguishable
    far = np.zeros(n)
    far[:5] = 1.0  # 35 queries worse: clearly different
    values = {"best": best, "close": close, "far": far}
    estimates = {name: float(v.mean()) for name, v in values.items()}
    marks = mark_column(values, estimates, permutations=2000, seed=0)
    assert marks["best"] == (True, False, None)
    assert marks["close"][:2] == (False, True)
    assert marks["far"][:2] == (False, False)
    raw = [analysis.randomization_test(best, values[n_], 2000, 0) for n_ in ("close", "far")]
    np.testing.assert_allclose([marks["close"][2], marks["far"][2]], analysis.holm(raw))
    # Lower is better (ranks): the smallest estimate is the best.
    ranks = mark_column(values, estimates, lower_is_better=True, permutations=200)
    assert ranks["far"][0] and not ranks["best"][0]


def test_holm_can_turn_a_raw_difference_into_a_tie():
    # Two comparisons with raw p below alpha, the larger above it once doubled by Holm.
    rng = np.random.default_rng(0)
    n = 60
    leader = np.ones(n)
    values = {"lead": leader}
    for name, worse in (("x", 7), ("y", 5)):
        v = leader.copy()
        v[rng.choice(n, worse, replace=False)] = 0.0
        values[name] = v
    estimates = {name: float(v.mean()) for name, v in values.items()}
    raw = {name: analysis.randomization_test(leader, values[name], 4000, 0) for name in "xy"}
    marks = mark_column(values, estimates, permutations=4000, seed=0)
    adjusted = dict(zip("xy", analysis.holm([raw["x"], raw["y"]]), strict=True))
    for name in "xy":
        assert marks[name][1] == (adjusted[name] > 0.05)
        assert marks[name][2] == pytest.approx(adjusted[name])


def test_webber_park_by_hand():
    errors = leaderboard.leave_one_out_errors(
        {"a": {"C@1": 0.5}, "b": {"C@1": 0.4}, "new": {"C@1": 0.3}},
        {"a": {"C@1": 0.3}, "b": {"C@1": 0.35}},
        names=("C@1",),
    )
    assert errors == {"a": {"C@1": pytest.approx(0.2)}, "b": {"C@1": pytest.approx(0.05)}}
    bias = mean_error(errors)
    assert bias == {"C@1": pytest.approx(0.125)}
    assert webber_park({"C@1": 0.3}, bias) == {"C@1": pytest.approx(0.425)}
    assert webber_park({"C@1": 0.95}, bias) == {"C@1": 1.0}  # clipped
    assert mean_error({}) is None


def test_unpooled_row_gets_the_pooled_runs_mean_error():
    b = board()
    r = rows(b)
    # Left out, A loses both positives only it found: C@1 0.75 -> 0.5; B loses nothing.
    assert b.loo_errors["A"]["C@1"] == pytest.approx(0.25)
    assert b.loo_errors["B"]["C@1"] == pytest.approx(0.0)
    assert b.bias["C@1"] == pytest.approx(0.125)
    assert b.bias_runs == ("A", "B")
    assert r["U"].bias == b.bias
    # U's corrected C@1: 0, 1, 1, 0 (its own video never first for q0, never listed for q3).
    assert r["U"].corrected["C@1"].value == pytest.approx(0.5)
    assert r["U"].adjusted["C@1"] == pytest.approx(0.625)
    assert r["A"].adjusted is None and r["B"].adjusted is None
    assert any("Webber & Park" in note for note in r["U"].notes)
    assert any("Only 25% of its top 10 is judged" in note for note in r["U"].notes)
    assert not any("Not pooled" in note for note in r["A"].notes)


def test_true_scores_where_relevance_is_exhaustive():
    # Every (query, item) judged: q's own video, and item 6 relevant to every query.
    rows_, items = np.meshgrid(np.arange(4), np.arange(10), indexing="ij")
    rel = (items == rows_) | (items == 6)
    true = Qrels(rows_.ravel(), items.ravel(), rel.ravel().astype(np.int64))
    result = rescore(RUNS, CORRECTED, original=ORIGINAL, true=true)
    r = rows(leaderboard.build(result, dataset="toy", label_set="judged", resamples=20))
    # First items: A 0 (own), 5 (not relevant), 6, 3 (own); B 5, 1 (own), 8, 9.
    assert r["A"].true["C@1"] == pytest.approx(0.75)
    assert r["B"].true["C@1"] == pytest.approx(0.25)
    assert board().rows[0].true is None  # no exhaustive relevance given


def test_unknown_pooling():
    b = board(pooled_runs=None)
    assert all(row.pooled is None and row.adjusted is None for row in b.rows)
    assert any("does not record which runs were pooled" in note for note in b.notes)


def test_sorting():
    b = board()
    assert [row.run for row in sort_rows(b.rows, "C@1")] == ["A", "U", "B"]
    assert [row.run for row in sort_rows(b.rows, "-C@1")] == ["B", "U", "A"]
    assert [row.run for row in sort_rows(b.rows, "MedR")][0] == "A"  # lowest rank first
    assert [row.run for row in sort_rows(b.rows, "run")] == ["A", "B", "U"]
    assert [row.run for row in sort_rows(b.rows, "Judged@10")][-1] == "U"
    assert [row.run for row in b.sorted_by("original:C@1").rows][0] in ("A", "U")
    for bad in ("nope", "original:nope", "-", "C@1; drop", ""):
        with pytest.raises(SortError):
            sort_rows(b.rows, bad)


def test_marks_in_a_column():
    r = rows(board(permutations=500))
    assert r["A"].corrected["C@1"].best and not r["B"].corrected["C@1"].best
    # MedR: lower is better.
    assert r["A"].corrected["MedR"].best


def test_csv_json_latex_parse():
    b = board()
    table = list(csv.DictReader(io.StringIO(render(b, "csv"))))
    assert [line["run"] for line in table] == [row.run for row in b.rows]
    assert list(table[0]) == csv_header()
    line = {row["run"]: row for row in table}
    assert float(line["A"]["corrected C@1"]) == pytest.approx(0.75)
    assert line["A"]["corrected C@1 mark"] == "best"
    assert float(line["U"]["adjusted C@1 (estimate)"]) == pytest.approx(0.625)
    assert line["U"]["pooled"] == "no" and line["A"]["adjusted C@1 (estimate)"] == ""
    data = json.loads(render(b, "json"))
    assert data["rows"][0]["corrected"]["C@1"]["value"] == pytest.approx(0.75)
    assert data["bias"]["C@1"] == pytest.approx(0.125)
    latex = to_latex(b)
    for command in ("\\toprule", "\\midrule", "\\bottomrule", "\\begin{tabular}", "\\textbf{75.0}"):
        assert command in latex
    assert latex.count("\\\\") == 2 + len(b.rows)  # the block line, the metric line, rows
    fire = to_latex(b, layout="fire")
    # FIRE Table 1: "A (B + C)", corrected (original + gain) in points.
    assert "75.0 (50.0 + 25.0)\\%" in fire
    assert len(re.findall(r"\d+\.\d \(\d+\.\d (\+|\$-\$) \d+\.\d\)", fire)) == 5 * len(b.rows)
    assert "\\toprule" in fire and "\\bottomrule" in fire
    text = render(b, "table")
    assert "Webber & Park" in text and "75.0*" in text


def test_latex_escapes_names():
    result = rescore({"a_b&c%": RUNS["A"]}, CORRECTED, original=ORIGINAL)
    b = leaderboard.build(result, dataset="x#1", label_set="s_1", resamples=20)
    latex = to_latex(b)
    assert "a\\_b\\&c\\%" in latex and "x\\#1" in latex and "s\\_1" in latex


def test_page_cells():
    display = leaderboard_columns(board())
    assert [c.key for c in display.columns][:2] == ["C@1", "C@5"]
    assert "original:MedR" in [c.key for c in display.columns]
    by_run = {line.row.run: line for line in display.rows}
    assert by_run["A"].cells[0].text == "75.0" and by_run["A"].cells[0].best
    assert by_run["U"].judged_low and by_run["U"].estimates[0] == ("C@1", "62.5", "+12.5")
    assert [run for run, _ in display.loo_errors] == ["A", "B"]


def noisy_board(calls: list | None = None):
    """The toy board with a probability on each judged pair: (1, 5) 0.6 relevant, (2, 7) 0.9,
    (0, 5) 0.2, so the corrected C@K, AP and nDCG@10 get intervals from the labels."""
    result = rescore(RUNS, CORRECTED, original=ORIGINAL)
    judged = score_intervals.JudgedPairs.of([1, 2, 0], [5, 7, 5], [1, 1, 0], [0.6, 0.9, 0.2])

    def source():
        if calls is not None:
            calls.append(1)
        positives = (ORIGINAL.rows, ORIGINAL.items)
        return score_intervals.score_intervals(RUNS, judged, positives, draws=500)

    result.interval_source = source
    board = leaderboard.build(result, dataset="toy", label_set="p", resamples=200)
    return result, board


def test_corrected_cells_carry_the_labels_intervals_once_computed():
    calls = []
    result, b = noisy_board(calls)
    display = leaderboard_columns(b)
    render(b, "csv"), render(b, "json"), render(b, "table")
    assert calls == [1]  # read once, by build; every output reads the board's rows
    for line in display.rows:
        expected = result.intervals[line.row.run]
        assert line.row.intervals == {m: expected[m] for m in leaderboard.ADJUSTED_METRICS}
        for column, cell in zip(display.columns, line.cells, strict=True):
            interval = expected.get(column.metric) if column.block == "corrected" else None
            if interval is None or not interval.parts:
                assert cell.labels == ""
            else:
                assert cell.labels == f"[{points(interval.low)}–{points(interval.high)}]"
                assert cell.labels in cell.title
    assert any(cell.labels for line in display.rows for cell in line.cells)
    assert display.labels_shown and "label noise" in display.legend


def test_exports_carry_the_labels_intervals_after_the_old_columns():
    result, b = noisy_board()
    table = list(csv.DictReader(io.StringIO(render(b, "csv"))))
    header = csv_header()
    old = header[: header.index("notes") + 1]
    assert header[len(old) :] == [
        *(
            f"corrected {m} labels {end}"
            for m in leaderboard.ADJUSTED_METRICS
            for end in ("low", "high", "parts")
        ),
        "circular families",  # added after the intervals: no column moves
    ]
    data = json.loads(render(b, "json"))
    for line, row in zip(table, data["rows"], strict=True):
        for m in leaderboard.ADJUSTED_METRICS:
            interval = result.intervals[line["run"]][m]
            assert float(line[f"corrected {m} labels low"]) == pytest.approx(interval.low)
            assert float(line[f"corrected {m} labels high"]) == pytest.approx(interval.high)
            assert line[f"corrected {m} labels parts"] == "; ".join(interval.parts)
            assert row["intervals"][m] == {"metric": m, **interval.as_dict()}
    text = render(b, "table")
    assert "intervals [low–high] from the labels" in text
    c1 = result.intervals["B"]["C@1"]
    assert f"C@1 {points(c1.value)} [{points(c1.low)}–{points(c1.high)}]" in text
    bracket = f"{{\\scriptsize [{points(c1.low)}--{points(c1.high)}]}}"
    for layout in ("rows", "fire"):
        latex = to_latex(b, layout=layout)
        assert bracket in latex and "What the bracket beside a corrected score holds" in latex
        shown = sum(bool(i.parts) for row in b.rows for i in row.intervals.values())
        assert latex.count("\\scriptsize") == shown  # each corrected score, once


def test_exact_scores_show_no_labels_interval():
    """No probabilities, nothing unjudged: each interval is the score; nothing in brackets."""
    b = board()
    display = leaderboard_columns(b)
    assert not display.labels_shown and "exact" in display.legend
    assert all(cell.labels == "" for line in display.rows for cell in line.cells)
    for row in b.rows:
        for m, interval in row.intervals.items():
            assert interval.parts == () and interval.low == interval.value == interval.high
            assert interval.value == pytest.approx(row.corrected[m].value)
    line = next(csv.DictReader(io.StringIO(render(b, "csv"))))
    assert line["corrected C@1 labels parts"] == ""
    assert float(line["corrected C@1 labels low"]) == pytest.approx(float(line["corrected C@1"]))
    assert "from the labels" not in render(b, "table")
    assert "scriptsize" not in to_latex(b) and "from the labels" not in to_latex(b)


def test_best_is_marked_only_among_runs_whose_scores_compare():
    """An unpooled run's corrected score counts only positives the pooled runs
    found, so it is not marked best (nor tied) in the corrected columns, and a note says why;
    its original scores, on the same positives as everyone's, still compete."""
    result = rescore(RUNS, CORRECTED, original=ORIGINAL, pooled={"B": RUNS["B"]}, pool_depth=3)
    b = leaderboard.build(
        result, dataset="toy", label_set="judged", pooled_runs=["B"], resamples=50
    )
    r = rows(b)
    # Corrected C@1: U 0.5 and A 0.75 beat B 0.25, but neither was pooled.
    assert r["A"].corrected["C@1"].value > r["B"].corrected["C@1"].value
    for run in ("A", "U"):
        cell = r[run].corrected["C@1"]
        assert not cell.best and not cell.tied and cell.p_holm is None
    assert r["B"].corrected["C@1"].best
    assert r["A"].original["C@1"].best  # the original scores compare across every run
    (note,) = [note for note in b.notes if "pooled runs only" in note]
    assert "A, U were not pooled" in note
    # Unknown pooling: every run competes, as before.
    assert rows(board(pooled_runs=None))["A"].corrected["C@1"].best
