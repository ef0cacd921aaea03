"""The machine-versus-human figures against scikit-learn and the krippendorff package, on
random judgements of several assessors at once."""

import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, roc_auc_score

from annotation.assessors import agreement


def random_judgements(seed: int, n: int = 400, n_assessors: int = 4):
    rng = np.random.default_rng(seed)
    assessor = rng.integers(0, n_assessors, n)
    human = rng.choice([-1, 0, 1], n, p=[0.2, 0.5, 0.3])
    gold = np.where(rng.random(n) < 0.3, rng.integers(0, 2, n), -1)
    truth = np.where(human >= 0, human, rng.integers(0, 2, n))
    noisy = np.clip(truth * 0.6 + rng.normal(0.2, 0.25, n), 0, 1)
    scores = np.where(rng.random(n) < 0.8, noisy, np.nan)
    labels = np.where(np.isnan(scores) | (rng.random(n) < 0.3), rng.integers(0, 2, n), -1)
    return assessor, scores, labels, human, gold


def test_verdicts_take_the_label_else_the_thresholded_score():
    scores = np.array([0.5, 0.49, np.nan, 0.9, 0.0])
    labels = np.array([-1, -1, 1, 0, -1])
    assert agreement.verdicts(scores, labels).tolist() == [1, 0, 1, 0, 0]
    with pytest.raises(ValueError):
        agreement.verdicts(np.array([np.nan]), np.array([-1]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_figures_match_scikit_learn_and_krippendorff(seed):
    assessor, scores, labels, human, gold = random_judgements(seed)
    rows = agreement.assessor_figures(assessor, scores, labels, human, gold, 5)
    machine = np.where(labels >= 0, labels, scores >= 0.5).astype(int)
    for a, row in enumerate(rows[:4]):
        mine = assessor == a
        both = mine & (human >= 0)
        y_true, y_pred = human[both], machine[both]
        tn, fp, fn, tp = confusion_matrix(y_true, y_pred, labels=[0, 1]).ravel()
        assert row.confusion == ((tn, fp), (fn, tp))
        assert row.compared == both.sum() and row.judged == mine.sum()
        assert row.sensitivity == pytest.approx(tp / (tp + fn))
        assert row.specificity == pytest.approx(tn / (tn + fp))
        assert row.kappa == pytest.approx(cohen_kappa_score(y_true, y_pred))
        reference = krippendorff.alpha(
            reliability_data=np.stack([y_true, y_pred]).astype(float),
            level_of_measurement="nominal",
        )
        assert row.alpha == pytest.approx(reference)
        on_gold = mine & (gold >= 0)
        assert row.gold == on_gold.sum()
        assert row.gold_accuracy == pytest.approx((machine[on_gold] == gold[on_gold]).mean())
        assert row.gold_low <= row.gold_accuracy <= row.gold_high
        scored = both & ~np.isnan(scores)
        assert row.auc == pytest.approx(roc_auc_score(human[scored], scores[scored]))
        assert row.relevant_share == pytest.approx(machine[mine].mean())
    empty = rows[4]
    assert (empty.judged, empty.compared, empty.gold) == (0, 0, 0)
    assert (empty.kappa, empty.alpha, empty.auc, empty.gold_accuracy) == (None,) * 4


def test_undefined_figures_are_none_not_a_crash():
    """An assessor that calls everything relevant on pairs the humans call relevant agrees
    perfectly, but kappa and alpha have no variation to measure; specificity has no pair."""
    rows = agreement.assessor_figures(
        np.zeros(3, int), np.ones(3), np.full(3, -1), np.ones(3, int), np.full(3, -1), 1
    )
    (row,) = rows
    assert row.sensitivity == 1.0 and row.specificity is None
    assert (row.kappa, row.alpha, row.auc, row.gold_accuracy) == (None, None, None, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn says so too, and answers NaN
        assert np.isnan(cohen_kappa_score([1, 1, 1], [1, 1, 1], replace_undefined_by=np.nan))


def test_perfect_and_opposite_machines():
    human = np.array([0, 1, 0, 1, 1, 0])
    n = len(human)
    for machine, kappa in ((human, 1.0), (1 - human, -1.0)):
        (row,) = agreement.assessor_figures(
            np.zeros(n, int), np.full(n, np.nan), machine, human, human, 1
        )
        assert row.kappa == pytest.approx(kappa)
        assert row.alpha == pytest.approx(
            krippendorff.alpha(
                reliability_data=np.stack([human, machine]).astype(float),
                level_of_measurement="nominal",
            )
        )
        assert row.gold_accuracy == (1.0 if kappa > 0 else 0.0)
