"""Judging orders: each strategy on hand-made runs, metric-first's exactness, static orders
against trectools, and the live update against the replayed full order."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.campaigns.pooling import pool
from annotation.models import Pair
from annotation.ordering.orders import (
    STRATEGIES,
    exact_correct_at,
    full_order,
    live_relevant,
    make_order,
)
from retrieval.search.runs import RankedLists
from tests.factories import make_campaign


def make_pool(*runs: list[list[int]], depth: int = 10):
    """A pool of runs given as per-query lists of video ids (query q is caption id q)."""
    lists = []
    for run in runs:
        width = max(len(items) for items in run)
        items = np.array([items + [-1] * (width - len(items)) for items in run])
        scores = -np.arange(width, dtype=float)[None].repeat(len(run), 0)
        lists.append(RankedLists(np.arange(len(run)), items, scores))
    return pool(lists, depth)


def served(pooled, order) -> list[tuple[int, int]]:
    return [(int(pooled.caption_ids[p]), int(pooled.video_ids[p])) for p in order.pairs]


def labels_of(pooled, relevant: set[tuple[int, int]]) -> np.ndarray:
    return np.array(
        [
            (int(c), int(v)) in relevant
            for c, v in zip(pooled.caption_ids, pooled.video_ids, strict=True)
        ]
    )


def test_depth_is_todays_caption_blocks():
    pooled = make_pool([[3, 1], [5, 6]], [[1, 2], [6, 7]])
    order = full_order("depth", pooled, np.zeros(len(pooled), bool))
    assert served(pooled, order) == [(0, 1), (0, 3), (0, 2), (1, 5), (1, 6), (1, 7)]
    assert list(make_order("depth", pooled).next_pairs(4)) == list(order.pairs[:4])


def test_other_orders_interleave_queries_round_robin():
    pooled = make_pool([[3, 1], [5, 6]], [[1, 2], [6, 7]])
    order = full_order("rrf", pooled, np.zeros(len(pooled), bool))
    assert [c for c, _ in served(pooled, order)] == [0, 1, 0, 1, 0, 1]
    state = make_order("rrf", pooled)
    first = state.next_pairs(10)
    assert [int(pooled.caption_ids[p]) for p in first] == [0, 1]
    state.update(int(first[0]), False)
    assert int(pooled.caption_ids[state.next_pairs(1)[0]]) == 1  # fewest judgements first


def test_metric_first_serves_only_pairs_that_can_change_correct_at_k():
    # run A: 10, 11, 12; run B: 20, 10, 21. With K in (1, 2), rank-3 pairs never matter.
    pooled = make_pool([[10, 11, 12]], [[20, 10, 21]])
    labels = labels_of(pooled, {(0, 10)})
    order = full_order("metric-first", pooled, labels, ks=(1, 2))
    # 10 is relevant: A's C@1 and C@2 and B's C@2 are decided, 11 no longer matters.
    assert served(pooled, order)[: order.needed] == [(0, 10), (0, 20)]
    state = make_order("metric-first", pooled, ks=(1, 2))
    assert state.needed == 3
    state.update(int(order.pairs[0]), True)
    assert state.needed == 1


def test_metric_first_skips_runs_whose_own_video_is_known_at_rank_one():
    pooled = make_pool([[10, 11]], [[20, 21]])
    state = make_order("metric-first", pooled, ks=(1, 2), known_positive_rank=np.array([[1, 0]]))
    pairs = state.next_pairs(5)
    assert [int(pooled.video_ids[p]) for p in pairs] == [20]
    assert state.needed == 2  # only run B's pairs: 20, 21


def test_maxmean_and_mtf_stay_with_the_run_that_finds_positives():
    # Disjoint runs; A's first pair is irrelevant, B's are all relevant.
    pooled = make_pool([[1, 2, 3]], [[11, 12, 13]])
    labels = labels_of(pooled, {(0, 11), (0, 12), (0, 13)})
    for strategy in ("maxmean", "mtf"):
        order = full_order(strategy, pooled, labels)
        assert [v for _, v in served(pooled, order)] == [1, 11, 12, 13, 2, 3], strategy
    depth = full_order("depth", pooled, labels)
    assert [v for _, v in served(pooled, depth)] == [1, 11, 2, 12, 3, 13]


def test_mtf_moves_off_a_run_after_an_irrelevant_pair():
    pooled = make_pool([[1, 2, 3]], [[11, 12, 13]])
    labels = labels_of(pooled, {(0, 1), (0, 12)})
    order = full_order("mtf", pooled, labels)
    # 1 relevant: stay on A; 2 irrelevant: A drops to -1, go to B (0); 11 irrelevant: both -1,
    # the lower rank wins (12 at rank 2 before 3); 12 relevant: stay on B.
    assert [v for _, v in served(pooled, order)] == [1, 2, 11, 12, 13, 3]


def test_adaptive_rbp_weights_runs_by_their_residual():
    pooled = make_pool([[1, 2]], [[2, 3]])
    state = make_order("rbp-adaptive", pooled, p=0.5)
    priority = dict(zip(pooled.video_ids.tolist(), state.pair_priorities(), strict=True))
    # Residuals start at 0.5 + 0.25 + 0.25 (below the pool) = 1 for both runs.
    assert priority == pytest.approx({1: 0.5, 2: 0.75, 3: 0.25})
    state.update(int(np.flatnonzero(pooled.video_ids == 2)[0]), False)
    priority = dict(zip(pooled.video_ids.tolist(), state.pair_priorities(), strict=True))
    # A's residual is now 0.75, B's 0.5.
    assert priority[1] == pytest.approx(0.375) and priority[3] == pytest.approx(0.125)
    assert priority[2] == -np.inf


def test_an_update_changes_only_its_own_querys_priorities():
    pooled = make_pool([[1, 2, 3], [4, 5, 6]], [[2, 7, 8], [9, 4, 5]])
    for strategy in STRATEGIES:
        state = make_order(strategy, pooled)
        before = state.pair_priorities()
        state.update(0, True)
        after = state.pair_priorities()
        other = pooled.caption_ids == 1
        assert np.array_equal(before[other], after[other]), strategy
        assert after[0] == -np.inf


@pytest.mark.parametrize("strategy", ["metric-first", "mtf", "rbp-adaptive", "rrf", "rbp"])
def test_live_updates_serve_the_replayed_full_order(strategy):
    rng = np.random.default_rng(3)
    runs = [[list(rng.choice(12, 5, replace=False)) for _ in range(6)] for _ in range(3)]
    pooled = make_pool(*runs)
    labels = rng.random(len(pooled)) < 0.3
    order = full_order(strategy, pooled, labels)
    state, live = make_order(strategy, pooled), []
    while len(pairs := state.next_pairs(1)):
        live.append(int(pairs[0]))
        state.update(live[-1], bool(labels[live[-1]]))
    assert live == order.pairs[: order.needed].tolist()
    assert sorted(order.pairs.tolist()) == list(range(len(pooled)))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    runs=st.integers(1, 3),
    queries=st.integers(1, 4),
    depth=st.integers(1, 6),
    ks=st.sets(st.integers(1, 6), min_size=1, max_size=3),
    rate=st.floats(0.0, 1.0),
)
def test_metric_first_gives_the_correct_at_k_of_full_judging(seed, runs, queries, depth, ks, rate):
    rng = np.random.default_rng(seed)
    lists = [
        [list(rng.choice(9, depth, replace=False)) for _ in range(queries)] for _ in range(runs)
    ]
    pooled = make_pool(*lists, depth=depth)
    labels = rng.random(len(pooled)) < rate
    known = np.where(rng.random((queries, runs)) < 0.2, rng.integers(1, depth + 1), 0)
    order = full_order("metric-first", pooled, labels, ks=sorted(ks), known_positive_rank=known)
    judged = np.zeros(len(pooled), bool)
    judged[order.pairs[: order.needed]] = True
    for r in range(runs):
        rank = pooled.ranks[:, r]
        for q in range(queries):
            for k in ks:
                top = (pooled.caption_ids == q) & (rank > 0) & (rank <= k)
                known_hit = 0 < known[q, r] <= k
                full = known_hit or labels[top].any()
                partial = known_hit or (labels & judged)[top].any()
                assert full == partial


def test_unknown_strategy_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown judging order"):
        make_order("random", make_pool([[1]]))


def trec_pool(tmp_path, runs, strategy: str, top: int) -> dict[int, set[int]]:
    from trectools import TrecPoolMaker, TrecRun

    files = []
    for r, run in enumerate(runs):
        path = tmp_path / f"run{r}"
        path.write_text(
            "".join(
                f"{q} Q0 {v} {rank} {-rank} r{r}\n"
                for q, items in enumerate(run)
                for rank, v in enumerate(items, 1)
            )
        )
        files.append(TrecRun(str(path)))
    made = TrecPoolMaker().make_pool(files, strategy=strategy, topX=top, rbp_p=0.8)
    return {int(q): {int(v) for v in docs} for q, docs in made.pool.items()}


@pytest.mark.filterwarnings("ignore:The inplace keyword")  # trectools on pandas 3
@pytest.mark.parametrize("strategy", ["rrf", "rbp"])
def test_static_orders_equal_trectools_pools(tmp_path, strategy):
    pytest.importorskip("trectools")
    rng = np.random.default_rng(7)
    runs = [[list(rng.choice(15, 6, replace=False)) for _ in range(4)] for _ in range(3)]
    pooled = make_pool(*runs)
    state = make_order(strategy, pooled)
    priority = state.pair_priorities()
    order = full_order(strategy, pooled, np.zeros(len(pooled), bool))
    checked = 0
    for q in range(4):
        mine = [p for p in order.pairs if pooled.caption_ids[p] == q]
        for top in range(1, len(mine)):
            if np.isclose(priority[mine[top - 1]], priority[mine[top]]):
                continue  # a tie at the cut: either pair may be pooled
            expected = trec_pool(tmp_path, runs, strategy, top)[q]
            assert {int(pooled.video_ids[p]) for p in mine[:top]} == expected
            checked += 1
    assert checked > 20


def _exact_by_brute_force(ranks, query_of, judged, relevant, known, ks):
    """Runs x ks shares of queries whose C@K is the same with every unjudged pair counted
    relevant and then irrelevant (plain loops, no numpy sentinels)."""
    queries, runs = len(known), len(known[0]) if len(known) else ranks.shape[1]
    shares = np.zeros((runs, len(ks)))
    for r in range(runs):
        for j, k in enumerate(ks):
            settled = 0
            for q in range(queries):
                found = {True: 0 < known[q][r] <= k, False: 0 < known[q][r] <= k}
                for p in range(len(query_of)):
                    rank = int(ranks[p][r])
                    if query_of[p] != q or not 0 < rank <= k:
                        continue
                    for unjudged_relevant in (True, False):
                        is_hit = relevant[p] if judged[p] else unjudged_relevant
                        found[unjudged_relevant] = found[unjudged_relevant] or bool(is_hit)
                settled += found[True] == found[False]
            shares[r, j] = settled / queries if queries else 1.0
    return shares


def test_exact_correct_at_reads_int16_ranks_as_stored():
    """A campaign stores its ranks as int16: an unjudged rank-1 pair leaves C@1 open however
    narrow the array (NumPy 2 once turned the int32 sentinel into -1, so all read "exact")."""
    ranks = np.array([[1], [2]], dtype=np.int16)  # one query, one run: two unjudged pairs
    known = np.zeros((1, 1), dtype=np.int16)
    shares = exact_correct_at(
        ranks, np.zeros(2, np.int64), np.zeros(2, bool), np.zeros(2, bool), known, (1, 5)
    )
    assert shares.tolist() == [[0.0, 0.0]]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    dtype=st.sampled_from([np.int8, np.int16, np.int32, np.int64]),
    ks=st.sets(st.integers(1, 6), min_size=1, max_size=3),
)
def test_exact_correct_at_equals_brute_force_for_every_rank_dtype(seed, dtype, ks):
    rng = np.random.default_rng(seed)
    queries, runs, pairs = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(0, 9))
    ranks = np.where(rng.random((pairs, runs)) < 0.7, rng.integers(1, 7, (pairs, runs)), 0)
    query_of = rng.integers(0, queries, pairs)
    judged = rng.random(pairs) < 0.5
    relevant = judged & (rng.random(pairs) < 0.5)
    known = np.where(rng.random((queries, runs)) < 0.2, rng.integers(1, 7, (queries, runs)), 0)
    ks = sorted(ks)
    shares = exact_correct_at(
        ranks.astype(dtype), query_of, judged, relevant, known.astype(dtype), ks
    )
    expected = _exact_by_brute_force(
        ranks.tolist(), query_of.tolist(), judged.tolist(), relevant.tolist(), known.tolist(), ks
    )
    np.testing.assert_allclose(shares, expected)


def test_a_tie_counts_as_relevant_until_settled():
    """The order's rule for a pair's live labels, on scalars (the live queue) and arrays."""
    relevant = np.array([0, 1, 1, 1, 2, 0, 2])
    total = np.array([0, 1, 2, 3, 4, 1, 3])
    expected = [False, True, True, False, True, False, True]
    assert live_relevant(relevant, total).tolist() == expected
    assert [
        bool(live_relevant(r, t)) for r, t in zip(relevant.tolist(), total.tolist(), strict=True)
    ] == expected


@pytest.mark.django_db
def test_decided_arrays_agree_with_the_row_rule_on_every_kind_of_pair(django_user_model):
    """judging_status reads the pairs into numpy; its rule is :func:`priorities.decided`'s."""
    from annotation.ordering import priorities, settled

    campaign = make_campaign(n_queries=6, depth=3, rate=0.5)
    pairs = list(campaign.pairs.order_by("pool_row"))
    shapes = [
        dict(label_count=0, relevant_count=0, status="pending"),
        dict(label_count=1, relevant_count=1, status="pending"),
        dict(label_count=2, relevant_count=1, status="disagreement"),
        dict(label_count=2, relevant_count=0, status="irrelevant"),
        dict(label_count=1, relevant_count=1, status="relevant"),
        dict(label_count=0, relevant_count=0, status="relevant", auto_label="bow"),
        dict(label_count=2, relevant_count=1, status="relevant", adjudicated="relevant"),
        dict(label_count=2, relevant_count=2, status="irrelevant", adjudicated="irrelevant"),
        dict(label_count=3, relevant_count=1, status="irrelevant"),
    ]
    for pair, shape in zip(pairs, shapes * 3, strict=False):
        Pair.objects.filter(pk=pair.pk).update(**shape)
    rows = settled.status_rows(campaign)
    named = list(
        campaign.pairs.order_by("pool_row").values_list(
            *priorities.QUERY_COLUMNS[:8], "caption_id", named=True
        )
    )
    for by_status in (False, True):
        judged, relevant = settled.decided_arrays(rows, by_status)
        expected = priorities.decided(named, by_status)
        assert judged.tolist() == expected[0].tolist()
        assert relevant.tolist() == expected[1].tolist()
