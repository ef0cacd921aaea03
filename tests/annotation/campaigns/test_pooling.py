"""System pooling (FIRE §2.2.1): hand-built cases and a comparison with a naive pooler."""

import numpy as np
import pytest

from annotation.campaigns.pooling import MAX_DEPTH, Pool, pool, ranks_within, sample_queries
from retrieval.search.runs import RankedLists


def lists(rows: dict[int, list[int]], width: int | None = None) -> RankedLists:
    """A run from ``{query id: [video ids in rank order]}``, padded with -1 to ``width``."""
    width = width or max(len(videos) for videos in rows.values())
    items = np.full((len(rows), width), -1, dtype=np.int64)
    for i, videos in enumerate(rows.values()):
        items[i, : len(videos)] = videos
    scores = np.where(items >= 0, -np.arange(width, dtype=np.float64), -np.inf)
    return RankedLists(np.array(list(rows), dtype=np.int64), items, scores)


def as_triples(result: Pool) -> list[tuple[int, int, tuple[int, ...]]]:
    return [
        (int(c), int(v), tuple(int(x) for x in r))
        for c, v, r in zip(result.caption_ids, result.video_ids, result.ranks, strict=True)
    ]


def test_union_across_runs_with_exact_provenance():
    a = lists({1: [10, 11, 12]})
    b = lists({1: [12, 13, 10]})
    result = pool([a, b], depth=3)
    assert as_triples(result) == [
        (1, 10, (1, 3)),
        (1, 12, (3, 1)),
        (1, 11, (2, 0)),
        (1, 13, (0, 2)),
    ]
    assert result.ranks.dtype == np.int16
    assert result.caption_ids.dtype == np.int64 and result.video_ids.dtype == np.int64


def test_depth_cuts_each_run():
    a = lists({1: [10, 11, 12, 13]})
    b = lists({1: [14, 12, 15, 16]})
    result = pool([a, b], depth=2)
    assert as_triples(result) == [
        (1, 10, (1, 0)),
        (1, 14, (0, 1)),
        (1, 11, (2, 0)),
        (1, 12, (0, 2)),
    ]


def test_depth_beyond_the_lists_takes_everything():
    result = pool([lists({1: [10, 11]})], depth=50)
    assert result.video_ids.tolist() == [10, 11]


def test_origin_video_left_out_as_mapping_or_arrays():
    a = lists({1: [10, 11], 2: [20, 10]})
    expected = [(1, 11, (2,)), (2, 10, (2,))]
    assert as_triples(pool([a], 2, origin={1: 10, 2: 20, 3: 30})) == expected
    origin = (np.array([1, 2, 3]), np.array([10, 20, 30]))
    assert as_triples(pool([a], 2, origin=origin)) == expected


def test_already_judged_pairs_left_out():
    a = lists({1: [10, 11, 12], 2: [10, 11, 12]})
    judged = (np.array([1, 2, 2, 9]), np.array([11, 10, 12, 10]))
    result = pool([a], 3, exclude=judged)
    assert as_triples(result) == [(1, 10, (1,)), (1, 12, (3,)), (2, 11, (2,))]


def test_queries_only_in_one_run_and_in_different_orders():
    a = lists({1: [10, 11], 2: [20, 21]})
    b = lists({3: [30, 31], 1: [11, 12]})
    result = pool([a, b], 2)
    assert as_triples(result) == [
        (1, 10, (1, 0)),
        (1, 11, (2, 1)),
        (1, 12, (0, 2)),
        (2, 20, (1, 0)),
        (2, 21, (2, 0)),
        (3, 30, (0, 1)),
        (3, 31, (0, 2)),
    ]


def test_padding_ignored():
    a = lists({1: [10], 2: [20, 21, 22]}, width=4)
    result = pool([a], 4)
    assert (result.video_ids >= 0).all()
    assert as_triples(result) == [(1, 10, (1,)), (2, 20, (1,)), (2, 21, (2,)), (2, 22, (3,))]


def test_pairs_contiguous_per_caption_ordered_by_best_rank_then_video():
    a = lists({5: [50, 51, 52, 53], 4: [40, 41, 42, 43]})
    b = lists({4: [43, 44, 40, 45], 5: [53, 52, 51, 50]})
    result = pool([a, b], 4)
    assert result.caption_ids.tolist() == [4] * 6 + [5] * 4
    best = np.where(result.ranks > 0, result.ranks, 99).min(axis=1)
    assert best.tolist() == [1, 1, 2, 2, 3, 4, 1, 1, 2, 2]
    assert result.video_ids.tolist() == [40, 43, 41, 44, 42, 45, 50, 53, 51, 52]


def test_duplicate_video_in_a_list_keeps_its_best_rank():
    result = pool([lists({1: [10, 11, 10]})], 3)
    assert as_triples(result) == [(1, 10, (1,)), (1, 11, (2,))]


def test_queries_restricts_pooling_to_a_sample():
    a = lists({1: [10], 2: [20], 3: [30]})
    result = pool([a], 1, queries=np.array([3, 1, 7]))
    assert result.caption_ids.tolist() == [1, 3]


def test_overlap_counts():
    a = lists({1: [10, 11], 2: [20, 21]})
    b = lists({1: [11, 12], 2: [20, 21]})
    c = lists({1: [11, 13]})
    result = pool([a, b, c], 2)
    assert result.caption_ids.tolist() == [1, 1, 1, 1, 2, 2]
    assert np.count_nonzero(result.ranks, axis=0).tolist() == [4, 4, 2]
    # pairs: (1,10) a; (1,11) abc; (1,12) b; (1,13) c; (2,20) ab; (2,21) ab
    assert result.overlap_counts().tolist() == [0, 3, 2, 1]
    assert len(result) == 6 and result.run_count == 3


def test_empty_inputs():
    assert len(pool([], 10)) == 0
    empty = pool([lists({1: [10]})], 1, exclude=(np.array([1]), np.array([10])))
    assert len(empty) == 0 and empty.ranks.shape == (0, 1)
    assert empty.overlap_counts().tolist() == [0, 0]


def test_huge_video_ids_still_pool():
    big = np.iinfo(np.int64).max - 5
    result = pool(
        [lists({1: [big, 3]}), lists({2: [big], 1: [3]})],
        2,
        exclude=(np.array([2]), np.array([big])),
    )
    assert as_triples(result) == [(1, 3, (2, 1)), (1, big, (1, 0))]


def test_depth_validated():
    with pytest.raises(ValueError):
        pool([lists({1: [10]})], 0)
    with pytest.raises(ValueError):
        pool([lists({1: [10]})], MAX_DEPTH + 1)


def test_sample_queries_seeded_sorted_and_sized():
    ids = np.arange(1000, 0, -1, dtype=np.int64)
    first = sample_queries(ids, 100, seed=7)
    assert first.size == 100 and np.unique(first).size == 100
    assert (np.diff(first) > 0).all()
    assert np.isin(first, ids).all()
    assert np.array_equal(first, sample_queries(np.concatenate([ids[::-1], ids]), 100, seed=7))
    assert not np.array_equal(first, sample_queries(ids, 100, seed=8))
    assert sample_queries(np.array([3, 1, 3]), 10, seed=0).tolist() == [1, 3]
    with pytest.raises(ValueError):
        sample_queries(ids, -1, seed=0)


def naive_pool(runs, depth, origin, judged, queries):
    """Pooling as a reader would write it: dict of per-run best ranks per (caption, video)."""
    found: dict[tuple[int, int], dict[int, int]] = {}
    for r, run in enumerate(runs):
        for q, row in zip(run.query_ids.tolist(), run.item_ids.tolist(), strict=True):
            if queries is not None and q not in queries:
                continue
            for rank, video in enumerate(row[:depth], start=1):
                if video < 0 or origin.get(q) == video or (q, video) in judged:
                    continue
                best = found.setdefault((q, video), {})
                best[r] = min(best.get(r, rank), rank)
    rows = [(c, v, tuple(found[c, v].get(r, 0) for r in range(len(runs)))) for c, v in found]
    return sorted(rows, key=lambda t: (t[0], min(x for x in t[2] if x), t[1]))


@pytest.mark.parametrize("seed", range(8))
def test_matches_naive_pooling_on_random_runs(seed):
    rng = np.random.default_rng(seed)
    n_queries, n_videos, width = 40, 60, 8
    runs = []
    for _ in range(rng.integers(1, 5)):
        query_ids = rng.choice(n_queries, size=rng.integers(1, n_queries), replace=False)
        items = rng.integers(-1, n_videos, size=(query_ids.size, width))
        runs.append(RankedLists(query_ids, items, np.zeros(items.shape)))
    depth = int(rng.integers(1, width + 2))
    origin = {q: int(rng.integers(n_videos)) for q in range(n_queries)}
    judged_c = rng.integers(n_queries, size=50)
    judged_v = rng.integers(n_videos, size=50)
    judged = set(zip(judged_c.tolist(), judged_v.tolist(), strict=True))
    queries = rng.choice(n_queries, size=25, replace=False) if seed % 2 else None
    expected = naive_pool(runs, depth, origin, judged, None if queries is None else set(queries))
    result = pool(runs, depth, origin=origin, exclude=(judged_c, judged_v), queries=queries)
    assert as_triples(result) == expected


def test_ranks_within_reach_below_the_pool_for_pairs_other_runs_pooled():
    """Pooled at depth 2, pair (1, 12) comes from run b only, yet run a ranks it 3rd: C@3 of
    run a depends on it. Pairs nobody pooled stay out; at the pool's depth the pool's ranks."""
    a = lists({1: [10, 11, 12, 14], 2: [20, 21, 22, 23]})
    b = lists({1: [12, 13, 10, 11], 2: [22, 24, 25, 26]})
    pooled = pool([a, b], depth=2)
    assert np.array_equal(ranks_within(pooled, [a, b], 2), pooled.ranks)
    deep = {
        (c, v): tuple(r)
        for c, v, r in as_triples(
            Pool(pooled.caption_ids, pooled.video_ids, ranks_within(pooled, [a, b], 4))
        )
    }
    assert deep[(1, 12)] == (3, 1) and deep[(1, 10)] == (1, 3) and deep[(1, 11)] == (2, 4)
    assert deep[(2, 22)] == (3, 1) and deep[(2, 24)] == (0, 2)
    assert (1, 14) not in deep and (2, 23) not in deep
