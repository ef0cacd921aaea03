"""The cross-fitted predictor: no query's prediction uses its own labels, it beats the base rate
on informative features and not on shuffled ones, honours soft targets, and falls back."""

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

from retrieval.prediction.features import PairFeatures, shuffled
from retrieval.prediction.model import CALIBRATE_FROM, cross_fit, query_folds
from retrieval.prediction.synthetic import synthetic_pool

FAST = {"max_iter": 10}


@pytest.fixture(scope="module")
def small():
    pool = synthetic_pool(80, seed=1)
    return pool, pool.features(), pool.targets(0.5, seed=2)


@pytest.fixture(scope="module")
def big():
    """A pool large enough to measure discrimination and calibration, and its predictions."""
    pool = synthetic_pool(600, seed=3)
    features = pool.features()
    targets = pool.targets(0.5, seed=4)
    return pool, features, targets, cross_fit(features, pool.groups, targets, max_iter=25)


def test_a_querys_predictions_ignore_its_own_labels(small):
    pool, features, targets = small
    before = cross_fit(features, pool.groups, targets, **FAST)
    labelled_queries = np.unique(pool.groups[~np.isnan(targets)])
    query = labelled_queries[3]
    mine = pool.groups == query
    flipped = targets.copy()
    flipped[mine] = 1.0 - flipped[mine]
    after = cross_fit(features, pool.groups, flipped, **FAST)
    assert np.array_equal(before.fold, after.fold)
    assert np.array_equal(before.probability[mine], after.probability[mine])
    assert not np.array_equal(before.probability[~mine], after.probability[~mine])
    same_fold = before.fold == before.fold[mine][0]
    assert np.array_equal(before.probability[same_fold], after.probability[same_fold])


def test_folds_split_queries_from_their_ids_alone(small):
    pool, _, _ = small
    fold = query_folds(pool.groups, 5, seed=0)
    for query in np.unique(pool.groups):
        assert np.unique(fold[pool.groups == query]).size == 1
    per_fold = np.bincount([fold[pool.groups == q][0] for q in np.unique(pool.groups)])
    assert per_fold.max() - per_fold.min() <= 1 and per_fold.size == 5
    assert np.array_equal(query_folds(pool.groups, 5, seed=0), fold)
    assert not np.array_equal(query_folds(pool.groups, 5, seed=1), fold)
    assert set(query_folds(np.array([4, 4, 9]), 5, seed=0).tolist()) == {0, 1}


def test_unlabelled_pairs_get_predictions(small):
    pool, features, targets = small
    result = cross_fit(features, pool.groups, targets, **FAST)
    unlabelled = np.isnan(targets)
    assert unlabelled.any()
    assert np.isfinite(result.probability).all()
    assert ((result.probability >= 0) & (result.probability <= 1)).all()
    assert result.fitted == 5 and result.fallback == () and result.calibrated == 0
    assert result.probability[unlabelled].std() > 0.02


def test_informative_features_beat_the_base_rate_and_are_calibrated(big):
    pool, _, targets, result = big
    held_out = np.isnan(targets)
    assert roc_auc_score(pool.relevant[held_out], result.probability[held_out]) > 0.68
    quality = result.quality
    assert quality.auc > 0.65
    assert quality.log_loss < quality.base_log_loss - 0.02
    assert quality.brier < quality.base_brier
    # Against the true chance of relevance: on held-out queries, in 5 equal-count bins.
    expected = 0.03 + 0.94 * pool.chance[held_out]  # the targets' mean given the truth
    predicted = result.probability[held_out]
    for part in np.array_split(np.argsort(predicted), 5):
        assert abs(predicted[part].mean() - expected[part].mean()) < 0.04


def test_quality_matches_scikit_learn(big):
    _, _, targets, result = big
    labelled = ~np.isnan(targets)
    p, q = targets[labelled], result.probability[labelled]
    hard = np.concatenate([np.ones(p.size), np.zeros(p.size)])
    twice, weights = np.concatenate([q, q]), np.concatenate([p, 1 - p])
    quality = result.quality
    assert quality.labelled == p.size
    assert quality.log_loss == pytest.approx(log_loss(hard, twice, sample_weight=weights))
    assert quality.brier == pytest.approx(
        brier_score_loss(hard, twice, sample_weight=weights) - np.mean(p * (1 - p))
    )
    assert quality.auc == pytest.approx(roc_auc_score(p >= 0.5, q))


def test_shuffled_features_predict_about_the_base_rate(big):
    pool, features, targets, _ = big
    result = cross_fit(shuffled(features, 7), pool.groups, targets, max_iter=25)
    held_out = np.isnan(targets)
    assert abs(roc_auc_score(pool.relevant[held_out], result.probability[held_out]) - 0.5) < 0.05
    base = np.nanmean(targets)
    assert abs(result.probability.mean() - base) < 0.02
    assert np.abs(result.probability - base).mean() < 0.06
    assert result.quality.log_loss > result.quality.base_log_loss - 0.005


def test_a_pair_labelled_one_half_pulls_towards_one_half():
    rng = np.random.default_rng(0)
    pairs = 2000
    x = rng.integers(0, 2, pairs).astype(np.float32)[:, None]
    groups = np.arange(pairs) // 4
    sure = np.where(x[:, 0] == 1, 1.0, 0.0)
    unsure = np.where(x[:, 0] == 1, 0.5, 0.0)
    for targets, wanted in ((sure, 1.0), (unsure, 0.5)):
        result = cross_fit(x, groups, targets, max_iter=100)
        assert np.abs(result.probability[x[:, 0] == 1] - wanted).max() < 0.03
        assert result.probability[x[:, 0] == 0].max() < 0.03


def test_one_fold_matches_scikit_learn_on_the_duplicated_rows(small):
    """Binning ahead of the fit changes nothing the trees' own weighted binning would decide."""
    pool, features, targets = small
    result = cross_fit(features, pool.groups, targets, **FAST)
    train = np.flatnonzero(~np.isnan(targets) & (result.fold != 0))
    p = targets[train]
    rows = np.concatenate([features.matrix[train], features.matrix[train]])
    label = np.concatenate([np.ones(p.size), np.zeros(p.size)])
    reference = HistGradientBoostingClassifier(
        max_iter=FAST["max_iter"], early_stopping=False, random_state=0
    ).fit(rows, label, sample_weight=np.concatenate([p, 1 - p]))
    here = result.fold == 0
    expected = reference.predict_proba(features.matrix[here])[:, 1]
    np.testing.assert_allclose(result.probability[here], expected, rtol=0, atol=1e-12)


def test_deterministic_for_a_seed(small):
    pool, features, targets = small
    one = cross_fit(features, pool.groups, targets, seed=3, **FAST)
    again = cross_fit(features, pool.groups, targets, seed=3, **FAST)
    other = cross_fit(features, pool.groups, targets, seed=4, **FAST)
    assert np.array_equal(one.probability, again.probability)
    assert np.array_equal(one.fold, again.fold) and one.quality == again.quality
    assert not np.array_equal(one.fold, other.fold)


def test_calibration_inside_the_training_folds(big, small):
    pool, features, targets, _ = big
    for method in ("isotonic", "sigmoid"):
        result = cross_fit(features, pool.groups, targets, calibration=method, folds=3, max_iter=5)
        assert result.calibrated == 3 and method in result.method
        assert ((result.probability >= 0) & (result.probability <= 1)).all()
    # Too few labelled pairs to calibrate on (CALIBRATE_FROM): the trees alone.
    pool, features, targets = small
    assert (~np.isnan(targets)).sum() < CALIBRATE_FROM
    result = cross_fit(features, pool.groups, targets, calibration="isotonic", folds=3, max_iter=5)
    assert result.calibrated == 0


def test_subsampled_training_rows_still_predict_every_pair(small):
    pool, features, targets = small
    result = cross_fit(features, pool.groups, targets, max_train_pairs=300, **FAST)
    assert result.fitted == 5 and np.isfinite(result.probability).all()


def test_too_few_labels_fall_back_to_each_folds_base_rate():
    pool = synthetic_pool(40, seed=5)
    targets = np.full(len(pool), np.nan)
    targets[:12] = np.linspace(0, 1, 12)
    result = cross_fit(pool.features(), pool.groups, targets, min_labelled=20, **FAST)
    assert result.fitted == 0 and result.fallback == (0, 1, 2, 3, 4)
    assert result.method == "base rate"
    for f in range(5):
        outside = (result.fold != f) & ~np.isnan(targets)
        expected = targets[outside].mean() if outside.any() else 0.5
        assert np.allclose(result.probability[result.fold == f], expected)


def test_one_class_and_no_labels_fall_back(small):
    pool, features, targets = small
    none_relevant = np.where(np.isnan(targets), np.nan, 0.0)
    result = cross_fit(features, pool.groups, none_relevant, **FAST)
    assert result.fitted == 0 and np.all(result.probability == 0)
    assert result.quality.auc is None
    unlabelled = cross_fit(features, pool.groups, np.full(len(pool), np.nan), **FAST)
    assert np.all(unlabelled.probability == 0.5) and unlabelled.quality is None


def test_features_as_a_plain_matrix(small):
    pool, features, targets = small
    from_matrix = cross_fit(features.matrix.astype(np.float64), pool.groups, targets, **FAST)
    assert np.array_equal(
        from_matrix.probability, cross_fit(features, pool.groups, targets, **FAST).probability
    )


@pytest.mark.parametrize(
    "arguments",
    [
        {"features": np.zeros(10)},
        {"groups": np.zeros(9)},
        {"targets": np.zeros(9)},
        {"targets": np.full(10, 1.5)},
        {"targets": np.full(10, -0.1)},
        {"folds": 1},
        {"calibration": "platt"},
        {"max_iter": 0},
        {"threads": 0},
    ],
)
def test_bad_input_raises(arguments):
    call = {
        "features": PairFeatures(np.zeros((10, 2)), ("a", "b")),
        "groups": np.arange(10),
        "targets": np.full(10, 0.5),
    }
    call.update(arguments)
    options = {k: call.pop(k) for k in list(call) if k not in ("features", "groups", "targets")}
    with pytest.raises(ValueError):
        cross_fit(call["features"], call["groups"], call["targets"], **options)


def test_columns_empty_in_training_are_ignored(small):
    """An all-NaN column (a proxy not cached), or one filled only outside a fold's training
    queries, predicts as if it were not there."""
    pool, features, targets = small
    base = cross_fit(features, pool.groups, targets, **FAST)
    empty = np.full((len(features), 1), np.nan, dtype=np.float32)
    blank = PairFeatures(np.hstack([features.matrix, empty]), (*features.names, "empty"))
    same = cross_fit(blank, pool.groups, targets, **FAST)
    np.testing.assert_array_equal(same.probability, base.probability)
    # filled only on fold 0's pairs: the model fold 0 is predicted by never saw it filled
    partial = empty.copy()
    on_fold = base.fold == 0
    partial[on_fold, 0] = 1.0
    some = PairFeatures(np.hstack([features.matrix, partial]), (*features.names, "some"))
    mixed = cross_fit(some, pool.groups, targets, **FAST)
    np.testing.assert_array_equal(mixed.probability[on_fold], base.probability[on_fold])
