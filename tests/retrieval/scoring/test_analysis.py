"""Overlap, RBO, leave-one-run-out, budget bootstrap, significance and figure counts (pure)."""

import itertools
import math

import numpy as np
import pytest

from retrieval.scoring import analysis

# --------------------------------------------------------------------------------------------
# RBO and overlap
# --------------------------------------------------------------------------------------------


def reference_rbo_ext(a: list[int], b: list[int], p: float) -> float:
    """Webber, Moffat & Zobel (2010) eq. 32, written out one query at a time with sets."""
    if not a and not b:
        return math.nan
    if not a or not b:
        return 0.0
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    s, l_ = len(short), len(long_)

    def x(d: int) -> int:  # items shared by the first d ranks (all of the short list past s)
        return len(set(short[:d]) & set(long_[:d]))

    seen = sum(x(d) / d * p**d for d in range(1, l_ + 1))
    short_tail = sum(x(s) * (d - s) / (s * d) * p**d for d in range(s + 1, l_ + 1))
    return (1 - p) / p * (seen + short_tail) + ((x(l_) - x(s)) / l_ + x(s) / s) * p**l_


def padded(lists: list[list[int]], width: int) -> np.ndarray:
    out = np.full((len(lists), width), -1, dtype=np.int64)
    for row, items in enumerate(lists):
        out[row, : len(items)] = items
    return out


def test_rbo_of_identical_lists_is_one_and_of_disjoint_lists_zero():
    a = padded([[1, 2, 3, 4], [7, 8], [5]], 4)
    assert analysis.rbo(a, a) == pytest.approx([1.0, 1.0, 1.0])
    b = padded([[9, 10, 11, 12], [1, 2], [6, 7, 8]], 4)
    assert analysis.rbo(a, b) == pytest.approx([0.0, 0.0, 0.0])


def test_rbo_worked_examples_at_p_09():
    # Even lengths: S = [1, 2, 3], L = [1, 3, 2]; X_1..3 = 1, 1, 3.
    # (0.1 / 0.9) * (1/1 * 0.9 + 1/2 * 0.81 + 3/3 * 0.729) + 3/3 * 0.729
    #   = (1/9) * 2.034 + 0.729 = 0.226 + 0.729 = 0.955
    assert analysis.rbo(np.array([[1, 2, 3]]), np.array([[1, 3, 2]]))[0] == pytest.approx(0.955)
    # Uneven: S = [1, 2, 3] (s = 3), L = [2, 1, 4, 3, 5] (l = 5).
    # X_1..5 = 0, 2, 2, 3, 3 (X_4, X_5: all of S against L's first 4, 5); X_s = 2, X_l = 3.
    # sum_{d=1..5} X_d/d p^d = 0 + 0.81 + 2/3*0.729 + 3/4*0.6561 + 3/5*0.59049 = 2.142369
    # sum_{d=4..5} X_s (d-s)/(s d) p^d = 2*1/12*0.6561 + 2*2/15*0.59049 = 0.266814
    # ((X_l - X_s)/l + X_s/s) p^l = (1/5 + 2/3) * 0.59049 = 0.511758
    # RBO_ext = (1/9) * (2.142369 + 0.266814) + 0.511758 = 0.779445
    short, long_ = padded([[1, 2, 3]], 5), np.array([[2, 1, 4, 3, 5]])
    assert analysis.rbo(short, long_)[0] == pytest.approx(0.779445, abs=1e-9)
    assert analysis.rbo(long_, short)[0] == pytest.approx(0.779445, abs=1e-9)  # symmetric


def test_rbo_of_a_prefix_is_one_and_empty_lists_are_handled():
    # A list that is a prefix of the other agrees everywhere both are seen: RBO_ext = 1.
    assert analysis.rbo(padded([[1, 2]], 4), np.array([[1, 2, 3, 4]]))[0] == pytest.approx(1.0)
    values = analysis.rbo(padded([[], [], [1]], 2), padded([[], [1, 2], []], 2))
    assert np.isnan(values[0]) and values[1] == 0.0 and values[2] == 0.0


def test_rbo_agrees_with_a_per_query_reference_on_random_uneven_lists():
    rng = np.random.default_rng(7)
    width, n = 12, 400
    lists_a, lists_b = [], []
    for _ in range(n):
        lists_a.append([int(x) for x in rng.choice(25, rng.integers(0, width + 1), replace=False)])
        lists_b.append([int(x) for x in rng.choice(25, rng.integers(0, width + 1), replace=False)])
    for p in (0.5, 0.9, 0.98):
        ours = analysis.rbo(padded(lists_a, width), padded(lists_b, width), p=p)
        expected = [reference_rbo_ext(a, b, p) for a, b in zip(lists_a, lists_b, strict=True)]
        np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-12)
    ours = analysis.rbo(padded(lists_a, width), padded(lists_b, width), p=0.9, k=5)
    expected = [reference_rbo_ext(a[:5], b[:5], 0.9) for a, b in zip(lists_a, lists_b, strict=True)]
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-12)


def test_rbo_handles_huge_ids_and_runs_of_different_widths():
    big = np.int64(2**62)
    a = np.array([[big, big + 1, 3]])
    b = np.array([[big + 1, big, 3, 4, 5]])
    expected = reference_rbo_ext([int(x) for x in a[0]], [int(x) for x in b[0]], 0.9)
    assert analysis.rbo(a, b)[0] == pytest.approx(expected)


def test_runs_with_repeats_or_holes_or_bad_arguments_are_refused():
    good = np.array([[1, 2, 3]])
    with pytest.raises(ValueError, match="repeats"):
        analysis.rbo(np.array([[1, 2, 1]]), good)
    with pytest.raises(ValueError, match="padding"):
        analysis.overlap_at_k(np.array([[1, -1, 3]]), good)
    with pytest.raises(ValueError, match="p must"):
        analysis.rbo(good, good, p=1.0)
    with pytest.raises(ValueError, match="one row per query"):
        analysis.rbo(good, np.array([[1], [2]]))
    # Repeated padding is not a repeat.
    assert analysis.rbo(np.array([[1, -1, -1]]), good)[0] == pytest.approx(1.0)


def test_overlap_at_k():
    a = padded([[1, 2, 3, 4], [1, 2], [], [1, 2, 3]], 4)
    b = padded([[4, 3, 9, 8], [2, 1], [], [7]], 4)
    values = analysis.overlap_at_k(a, b, k=3)
    # {1,2,3} & {4,3,9} = {3}: 1/3; identical short lists: 1; both empty: NaN; 0 of 3.
    assert values[0] == pytest.approx(1 / 3)
    assert values[1] == 1.0
    assert np.isnan(values[2])
    assert values[3] == 0.0
    assert analysis.overlap_at_k(a, b, k=4)[0] == pytest.approx(2 / 4)
    # Padding on both sides never counts as shared.
    assert analysis.overlap_at_k(padded([[1]], 3), padded([[2]], 3), k=3)[0] == 0.0


def test_pairwise_means_and_overlap_table():
    runs = {
        "x": padded([[1, 2], [3, 4], []], 2),
        "y": padded([[1, 2], [5, 6], []], 2),
        "z": padded([[2, 1], [3, 4], [1]], 2),
    }
    means = analysis.pairwise(runs, analysis.overlap_at_k, k=2)
    assert list(means) == [("x", "y"), ("x", "z"), ("y", "z")]
    assert means[("x", "y")] == pytest.approx(0.5)  # (1 + 0) / 2; the empty query is skipped
    assert means[("x", "z")] == pytest.approx(2 / 3)  # (1 + 1 + 0) / 3
    table = analysis.overlap_table(runs, k=2)
    assert table[0]["run_a"] == "x" and table[0]["run_b"] == "y"
    assert table[0]["rbo"] == pytest.approx(0.5)  # identical (1) and disjoint (0) queries


# --------------------------------------------------------------------------------------------
# Leave-one-run-out
# --------------------------------------------------------------------------------------------


def test_contributors_and_leave_one_out_on_three_runs():
    runs = {
        "a": np.array([[10, 11, 12], [20, 21, -1]]),
        "b": np.array([[11, 13, 10], [22, 20, 23]]),
        "c": np.array([[14, 15, 16], [23, 24, 25]]),
    }
    rows = np.array([0, 0, 0, 0, 1, 1, 1, 0])
    items = np.array([10, 12, 13, 14, 20, 23, 24, 99])
    contrib = analysis.contributors(runs, 2, rows, items)
    expected = np.array(
        [
            [True, False, False],  # 10: a at rank 1; b has it at rank 3, below depth 2
            [False, False, False],  # 12: a at rank 3 only, below depth
            [False, True, False],  # 13: b
            [False, False, True],  # 14: c
            [True, True, False],  # 20: a and b
            [False, False, True],  # 23: c at rank 1; b at rank 3 is below depth
            [False, False, True],  # 24: c
            [False, False, False],  # 99: nobody (judged for another reason)
        ]
    )
    np.testing.assert_array_equal(contrib, expected)
    keep = analysis.leave_one_out_mask(contrib)
    np.testing.assert_array_equal(
        keep,
        [
            [False, True, True],
            [True, True, True],
            [True, False, True],
            [True, True, False],
            [True, True, True],
            [True, True, False],
            [True, True, False],
            [True, True, True],
        ],
    )
    assert analysis.contributors(runs, 3, rows, items)[0].tolist() == [True, True, False]


def test_contributors_with_huge_ids_and_bad_rows():
    big = 2**62
    runs = {"a": np.array([[big, 1]]), "b": np.array([[1, big + 1]])}
    contrib = analysis.contributors(runs, 2, np.array([0, 0, 0]), np.array([big, big + 1, 5]))
    np.testing.assert_array_equal(contrib, [[True, False], [False, True], [False, False]])
    with pytest.raises(ValueError, match="query row"):
        analysis.contributors(runs, 2, np.array([1]), np.array([1]))


# --------------------------------------------------------------------------------------------
# Annotation budget
# --------------------------------------------------------------------------------------------


def test_budget_bootstrap_is_seeded_and_shrinks_with_n():
    rng = np.random.default_rng(0)
    correct = (rng.random(5000) < 0.5).astype(np.float64)
    first = analysis.budget_bootstrap(correct, sizes=(100, 1000), resamples=4000, seed=3)
    again = analysis.budget_bootstrap(correct, sizes=(1000,), resamples=4000, seed=3)
    other = analysis.budget_bootstrap(correct, sizes=(1000,), resamples=4000, seed=4)
    np.testing.assert_array_equal(first[1000], again[1000])  # independent of other sizes
    assert not np.array_equal(first[1000], other[1000])
    assert first[1000].shape == (4000,) and (first[1000] >= 0).all()
    summary = analysis.budget_summary(first)
    assert summary[1000]["p95"] < summary[100]["p95"]
    assert summary[1000]["p50"] < summary[100]["p50"]
    # |mean error| of a 0/1 score with p ~ 0.5: 95th percentile ~ 1.96 * sqrt(0.25 / N).
    assert summary[1000]["p95"] == pytest.approx(1.96 * math.sqrt(0.25 / 1000), rel=0.1)


def test_budget_bootstrap_of_continuous_scores_and_several_metrics():
    rng = np.random.default_rng(1)
    values = rng.random(3000)  # uniform: sd sqrt(1/12); drawn by index, not by distinct value
    errors = analysis.budget_bootstrap(values, sizes=(500,), resamples=4000, seed=0)
    p95 = np.quantile(errors[500], 0.95)
    assert p95 == pytest.approx(1.96 * math.sqrt(1 / 12 / 500), rel=0.1)
    matrix = np.column_stack([values, values > 0.3, values > 0.9])
    both = analysis.budget_bootstrap(matrix, sizes=(500,), resamples=2000)
    assert both[500].shape == (2000, 3)
    summary = analysis.budget_summary(both)[500]
    assert summary["p95"].shape == (3,)


# --------------------------------------------------------------------------------------------
# Significance
# --------------------------------------------------------------------------------------------


def test_identical_runs_are_not_significantly_different():
    rng = np.random.default_rng(2)
    a = (rng.random(500) < 0.4).astype(np.float64)
    assert analysis.randomization_test(a, a.copy(), permutations=500) == 1.0
    (row,) = analysis.compare_runs({"a": a, "b": a.copy()}, resamples=500, permutations=500)
    assert row["difference"] == 0.0 and row["ci_low"] == 0.0 == row["ci_high"]


def test_a_clearly_better_run_is_significant_and_results_are_seeded():
    rng = np.random.default_rng(3)
    base = (rng.random(2000) < 0.3).astype(np.float64)
    better = np.maximum(base, rng.random(2000) < 0.2)
    p = analysis.randomization_test(better, base, permutations=2000, seed=1)
    assert p == pytest.approx(1 / 2001)
    runs = {"better": better, "base": base}
    (row,) = analysis.compare_runs(runs, resamples=2000, permutations=2000, seed=1)
    assert row["p"] == p
    assert 0 < row["ci_low"] < row["difference"] < row["ci_high"]
    se = np.std(better - base) / math.sqrt(2000)
    assert row["ci_high"] - row["ci_low"] == pytest.approx(2 * 1.96 * se, rel=0.1)
    assert analysis.compare_runs(runs, resamples=2000, permutations=2000, seed=1) == [row]
    again = analysis.compare_runs(runs, resamples=2000, permutations=2000, seed=2)[0]
    assert (again["ci_low"], again["ci_high"]) != (row["ci_low"], row["ci_high"])


def test_randomization_test_matches_exact_enumeration():
    # Continuous differences (drawn as random bytes of signs): all 2^12 sign patterns.
    rng = np.random.default_rng(4)
    diff = rng.normal(0.4, 1.0, 12)
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=12)))
    exact = np.mean(np.abs(signs @ diff) >= abs(diff.sum()) - 1e-12)
    p = analysis.randomization_test(diff, np.zeros(12), permutations=40_000, seed=0)
    assert p == pytest.approx(exact, abs=0.01)  # ~5 Monte Carlo standard errors
    assert analysis.randomization_test(diff, np.zeros(12), 1000, seed=5) == (
        analysis.randomization_test(diff, np.zeros(12), 1000, seed=5)
    )
    # Few distinct differences (drawn as binomial counts): 40 queries +1, 24 queries -1,
    # 36 ties. The flipped sum is 16 - 2 F+ + 2 F- with F+ ~ Bin(40, 1/2), F- ~ Bin(24, 1/2).
    diff = np.array([1.0] * 40 + [-1.0] * 24 + [0.0] * 36)
    pmf = {n: [math.comb(n, f) / 2**n for f in range(n + 1)] for n in (40, 24)}
    exact = sum(
        pmf[40][f] * pmf[24][g]
        for f in range(41)
        for g in range(25)
        if abs(16 - 2 * f + 2 * g) >= 16
    )
    p = analysis.randomization_test(diff, np.zeros(100), permutations=40_000, seed=0)
    assert p == pytest.approx(exact, abs=0.01)  # ~5 Monte Carlo standard errors


def test_holm_against_a_hand_computed_example():
    # Sorted: 0.005 * 4 = 0.02, 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, 0.04 * 1 = 0.04 -> 0.06
    # (monotone: never below an earlier adjusted value).
    adjusted = analysis.holm([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(analysis.holm([0.5, 0.6]), [1.0, 1.0])  # capped at 1
    assert analysis.holm([]).size == 0
    with pytest.raises(ValueError):
        analysis.holm([0.2, 1.5])


def test_compare_runs_covers_every_pair():
    rng = np.random.default_rng(5)
    base = rng.random(3000) < 0.3
    runs = {
        "best": np.maximum(base, rng.random(3000) < 0.3).astype(float),
        "base": base.astype(float),
        "twin": base.astype(float),
    }
    rows = analysis.compare_runs(runs, resamples=1000, permutations=1000, seed=0)
    assert [(r["run_a"], r["run_b"]) for r in rows] == [
        ("best", "base"),
        ("best", "twin"),
        ("base", "twin"),
    ]
    first, _, last = rows
    assert first["significant"] and first["ci_low"] > 0
    assert first["difference"] == pytest.approx(first["mean_a"] - first["mean_b"])
    assert first["p"] == analysis.randomization_test(runs["best"], runs["base"], 1000, seed=0)
    assert last["p"] == 1.0 and last["p_holm"] == 1.0 and not last["significant"]
    assert last["ci_low"] == last["ci_high"] == 0.0
    assert all(r["p_holm"] >= r["p"] for r in rows)
    assert analysis.compare_runs(runs, resamples=1000, permutations=1000, seed=0) == rows
    assert analysis.compare_runs({"only": runs["base"]}) == []


def test_continuous_scores_resample_by_index():
    rng = np.random.default_rng(6)
    a = rng.random(400)
    b = a - 0.05 + rng.normal(0, 0.01, 400)
    rows = analysis.compare_runs({"a": a, "b": b}, resamples=2000, permutations=2000)
    assert rows[0]["ci_low"] < 0.05 < rows[0]["ci_high"]
    assert rows[0]["p"] == pytest.approx(1 / 2001)


# --------------------------------------------------------------------------------------------
# Descriptive figures
# --------------------------------------------------------------------------------------------


def test_positives_histogram_counts_every_query():
    n_positive = np.array([1, 1, 2, 5, 0, 1, 30])
    hist = analysis.positives_per_query_histogram(n_positive)
    assert hist.counts.sum() == 7 and hist.counts[1] == 3 and hist.counts[30] == 1
    assert hist.labels[:3] == ("0", "1", "2") and hist.labels[-1] == "30+"
    binned = analysis.positives_per_query_histogram(n_positive, analysis.DEFAULT_POSITIVE_BINS)
    assert binned.labels == ("0", "1", "2", "3", "4-5", "6-10", "11-20", "21-50", "51+")
    assert binned.counts.tolist() == [1, 3, 1, 0, 1, 0, 0, 1, 0]


def test_length_positive_heatmap_counts_every_query():
    rng = np.random.default_rng(8)
    lengths = rng.integers(0, 25, 1000)
    positives = rng.integers(0, 80, 1000)
    heat = analysis.length_positive_heatmap(lengths, positives)
    assert heat.counts.shape == (5, 9) and heat.counts.sum() == 1000
    assert heat.row_labels == ("1-5", "6-8", "9-11", "12-15", "16+")
    assert heat.counts.sum(axis=1)[0] == np.count_nonzero(lengths <= 5)  # 0 words: "1-5"
    assert heat.counts.sum(axis=0)[-1] == np.count_nonzero(positives >= 51)


def test_correct_by_length_shares_and_joint_outcomes():
    lengths = np.array([3, 4, 7, 7, 20, 20])
    x = np.array([1, 0, 1, 1, 0, 1])
    y = np.array([1, 1, 0, 1, 0, 0])
    by = analysis.correct_by_length(lengths, {"x": x, "y": y})
    assert by.counts.tolist() == [2, 2, 0, 0, 2]
    np.testing.assert_allclose(by.share["x"], [0.5, 1.0, np.nan, np.nan, 0.5])
    assert by.joint is not None
    assert by.joint["both"][0] == 0.5 and by.joint["only y"][0] == 0.5
    assert by.joint["only x"][1] == 0.5 and by.joint["neither"][4] == 0.5
    total = sum(by.joint.values())
    np.testing.assert_allclose(total[by.counts > 0], 1.0)
    assert analysis.correct_by_length(lengths, {"x": x * 0.5, "y": y}).joint is None


def test_positive_ranks_by_source():
    original = np.array([[True, False, False], [False, False, True]])
    judged = np.array([[True, True, False], [False, True, True]])
    ranks = analysis.positive_ranks_by_source(original, judged)
    assert ranks["ranks"].tolist() == [1, 2, 3]
    assert ranks["original"].tolist() == [1, 0, 1]
    assert ranks["judged"].tolist() == [0, 2, 0]
