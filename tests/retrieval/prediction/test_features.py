"""Per-pair signals of a pool: checked against a per-pair loop, and the shuffled control."""

import math

import numpy as np
import pytest

from retrieval.prediction.features import (
    HITS_AT,
    PairFeatures,
    pair_features,
    run_scores,
    shuffled,
)
from retrieval.search.runs import RankedLists


def random_pool(seed: int, pairs: int = 120, runs: int = 3, depth: int = 12):
    """Pairs of a few queries in no particular order, with ranks, scores and extras."""
    rng = np.random.default_rng(seed)
    groups = rng.choice(np.array([7, 3, 11, 40, 2]), size=pairs)
    ranks = np.where(rng.random((pairs, runs)) < 0.5, rng.integers(1, depth + 1, (pairs, runs)), 0)
    scores = np.where(ranks > 0, rng.normal(size=(pairs, runs)), np.nan)
    scores[rng.random((pairs, runs)) < 0.05] = np.nan
    scores[groups == 2, 0] = np.where(ranks[groups == 2, 0] > 0, 1.5, np.nan)  # no spread
    words = rng.integers(2, 20, pairs).astype(float)
    proxy = rng.random(pairs)
    assessor = np.where(rng.random(pairs) < 0.4, np.nan, rng.random(pairs))
    return groups, ranks, scores, words, proxy, assessor


def brute_force(groups, ranks, scores, words, extras, depth=None):
    """The same columns, one pair at a time."""
    rows = []
    for i in range(len(groups)):
        peers = [j for j in range(len(groups)) if groups[j] == groups[i]]
        row = []
        rrs, kept = [], []
        for r in range(ranks.shape[1]):
            rank = int(ranks[i, r])
            if depth is not None and rank > depth:
                rank = 0
            kept.append(rank)
            rr = 1.0 / rank if rank else 0.0
            rrs.append(rr)
            row.append(rr)
            if scores is not None:
                if math.isnan(scores[i, r]):
                    row.append(math.nan)
                else:
                    values = [scores[j, r] for j in peers if not math.isnan(scores[j, r])]
                    mean = sum(values) / len(values)
                    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
                    row.append((scores[i, r] - mean) / std if std > 0 else 0.0)
        for k in HITS_AT:
            row.append(sum(1 for rank in kept if 0 < rank <= k))
        row.append(sum(1 for rank in kept if rank > 0))
        row.append(sum(rrs) / len(rrs))
        row.append(max(rrs))
        if words is not None:
            row.append(words[i])
        row.append(len(peers))
        row.extend(values[i] for values in extras.values())
        rows.append(row)
    return np.array(rows, dtype=np.float64)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_features_match_a_per_pair_loop(seed):
    groups, ranks, scores, words, proxy, assessor = random_pool(seed)
    extras = {"proxy": proxy, "assessor": assessor}
    features = pair_features(
        groups, ranks, scores=scores, caption_words=words, extra=extras, run_names=["a", "b", "c"]
    )
    expected = brute_force(groups, ranks, scores, words, extras)
    assert features.matrix.dtype == np.float32
    assert features.matrix.shape == expected.shape
    np.testing.assert_allclose(features.matrix, expected, rtol=1e-5, atol=1e-6, equal_nan=True)
    assert features.names[:2] == ("rr:a", "score_z:a")
    assert features.names[-4:] == ("caption_words", "pool_size", "proxy", "assessor")


def test_depth_cuts_ranks_and_optional_columns_are_left_out():
    groups, ranks, _, _, _, _ = random_pool(5)
    features = pair_features(groups, ranks, depth=5)
    expected = brute_force(groups, ranks, None, None, {}, depth=5)
    np.testing.assert_allclose(features.matrix, expected, rtol=1e-6)
    assert "caption_words" not in features.names
    assert not any(name.startswith("score_z") for name in features.names)
    assert features.names[0] == "rr:run0"


def test_standardised_scores_are_z_scores_within_each_query():
    groups, ranks, scores, _, _, _ = random_pool(3)
    features = pair_features(groups, ranks, scores=scores)
    for r in range(ranks.shape[1]):
        z = features.column(f"score_z:run{r}").astype(np.float64)
        assert np.array_equal(np.isnan(z), np.isnan(scores[:, r]))
        for query in (3, 7, 11, 40):
            present = z[(groups == query) & ~np.isnan(z)]
            if present.size > 1:
                assert abs(present.mean()) < 1e-5
                assert abs(present.std() - 1) < 1e-4
    assert np.all(features.column("score_z:run0")[(groups == 2) & (ranks[:, 0] > 0)] == 0)


def test_no_pairs_and_no_runs():
    empty = pair_features(np.zeros(0, int), np.zeros((0, 2), int))
    assert empty.matrix.shape == (0, len(empty.names))
    no_runs = pair_features(np.array([1, 1, 2]), np.zeros((3, 0), int))
    assert no_runs.column("rr_best").tolist() == [0, 0, 0]
    assert no_runs.column("pool_size").tolist() == [2, 2, 1]


def test_run_scores_read_each_runs_score_of_each_pair():
    rng = np.random.default_rng(4)
    runs = []
    for _ in range(2):
        query_ids = rng.permutation(np.arange(10, 16))
        items = np.stack([rng.permutation(30)[:8] for _ in query_ids])
        items[0, 6:] = -1
        scores = -np.sort(rng.random(items.shape), axis=1)
        runs.append(RankedLists(query_ids, items, scores))
    captions = rng.integers(9, 17, 200)
    videos = rng.integers(0, 30, 200)
    got = run_scores(captions, videos, runs, depth=5)
    for i, (caption, video) in enumerate(zip(captions, videos, strict=True)):
        for r, run in enumerate(runs):
            expected = math.nan
            rows = np.flatnonzero(run.query_ids == caption)
            if rows.size:
                ranked = run.item_ids[rows[0], :5].tolist()
                if video in ranked:
                    expected = run.scores[rows[0], ranked.index(video)]
            assert got[i, r] == expected or (math.isnan(got[i, r]) and math.isnan(expected))


def test_shuffled_permutes_rows_by_seed():
    groups, ranks, scores, words, _, _ = random_pool(6)
    features = pair_features(groups, ranks, scores=scores, caption_words=words)
    one, again, other = shuffled(features, 1), shuffled(features, 1), shuffled(features, 2)
    assert one.names == features.names
    assert np.array_equal(one.matrix, again.matrix, equal_nan=True)
    assert not np.array_equal(one.matrix, other.matrix, equal_nan=True)
    assert np.array_equal(sorted_rows(one.matrix), sorted_rows(features.matrix))


def sorted_rows(matrix: np.ndarray) -> np.ndarray:
    filled = np.nan_to_num(matrix, nan=-9.0)
    return filled[np.lexsort(filled.T[::-1])]


@pytest.mark.parametrize(
    "call",
    [
        lambda: pair_features(np.zeros((2, 2)), np.zeros((2, 1), int)),
        lambda: pair_features(np.zeros(3), np.zeros((2, 1), int)),
        lambda: pair_features(np.zeros(2), np.zeros(2, int)),
        lambda: pair_features(np.zeros(2), -np.ones((2, 1), int)),
        lambda: pair_features(np.zeros(2), np.ones((2, 1))),
        lambda: pair_features(np.zeros(2), np.ones((2, 1), int), depth=0),
        lambda: pair_features(np.zeros(2), np.ones((2, 1), int), scores=np.ones((2, 2))),
        lambda: pair_features(np.zeros(2), np.ones((2, 1), int), caption_words=np.ones(3)),
        lambda: pair_features(np.zeros(2), np.ones((2, 1), int), extra={"x": np.ones((2, 1))}),
        lambda: pair_features(np.zeros(2), np.ones((2, 1), int), run_names=["a", "b"]),
        lambda: pair_features(np.zeros(2), np.ones((2, 1), int), extra={"rr_best": np.ones(2)}),
        lambda: PairFeatures(np.zeros((2, 2)), ("a",)),
        lambda: PairFeatures(np.zeros(2), ("a", "b")),
        lambda: run_scores(np.zeros(2, int), np.zeros(3, int), []),
        lambda: run_scores(
            np.zeros(1, int),
            np.zeros(1, int),
            [RankedLists(np.array([1, 1]), np.zeros((2, 1), int), np.zeros((2, 1)))],
        ),
    ],
)
def test_bad_shapes_raise(call):
    with pytest.raises(ValueError):
        call()
