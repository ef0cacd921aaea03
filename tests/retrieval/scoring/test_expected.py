"""Expected per-query metrics under independent relevance, against every labelling and
against metrics.py on 0/1 probabilities."""

import itertools

import numpy as np
import pytest

from retrieval.scoring import metrics
from retrieval.scoring.expected import expected_metrics

KS = (1, 2, 5)


def evaluated(relevant: np.ndarray, n_relevant: np.ndarray, ks, ndcg_k: int) -> dict:
    """metrics.py's per-row C@K, AP and nDCG for known labels (rows are labellings or queries)."""
    zero = np.zeros(len(relevant), dtype=np.int64)
    judged = metrics.RankedJudgements(relevant, relevant, n_relevant, zero)
    return metrics.evaluate(
        judged, ks, ndcg_k=ndcg_k, only=(*(f"C@{k}" for k in ks), "AP", f"nDCG@{ndcg_k}")
    )


def random_probabilities(rng, shape, *, certain: bool = True) -> np.ndarray:
    """Probabilities with exact zeros (outside the pool) and, optionally, some certain pairs."""
    p = rng.random(shape) * (rng.random(shape) < 0.75)
    if certain:
        p[rng.random(shape) < 0.15] = 1.0
    return p


@pytest.mark.parametrize("seed", range(6))
def test_expectations_equal_the_sum_over_every_labelling(seed):
    rng = np.random.default_rng(seed)
    queries, depth, others = 4, 5, 3
    listed = random_probabilities(rng, (queries, depth))
    outside = random_probabilities(rng, (queries, others))
    ndcg_k = 3
    got = expected_metrics(listed, outside, KS, ndcg_k=ndcg_k)
    labellings = np.array(list(itertools.product([False, True], repeat=depth + others)))
    everything = np.concatenate([listed, outside], axis=1)
    for q in range(queries):
        chance = np.prod(np.where(labellings, everything[q], 1 - everything[q]), axis=1)
        assert chance.sum() == pytest.approx(1.0, abs=1e-12)
        per_labelling = evaluated(labellings[:, :depth], labellings.sum(axis=1), KS, ndcg_k)
        for name, values in per_labelling.items():
            assert got[name][q] == pytest.approx(chance @ values, abs=1e-12), (q, name)


def test_equal_to_metrics_on_known_labels():
    rng = np.random.default_rng(7)
    queries, depth, others = 300, 30, 12
    listed = (rng.random((queries, depth)) < 0.2).astype(float)
    outside = (rng.random((queries, others)) < 0.3).astype(float)
    listed[:20] = 0.0  # queries with nothing relevant in the list
    outside[:10] = 0.0  # ... and with R = 0
    got = expected_metrics(listed, outside)
    n_relevant = (listed.sum(axis=1) + outside.sum(axis=1)).astype(np.int64)
    reference = evaluated(listed.astype(bool), n_relevant, metrics.DEFAULT_KS, 10)
    assert set(got) == set(reference)
    for name, values in reference.items():
        np.testing.assert_allclose(got[name], values, rtol=0, atol=1e-12, err_msg=name)


def test_a_list_shorter_than_the_cutoffs_and_no_outside_pairs():
    listed = np.array([[0.5, 0.0], [1.0, 1.0]])
    got = expected_metrics(listed, None, (1, 5), ndcg_k=10)
    assert got["C@5"] == pytest.approx([0.5, 1.0])
    assert got["AP"] == pytest.approx([0.5, 1.0])  # R is at least the listed positive
    assert got["nDCG@10"] == pytest.approx([0.5, 1.0])


def test_blocks_of_queries_give_the_same_values(monkeypatch):
    rng = np.random.default_rng(3)
    listed = random_probabilities(rng, (50, 12))
    outside = random_probabilities(rng, (50, 6))
    whole = expected_metrics(listed, outside)
    monkeypatch.setattr("retrieval.scoring.expected.CELLS_PER_CHUNK", 500)
    blocked = expected_metrics(listed, outside)
    for name in whole:
        np.testing.assert_allclose(blocked[name], whole[name], rtol=0, atol=1e-13)


def test_many_certain_pairs_stay_finite():
    listed = np.ones((2, 200))
    listed[1, ::2] = 0.5
    got = expected_metrics(listed, np.ones((2, 100)))
    assert np.isfinite(got["AP"]).all()
    assert got["AP"][0] == pytest.approx(200 / 300, abs=1e-12)


@pytest.mark.parametrize(
    ("listed", "outside", "ks"),
    [
        (np.array([0.5, 0.5]), None, KS),
        (np.array([[0.5, 1.5]]), None, KS),
        (np.array([[0.5, np.nan]]), None, KS),
        (np.array([[0.5, 0.5]]), np.array([[0.5], [0.5]]), KS),
        (np.array([[0.5, 0.5]]), np.array([[-0.1]]), KS),
        (np.array([[0.5, 0.5]]), None, (0,)),
    ],
)
def test_bad_inputs_raise(listed, outside, ks):
    with pytest.raises(ValueError):
        expected_metrics(listed, outside, ks)
