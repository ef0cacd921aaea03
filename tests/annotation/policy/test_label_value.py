"""Which pairs decide a Correct@K (against brute force: flip the label, recompute), what a
label is worth, and a whole offline campaign under each policy on a small synthetic pool."""

import numpy as np
import pytest

from annotation.campaigns.pooling import Pool
from annotation.policy import label_value
from annotation.policy import rules as policy
from annotation.simulation import offline as offline_campaign
from annotation.simulation.model import Record, World

KS = (1, 5, 10)


def correct_at(ranks: np.ndarray, relevant: np.ndarray, known: np.ndarray, k: int) -> np.ndarray:
    """Runs: whether a positive (pooled and relevant, or known) sits in the top k."""
    pooled = ((ranks > 0) & (ranks <= k) & relevant[:, None]).any(axis=0)
    return pooled | ((known > 0) & (known <= k))


def brute_force_cells(ranks, relevant, known) -> np.ndarray:
    cells = np.zeros(len(relevant), np.int64)
    for j in range(len(relevant)):
        flipped = relevant.copy()
        flipped[j] = ~flipped[j]
        for k in KS:
            changed = correct_at(ranks, relevant, known, k) != correct_at(ranks, flipped, known, k)
            cells[j] += int(changed.sum())
    return cells


def random_query(rng, slots: int, runs: int, depth: int):
    ranks = np.zeros((slots, runs), np.int64)
    for r in range(runs):
        chosen = rng.choice(slots, size=min(depth, slots), replace=False)
        ranks[chosen, r] = np.arange(1, chosen.size + 1)
    relevant = rng.random(slots) < 0.3
    known = np.where(rng.random(runs) < 0.3, rng.integers(1, depth + 2, runs), 0)
    return ranks, relevant, known


def test_deciding_cells_match_flipping_each_label():
    rng = np.random.default_rng(7)
    for _ in range(300):
        ranks, relevant, known = random_query(rng, slots=int(rng.integers(1, 16)), runs=3, depth=10)
        got = label_value.deciding_cells(ranks[None], relevant[None], known[None], KS)[0]
        np.testing.assert_array_equal(got, brute_force_cells(ranks, relevant, known))


def test_deciding_cells_by_hand():
    ranks = np.array([[[1], [2], [6]]])
    none = np.array([[False, False, False]])
    assert label_value.deciding_cells(ranks, none, np.zeros((1, 1)), KS).tolist() == [[3, 2, 1]]
    first = np.array([[True, False, False]])
    assert label_value.deciding_cells(ranks, first, np.zeros((1, 1)), KS).tolist() == [[3, 0, 0]]
    # The caption's own video at rank 2: the relevant rank-1 pair now decides only C@1.
    assert label_value.deciding_cells(ranks, first, np.array([[2]]), KS).tolist() == [[1, 0, 0]]


def test_wanted_asks_only_for_deciding_pairs_below_target():
    ranks = np.array([[[1], [2], [6]]])
    labels = np.array([[1, 0, 0]])
    sure = np.array([[0.99, 0.2, 0.2]])
    unsure = np.array([[0.8, 0.2, 0.2]])
    relevant = np.array([[True, False, False]])
    known = np.zeros((1, 1))
    options = {"confidence": 0.95, "cap": 5, "ks": KS}
    want, _ = label_value.wanted(ranks, relevant, known, labels, sure, **options)
    assert want.tolist() == [[False, False, False]]  # settled: nothing below it matters
    want, value = label_value.wanted(ranks, relevant, known, labels, unsure, **options)
    assert want.tolist() == [[True, False, False]]
    assert value[0, 0] == pytest.approx(0.2 * (3 + 1.0))
    want, _ = label_value.wanted(
        ranks, relevant, known, labels, unsure, metric_aware=False, **options
    )
    assert want.tolist() == [[True, True, True]]  # every unlabelled pair, and the unsure one
    capped, _ = label_value.wanted(ranks, relevant, known, np.array([[5, 0, 0]]), unsure, **options)
    assert capped.tolist() == [[False, False, False]]


# -- offline campaigns -------------------------------------------------------------------


def synthetic_pool(queries=60, candidates=25, strengths=(2.0, 1.0, 0.0), depth=10, seed=0):
    rng = np.random.default_rng(seed)
    relevant = rng.random((queries, candidates)) < rng.beta(2, 5, queries)[:, None]
    ranks: dict[tuple[int, int], np.ndarray] = {}
    for r, strength in enumerate(strengths):
        score = rng.normal(size=(queries, candidates)) + strength * relevant
        for q, videos in enumerate(np.argsort(-score, axis=1)[:, :depth]):
            for rank, v in enumerate(videos, start=1):
                ranks.setdefault((q, int(v)), np.zeros(len(strengths), np.int64))[r] = rank
    keys = sorted(ranks, key=lambda key: (key[0], ranks[key][ranks[key] > 0].min(), key[1]))
    pool = Pool(
        np.array([q for q, _ in keys]),
        np.array([v for _, v in keys]),
        np.array([ranks[key] for key in keys]),
    )
    truth = relevant[pool.caption_ids, pool.video_ids]
    known = np.zeros((queries, len(strengths), depth), bool)  # no positive outside the pool
    names = tuple(f"run{r}" for r in range(len(strengths)))
    return World(pool, truth, names, depth, known, np.zeros(queries, np.int64))


def pooled_correct_at(pool: Pool, relevant: np.ndarray, k: int) -> np.ndarray:
    """Runs: mean over queries of Correct@k with the given per-pair labels."""
    hits = (pool.ranks > 0) & (pool.ranks <= k) & relevant[:, None]
    queries = np.unique(pool.caption_ids)
    per_query = np.zeros((queries.size, pool.ranks.shape[1]), bool)
    np.logical_or.at(per_query, np.searchsorted(queries, pool.caption_ids), hits)
    return per_query.mean(axis=0)


def test_a_perfect_crowd_gets_every_correct_at_k_exact_with_fewer_labels():
    world = synthetic_pool()
    pool, truth = world.pool, world.labels
    perfect = offline_campaign.SimulatedCrowd(np.ones(6), np.ones(6))
    outcome = offline_campaign.simulate(
        world, perfect, policy_name="adaptive", order="metric-first", seed=1
    )
    resolved = outcome.status == 1
    for k in KS:
        np.testing.assert_array_equal(
            pooled_correct_at(pool, resolved, k), pooled_correct_at(pool, truth, k)
        )
    fire = offline_campaign.simulate(world, perfect, policy_name="fire", seed=1)
    assert fire.spent["campaign"] >= len(pool)
    assert outcome.spent["campaign"] < 0.8 * fire.spent["campaign"]
    assert outcome.spent["qualification"] == 6 * 20  # everyone passed at the first try


def test_offline_labels_come_from_distinct_annotators_within_the_cap():
    world = synthetic_pool(seed=3)
    crowd = offline_campaign.SimulatedCrowd.of([(0.5, 0.98, 0.98), (0.5, 0.6, 0.6)], 10)
    options = {"policy_name": "adaptive", "order": "depth", "cap": 3, "seed": 2}
    quality = offline_campaign.QualityControl(training_pairs=0)
    outcome = offline_campaign.simulate(world, crowd, quality=quality, **options)
    pairs = list(zip(outcome.pair.tolist(), outcome.annotator.tolist(), strict=True))
    assert len(pairs) == len(set(pairs))  # nobody labels a pair twice
    per_pair = np.bincount(outcome.pair, minlength=len(world.pool))
    assert per_pair.min() >= 1 and per_pair.max() <= 3
    unsure = policy.certainty(outcome.posterior) < policy.DEFAULT_CONFIDENCE
    assert (per_pair[unsure] == 3).all()  # below target only where the cap stopped it
    again = offline_campaign.simulate(world, crowd, quality=quality, **options)
    np.testing.assert_array_equal(again.label, outcome.label)


@pytest.mark.parametrize(
    ("sens", "spec", "admitted"),
    [(1.0, 1.0, True), (0.5, 0.5, False), (0.0, 1.0, False)],  # careful, spammer, always "no"
)
def test_qualification_admits_by_balanced_training_answers(sens, spec, admitted):
    crowd = offline_campaign.SimulatedCrowd(np.array([sens]), np.array([spec]))
    evidence = Record()
    rng = np.random.default_rng(0)
    got = offline_campaign.qualify(crowd, offline_campaign.QualityControl(), rng, evidence)
    assert bool(got[0]) == admitted
    tries = 1 if admitted else offline_campaign.QualityControl().tries
    assert evidence.arrays()[0].size == 20 * tries


def test_settled_correct_at_needs_every_deciding_pair_sure():
    ranks = np.array([[[1], [2], [6]]])
    relevant = np.array([[True, False, False]])
    known = np.zeros((1, 1))
    fixed = np.zeros((1, 3), bool)
    options = {"confidence": 0.95, "ks": KS}
    sure = label_value.settled_correct_at(
        ranks,
        relevant,
        known,
        np.array([[1, 0, 0]]),
        np.array([[0.99, 0.5, 0.5]]),
        fixed,
        **options,
    )
    assert sure.tolist() == [[1.0, 1.0, 1.0]]  # the sure first hit settles every C@K
    unsure = label_value.settled_correct_at(
        ranks, relevant, known, np.array([[1, 0, 0]]), np.array([[0.9, 0.5, 0.5]]), fixed, **options
    )
    assert unsure.tolist() == [[0.0, 0.0, 0.0]]
    nothing = label_value.settled_correct_at(
        ranks, relevant & False, known, np.zeros((1, 3)), np.full((1, 3), 0.3), fixed, **options
    )
    assert nothing.tolist() == [[0.0, 0.0, 0.0]]  # unjudged pairs decide every C@K
    # Where no pair is unsure or unjudged, the settled shares are the exact ones.
    rng = np.random.default_rng(3)
    for _ in range(50):
        query_ranks, rel, own = random_query(rng, slots=8, runs=2, depth=6)
        labels = np.ones((1, 8), np.int64)
        got = label_value.settled_correct_at(
            query_ranks[None], rel[None], own[None], labels, np.where(rel, 1.0, 0.0)[None],
            np.zeros((1, 8), bool), **options,
        )  # fmt: skip
        assert (got == 1.0).all()
