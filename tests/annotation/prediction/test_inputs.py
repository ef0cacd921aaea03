"""The predictor's per-pair inputs from label arrays, checked pair by pair against loops."""

import numpy as np
import pytest

from annotation.prediction import inputs


def _targets_by_loop(slots, pair_index, labels, adjudicated, posterior):
    out = []
    for slot, verdict in zip(slots, adjudicated, strict=True):
        said = [label for at, label in zip(pair_index, labels, strict=True) if at == slot]
        if verdict != inputs.NO_VERDICT:
            out.append(float(verdict))
        elif not said:
            out.append(np.nan)
        elif posterior is None:
            out.append(sum(said) / len(said))
        else:
            out.append(posterior[slot])
    return np.array(out)


@pytest.mark.parametrize("adaptive", [False, True])
def test_targets_match_a_loop_over_pairs(adaptive):
    rng = np.random.default_rng(3)
    n_slots = 40
    slots = rng.permutation(n_slots)[:30]  # some slots are not this campaign's pairs
    slots[0] = -1  # a pair outside the read model
    pair_index = rng.integers(0, n_slots, size=60)
    labels = rng.integers(0, 2, size=60)
    adjudicated = np.where(rng.random(30) < 0.2, rng.integers(0, 2, 30), inputs.NO_VERDICT)
    posterior = rng.random(n_slots) if adaptive else None
    got = inputs.label_targets(slots, pair_index, labels, adjudicated, n_slots, posterior)
    expected = _targets_by_loop(slots, pair_index, labels, adjudicated, posterior)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got[~np.isnan(got)], expected[~np.isnan(expected)])
    assert np.isnan(got).any() and (~np.isnan(got)).any()


def test_no_labels_at_all_gives_no_targets_but_adjudications():
    got = inputs.label_targets(np.arange(3), [], [], np.array([-1, 1, 0]), 0)
    np.testing.assert_array_equal(got[1:], [1.0, 0.0])
    assert np.isnan(got[0])


def test_assessor_columns_prefer_the_score_then_the_label():
    columns = inputs.assessor_columns(
        ["a", "b"],
        assessor=np.array([0, 0, 1, 1, 1]),
        row=np.array([0, 2, 1, 2, -1]),
        score=np.array([0.25, np.nan, np.nan, 0.75, 0.5]),
        label=np.array([0, 1, inputs.NO_VERDICT, 0, 1]),
        pairs=3,
    )
    assert list(columns) == ["assessor:a", "assessor:b"]
    np.testing.assert_array_equal(columns["assessor:a"], [0.25, np.nan, 1.0])
    np.testing.assert_array_equal(columns["assessor:b"], [np.nan, np.nan, 0.75])


def test_word_counts():
    np.testing.assert_array_equal(inputs.word_counts(["a b  c", "", "one"]), [3, 0, 1])
