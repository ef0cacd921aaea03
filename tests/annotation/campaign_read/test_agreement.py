"""Agreement figures: hand-computed cases, the krippendorff package, edge cases, bootstrap."""

import numpy as np
import pytest

from annotation.campaign_read import agreement
from annotation.campaign_read.agreement import AgreementError


def test_value_counts():
    counts = agreement.value_counts(np.array([0, 0, 1, 2, 2, 2]), np.array([1, 0, 1, 0, 0, 1]), 4)
    assert counts.tolist() == [[1, 1], [0, 1], [2, 1], [0, 0]]


def test_hand_computed_percent_agreement_and_alpha():
    # Four pairs with two labels: agree (R,R), agree (I,I), agree (I,I), disagree (R,I).
    counts = np.array([[0, 2], [2, 0], [2, 0], [1, 1], [1, 0]])
    assert agreement.percent_agreement(counts) == pytest.approx(3 / 4)
    # Coincidences: n_0 = 5, n_1 = 3, n = 8, o_01 = 1 (only the split pair, 1*1/(2-1)).
    expected = 1 - (8 - 1) * 1 / (5 * 3)
    assert agreement.alpha_from_counts(counts) == pytest.approx(expected)
    assert agreement.krippendorff_alpha(counts) == pytest.approx(expected)


def test_closed_form_equals_the_package_on_random_counts():
    rng = np.random.default_rng(3)
    for _ in range(20):
        counts = rng.integers(0, 5, (200, 2))
        assert agreement.alpha_from_counts(counts) == pytest.approx(
            agreement.krippendorff_alpha(counts), abs=1e-12
        )


def test_perfect_agreement_gives_alpha_one():
    counts = np.array([[0, 2], [3, 0], [0, 2]])
    assert agreement.krippendorff_alpha(counts) == pytest.approx(1.0)
    assert agreement.percent_agreement(counts) == 1.0


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        (np.array([[1, 0], [0, 1]]), "no pair has two or more labels"),
        (np.array([[2, 0], [3, 0], [1, 0]]), "every label has the same value"),
    ],
)
def test_edge_cases_say_why(counts, message):
    with pytest.raises(AgreementError, match=message):
        agreement.krippendorff_alpha(counts)
    with pytest.raises(AgreementError, match=message):
        agreement.alpha_from_counts(counts)


def test_by_label_count():
    counts = np.array([[0, 1], [2, 0], [1, 1], [3, 0], [2, 1], [0, 0]])
    rows = agreement.by_label_count(counts)
    assert rows == [
        {"labels": 1, "pairs": 1, "percent_agreement": None},
        {"labels": 2, "pairs": 2, "percent_agreement": 0.5},
        {"labels": 3, "pairs": 2, "percent_agreement": 0.5},
    ]


def test_bootstrap_is_seeded_and_covers_the_estimate():
    rng = np.random.default_rng(0)
    counts = np.zeros((2000, 2), dtype=int)
    truth = rng.random(2000) < 0.3
    counts[np.arange(2000), truth.astype(int)] += 1
    second = np.where(rng.random(2000) < 0.1, ~truth, truth).astype(int)
    counts[np.arange(2000), second] += 1
    one = agreement.bootstrap_intervals(counts, resamples=200, seed=5)
    two = agreement.bootstrap_intervals(counts, resamples=200, seed=5)
    assert one == two
    for name, point in (
        ("percent_agreement", agreement.percent_agreement(counts)),
        ("krippendorff_alpha", agreement.krippendorff_alpha(counts)),
    ):
        assert one[name].estimate == pytest.approx(point)
        assert one[name].level == 0.95
        assert one[name].low < point < one[name].high
        assert one[name].high - one[name].low < 0.1


def naive_bootstrap_weights(n_units: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Multiplicities (resamples x units) of resampling units with replacement, one draw each."""
    weights = np.empty((resamples, n_units), dtype=np.float64)
    for row in range(resamples):
        weights[row] = np.bincount(rng.integers(0, n_units, n_units), minlength=n_units)
    return weights


def test_multinomial_bootstrap_matches_naive_pair_resampling():
    # Pairs with 2-4 labels and some disagreement; the naive bootstrap draws pairs one by one.
    rng = np.random.default_rng(11)
    totals = rng.choice([2, 2, 2, 3, 4], 400)
    relevant = rng.binomial(totals, np.where(rng.random(400) < 0.3, 0.9, 0.05))
    counts = np.stack([totals - relevant, relevant], axis=1)
    weights = naive_bootstrap_weights(len(counts), 2000, np.random.default_rng(1))
    naive = {
        "percent_agreement": agreement.percent_agreement(counts, weights),
        "krippendorff_alpha": agreement.alpha_from_counts(counts, weights),
    }
    fast = agreement.bootstrap_intervals(counts, resamples=2000, seed=2)
    for name, values in naive.items():
        low, high = np.percentile(values, [2.5, 97.5])
        assert fast[name].low == pytest.approx(low, abs=0.02)
        assert fast[name].high == pytest.approx(high, abs=0.02)


def test_count_patterns():
    patterns, frequency = agreement.count_patterns(np.array([[1, 1], [0, 2], [1, 1], [3, 0]]))
    assert patterns.tolist() == [[0, 2], [1, 1], [3, 0]]
    assert frequency.tolist() == [1, 2, 1]


def test_per_annotator_medians_ignore_missing_seconds():
    rows = agreement.per_annotator(
        np.array([0, 1, 2, 0, 1]),
        np.array([0, 0, 0, 1, 1]),
        np.array([1, 0, 0, 1, 1]),
        np.array([1, -1, 0]),
        ["a", "b", "c"],
        np.array([3.0, np.nan, 1.0, np.nan, np.nan]),
    )
    assert rows[0]["median_seconds"] == 2.0 and rows[1]["median_seconds"] is None
    assert rows[0]["agreement_with_resolved"] == 1.0  # pair 1 unresolved, not counted
    assert rows[1]["agreement_with_coannotators"] == 0.5
    assert rows[2] == {"annotator": "c", "labels": 0}


def test_per_annotator_and_report():
    # Pair 0: a=R, b=R; pair 1: a=R, b=I, c=I; pair 2: c=I.
    pair = np.array([0, 0, 1, 1, 1, 2])
    who = np.array([0, 1, 0, 1, 2, 2])
    label = np.array([1, 1, 1, 0, 0, 0])
    seconds = np.array([2.0, 4.0, 6.0, 1.0, 3.0, 5.0])
    result = agreement.report(pair, who, label, 3, ["a", "b", "c"], seconds=seconds, resamples=50)
    assert (result["pairs"], result["labels"], result["multiply_labelled_pairs"]) == (3, 6, 2)
    assert result["percent_agreement"] == 0.5
    a, b, c = result["annotators"]
    assert a["labels"] == 2 and a["agreement_with_resolved"] == 0.5  # pair 1 resolved to I
    assert a["agreement_with_coannotators"] == pytest.approx(1 / 3)  # agrees with b on 0 only
    assert c["agreement_with_coannotators"] == pytest.approx(1 / 2)
    assert b["median_seconds"] == 2.5
    assert set(result) >= {
        "pairs",
        "labels",
        "percent_agreement",
        "krippendorff_alpha",
        "by_label_count",
        "annotators",
        "intervals",
    }


def test_report_without_multiple_labels_has_notes_not_errors():
    result = agreement.report(
        np.array([0, 1]), np.array([0, 0]), np.array([1, 0]), 2, ["a"], resamples=10
    )
    assert result["percent_agreement"] is None and result["krippendorff_alpha"] is None
    assert any("two or more labels" in note for note in result["notes"])
