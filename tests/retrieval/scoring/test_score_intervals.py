"""Intervals around re-scored scores: label noise, unjudged pairs, sampled estimates.

The Monte Carlo is held to the exact distribution of each mean score, found by scoring every
labelling of the uncertain pairs with :func:`retrieval.scoring.rescoring.rescore` (an independent
path through :func:`retrieval.scoring.metrics.evaluate`).
"""

import itertools

import numpy as np
import pytest

from retrieval.scoring import rescoring, score_intervals
from retrieval.scoring.score_intervals import (
    LABEL_NOISE,
    SAMPLED,
    UNJUDGED,
    JudgedPairs,
    ScoreInterval,
    interval_metrics,
)

NAMES = interval_metrics()


def world(seed, queries=4, depth=4, videos=9, judged=5, uncertain=0.5, without_own=()):
    """Two runs over ``queries`` rows (own video = row id, except ``without_own`` rows), some
    padding, and ``judged`` judged pairs per row; a share of them with a probability."""
    rng = np.random.default_rng(seed)
    runs = {}
    for name in ("a", "b"):
        items = np.array([rng.permutation(videos)[:depth] for _ in range(queries)])
        items[0, depth - 1] = -1  # a shorter list
        runs[name] = items
    own = np.array([q for q in range(queries) if q not in without_own])
    rows, items = [], []
    for q in range(queries):
        for v in rng.choice(videos, judged, replace=False):
            if v != q:
                rows.append(q)
                items.append(int(v))
    rows, items = np.array(rows), np.array(items)
    relevance = rng.choice([1, 0, -1], len(rows), p=[0.4, 0.45, 0.15])
    p = np.full(len(rows), np.nan)
    drawn = rng.random(len(rows)) < uncertain
    p[drawn] = rng.uniform(0.02, 0.98, int(drawn.sum()))
    return runs, JudgedPairs.of(rows, items, relevance, p), (own, own)


def corrected_qrels(judged: JudgedPairs, positives, labels=None) -> rescoring.Qrels:
    """What ``rescore`` scores: judged pairs at ``labels`` (the resolved relevance by
    default), the original positives winning."""
    labels = (judged.relevance == 1).astype(int) if labels is None else labels
    pairs = rescoring.Qrels.of(judged.rows, judged.items, labels)
    originals = rescoring.Qrels.of(*positives, np.ones(len(positives[0]), int))
    return pairs.union(originals)


def means_under(runs, judged, positives, labels) -> dict:
    result = rescoring.rescore(runs, corrected_qrels(judged, positives, labels))
    return {run: {m: result.blocks["corrected"][run].means[m] for m in NAMES} for run in runs}


def uncertain_pairs(judged: JudgedPairs, positives) -> np.ndarray:
    original = set(zip(*(np.asarray(a).tolist() for a in positives), strict=True))
    flip = np.where(judged.relevance == 1, 1 - judged.p_relevant, judged.p_relevant)
    pairs = zip(judged.rows.tolist(), judged.items.tolist(), strict=True)
    return np.array([f > 0 and pair not in original for f, pair in zip(flip, pairs, strict=True)])


def exact_distribution(runs, judged, positives) -> dict:
    """Run -> metric -> (values, probabilities) over every labelling of the uncertain pairs,
    the labellings with no mean (no query with a positive) left out and the rest renormalised."""
    open_ = np.flatnonzero(uncertain_pairs(judged, positives))
    base = (judged.relevance == 1).astype(int)
    out = {run: {m: ([], []) for m in NAMES} for run in runs}
    for bits in itertools.product([0, 1], repeat=len(open_)):
        labels = base.copy()
        labels[open_] = bits
        p = judged.p_relevant[open_]
        weight = float(np.prod(np.where(np.array(bits) == 1, p, 1 - p)))
        for run, means in means_under(runs, judged, positives, labels).items():
            for m, value in means.items():
                if not np.isnan(value):
                    out[run][m][0].append(value)
                    out[run][m][1].append(weight)
    return {
        run: {m: (np.array(v), np.array(w) / np.sum(w)) for m, (v, w) in metrics_.items()}
        for run, metrics_ in out.items()
    }


def test_the_value_is_rescores_corrected_mean():
    for seed in range(8):
        runs, judged, positives = world(seed, queries=12, depth=6, videos=15, without_own=(3,))
        intervals = score_intervals.score_intervals(runs, judged, positives, draws=50)
        expected = means_under(runs, judged, positives, (judged.relevance == 1).astype(int))
        for run in runs:
            for m in NAMES:
                assert intervals[run][m].value == expected[run][m], (seed, run, m)


def test_certain_labels_and_nothing_unjudged_give_exact_scores():
    runs, judged, positives = world(0, queries=10, depth=5, videos=12, uncertain=0.0)
    certain = JudgedPairs.of(judged.rows, judged.items, judged.relevance, None)
    for labels in (judged, certain):
        intervals = score_intervals.score_intervals(runs, labels, positives)
        for run in runs:
            for interval in intervals[run].values():
                assert interval.low == interval.value == interval.high
                assert interval.parts == ()
    # A probability that agrees with the relevance is certain too.
    agreeing = JudgedPairs.of(
        judged.rows, judged.items, judged.relevance, (judged.relevance == 1).astype(float)
    )
    assert score_intervals.score_intervals(runs, agreeing, positives) == intervals


@pytest.mark.parametrize("seed", range(6))
def test_the_monte_carlo_ends_are_the_exact_quantiles(seed):
    """Up to ~10 uncertain pairs on 2-4 queries: each end of the interval is a 2.5% (97.5%)
    quantile of the exact distribution, within the Monte Carlo error of 20,000 draws. Some
    probabilities are small (flips drawn by their gaps), one query may lack its own video."""
    rng = np.random.default_rng(100 + seed)
    queries = int(rng.integers(2, 5))
    runs, judged, positives = world(
        seed,
        queries=queries,
        depth=int(rng.integers(3, 6)),
        videos=8,
        judged=4,
        uncertain=0.7,
        without_own=(1,) if seed % 2 else (),
    )
    p = judged.p_relevant.copy()
    small = rng.random(len(p)) < 0.3
    p[small] = np.where(judged.relevance[small] == 1, 0.97, 0.03)
    judged = JudgedPairs.of(judged.rows, judged.items, judged.relevance, p)
    p[np.flatnonzero(uncertain_pairs(judged, positives))[10:]] = np.nan  # at most 10
    judged = JudgedPairs.of(judged.rows, judged.items, judged.relevance, p)
    assert 1 <= uncertain_pairs(judged, positives).sum() <= 10
    intervals = score_intervals.score_intervals(runs, judged, positives, draws=20_000, seed=seed)
    exact = exact_distribution(runs, judged, positives)
    tolerance, eps = 0.006, 1e-12
    for run in runs:
        for m in NAMES:
            values, weights = exact[run][m]
            interval = intervals[run][m]
            assert weights[values < interval.low - eps].sum() <= 0.025 + tolerance
            assert weights[values > interval.high + eps].sum() <= 0.025 + tolerance
            # An end widened to reach the value (unlikely resolved labels) is no quantile.
            if interval.low < interval.value - eps:
                assert weights[values <= interval.low + eps].sum() >= 0.025 - tolerance
            if interval.high > interval.value + eps:
                assert weights[values >= interval.high - eps].sum() >= 0.025 - tolerance
            assert interval.low - eps <= interval.value <= interval.high + eps
            moves = weights[np.abs(values - interval.value) > eps].sum() > 0
            assert (LABEL_NOISE in interval.parts) == moves


def test_every_way_of_scoring_a_draw_agrees(monkeypatch):
    """Queries with few pairs that flip often have every labelling scored (the polynomial);
    the others have each drawn labelling scored, named by bits (up to 12 pairs) or not:
    forced through each way, the same draws give the same means."""
    runs, judged, positives = world(5, queries=40, depth=8, videos=30, judged=16, uncertain=0.6)
    p = judged.p_relevant.copy()
    p[::5] = np.where(judged.relevance[::5] == 1, 0.995, 0.005)  # rare flips too
    judged = JudgedPairs.of(judged.rows, judged.items, judged.relevance, p)
    rows = np.arange(5)  # a few queries with one or two pairs that can flip
    few = ~np.isin(judged.rows, rows) | (np.arange(len(judged.rows)) % 7 == 0)
    judged = JudgedPairs.of(judged.rows[few], judged.items[few], judged.relevance[few], p[few])
    unjudged = (np.array([6, 7, 7]), np.array([28, 27, 29]))
    first = score_intervals.score_intervals(runs, judged, positives, unjudged=unjudged, draws=300)
    monkeypatch.setattr(score_intervals, "_WHOLE", 0)
    second = score_intervals.score_intervals(runs, judged, positives, unjudged=unjudged, draws=300)
    monkeypatch.setattr(score_intervals, "_SMALL", 0)
    third = score_intervals.score_intervals(runs, judged, positives, unjudged=unjudged, draws=300)
    for other in (second, third):
        for run in runs:
            for m in NAMES:
                a, b = first[run][m], other[run][m]
                assert (a.low, a.high) == pytest.approx((b.low, b.high), abs=1e-12)
                assert a.parts == b.parts


def test_the_unjudged_envelope_holds_every_labelling_of_the_unjudged_pairs():
    """Certain labels: the ends are the least and greatest mean over every labelling of the
    unjudged pairs (C@K: all irrelevant, all relevant), listed by a run or not."""
    for seed in range(4):
        runs, judged, positives = world(seed, queries=4, depth=5, videos=12, uncertain=0.0)
        rng = np.random.default_rng(seed)
        taken = set(zip(judged.rows.tolist(), judged.items.tolist(), strict=True))
        candidates = [(q, v) for q in range(4) for v in range(12) if (q, v) not in taken and v != q]
        chosen = [candidates[i] for i in rng.choice(len(candidates), 9, replace=False)]
        rows = np.array([q for q, _ in chosen])
        items = np.array([v for _, v in chosen])
        intervals = score_intervals.score_intervals(runs, judged, positives, unjudged=(rows, items))
        every = {run: {m: [] for m in NAMES} for run in runs}
        for bits in itertools.product([0, 1], repeat=len(chosen)):
            extra = JudgedPairs.of(
                np.r_[judged.rows, rows],
                np.r_[judged.items, items],
                np.r_[judged.relevance, np.array(bits)],
            )
            labels = (extra.relevance == 1).astype(int)
            for run, means in means_under(runs, extra, positives, labels).items():
                for m, value in means.items():
                    every[run][m].append(value)
        for run in runs:
            for m in NAMES:
                interval = intervals[run][m]
                assert interval.low == pytest.approx(min(every[run][m]), abs=1e-12)
                assert interval.high == pytest.approx(max(every[run][m]), abs=1e-12)
                if m.startswith("C@"):
                    assert interval.low == pytest.approx(every[run][m][0], abs=1e-12)
                    assert interval.high == pytest.approx(every[run][m][-1], abs=1e-12)
                moves = min(every[run][m]) < max(every[run][m])
                assert interval.parts == ((UNJUDGED,) if moves else ())


def test_the_least_ap_counts_the_lowest_unjudged_pair_and_the_unlisted_ones_relevant():
    """Own video first; unjudged pairs at ranks 2 and 5 and one the run does not list. AP is
    greatest with none relevant (1), least with rank 5 and the unlisted one relevant (a
    positive low in the list, and R grown, pull it down; rank 2 relevant would lift it)."""
    items = np.array([[0, 10, 11, 12, 13]])
    judged = JudgedPairs.of([0, 0], [11, 12], [0, 0])
    own = (np.array([0]), np.array([0]))
    unjudged = (np.array([0, 0, 0]), np.array([10, 13, 20]))
    got = score_intervals.score_intervals({"r": items}, judged, own, unjudged=unjudged)["r"]
    assert (got["AP"].low, got["AP"].high) == pytest.approx(((1 + 2 / 5) / 3, 1.0))
    # nDCG's least is the unlisted pair alone: rank 5 relevant too adds 1/log2(6) to the gain
    # but 1/log2(4) to the ideal, a larger share than the gain's.
    assert (got["nDCG@10"].low, got["nDCG@10"].high) == pytest.approx((1 / (1 + 1 / np.log2(3)), 1))
    assert got["C@1"].parts == () and got["C@5"].parts == ()
    assert got["AP"].parts == (UNJUDGED,) and got["AP"].value == 1.0


def test_with_label_noise_the_envelope_holds_both_extreme_readings():
    """The draws of a pair do not depend on the unjudged pairs, so the envelope's low end is
    at most the noise interval with every unjudged pair irrelevant, and its high end at least
    the noise interval with every one relevant."""
    runs, judged, positives = world(3, queries=30, depth=6, videos=25, judged=6)
    rng = np.random.default_rng(3)
    taken = set(zip(judged.rows.tolist(), judged.items.tolist(), strict=True))
    chosen = sorted(
        {
            (int(q), int(v))
            for q, v in zip(rng.integers(0, 30, 40), rng.integers(0, 25, 40), strict=True)
        }
        - taken
        - {(q, q) for q in range(30)}
    )
    rows, items = np.array(chosen).T
    envelope = score_intervals.score_intervals(
        runs, judged, positives, unjudged=(rows, items), draws=500
    )
    irrelevant = score_intervals.score_intervals(runs, judged, positives, draws=500)
    relevant_labels = JudgedPairs.of(
        np.r_[judged.rows, rows],
        np.r_[judged.items, items],
        np.r_[judged.relevance, np.ones(len(rows), int)],
        np.r_[judged.p_relevant, np.ones(len(rows))],
    )
    relevant = score_intervals.score_intervals(runs, relevant_labels, positives, draws=500)
    for run in runs:
        for m in NAMES:
            assert envelope[run][m].value == irrelevant[run][m].value
            assert envelope[run][m].low <= irrelevant[run][m].low + 1e-12
            assert envelope[run][m].high >= relevant[run][m].high - 1e-12
            assert envelope[run][m].high >= irrelevant[run][m].high - 1e-12
            assert UNJUDGED in envelope[run][m].parts


def test_the_intervals_cover_the_true_scores():
    """Posteriors calibrated to a truth drawn from them: over 200 seeded worlds the 95%
    interval holds the score under the true labels at least 90% of the time, per metric."""
    trials, covered = 200, {run: dict.fromkeys(NAMES, 0) for run in ("a", "b")}
    for trial in range(trials):
        rng = np.random.default_rng(1000 + trial)
        runs, judged, positives = world(trial, queries=25, depth=6, videos=20, judged=6)
        p = np.where(
            rng.random(len(judged.rows)) < 0.3,
            rng.uniform(0.05, 0.95, len(judged.rows)),
            rng.choice([0.02, 0.98], len(judged.rows)),
        )
        truth = (rng.random(len(p)) < p).astype(int)
        relevance = np.where(p > 0.5, 1, 0)
        relevance[np.abs(p - 0.5) < 0.05] = -1  # near-coins stay disagreements
        labels = JudgedPairs.of(judged.rows, judged.items, relevance, p)
        intervals = score_intervals.score_intervals(runs, labels, positives, draws=1000, seed=trial)
        true = means_under(runs, labels, positives, truth)
        for run in runs:
            for m in NAMES:
                interval = intervals[run][m]
                covered[run][m] += interval.low - 1e-12 <= true[run][m] <= interval.high + 1e-12
    for run in covered:
        for m, count in covered[run].items():
            assert count / trials >= 0.90, (run, m, count)


def test_the_same_seed_gives_the_same_intervals_whatever_else_is_scored():
    runs, judged, positives = world(7, queries=20, depth=5, videos=15)
    first = score_intervals.score_intervals(runs, judged, positives, seed=4)
    assert score_intervals.score_intervals(runs, judged, positives, seed=4) == first
    alone = score_intervals.score_intervals({"b": runs["b"]}, judged, positives, seed=4)
    assert alone["b"] == first["b"]  # a pair's draws do not depend on the other runs
    other = score_intervals.score_intervals(runs, judged, positives, seed=5)
    assert other != first


def test_a_sampled_estimate_is_widened_by_the_label_noise():
    runs, judged, positives = world(2, queries=15, depth=5, videos=12)
    noise = score_intervals.score_intervals(runs, judged, positives, seed=1)
    estimates = {"a": {"AP": (0.2, 0.6)}}
    widened = score_intervals.score_intervals(runs, judged, positives, estimates=estimates, seed=1)
    plain, ap = noise["a"]["AP"], widened["a"]["AP"]
    assert LABEL_NOISE in plain.parts
    assert ap.parts == (LABEL_NOISE, SAMPLED)
    assert ap.value == plain.value
    assert ap.low == pytest.approx(max(0.2 - max(plain.value - plain.low, 0), 0))
    assert ap.high == pytest.approx(min(0.6 + max(plain.high - plain.value, 0), 1))
    assert widened["b"] == noise["b"] and widened["a"]["C@1"] == noise["a"]["C@1"]
    # With certain labels the estimate's own interval stands.
    certain = JudgedPairs.of(judged.rows, judged.items, judged.relevance)
    alone = score_intervals.score_intervals(runs, certain, positives, estimates=estimates)
    assert alone["a"]["AP"].parts == (SAMPLED,)
    assert (alone["a"]["AP"].low, alone["a"]["AP"].high) == (0.2, 0.6)


def test_a_coin_resolved_not_relevant_widens_the_interval_to_its_value():
    """The draws say where the score lies given the probabilities: twenty queries whose top
    item is a disagreement (0.5) score C@1 = 0 resolved, about 0.5 drawn; the interval
    reaches down to the value, so the value is never outside its own interval."""
    queries = 20
    items = np.column_stack([np.full(queries, 100), np.arange(queries)])  # own video second
    judged = JudgedPairs.of(
        np.arange(queries), np.full(queries, 100), np.full(queries, -1), np.full(queries, 0.5)
    )
    own = (np.arange(queries), np.arange(queries))
    interval = score_intervals.score_intervals({"r": items}, judged, own)["r"]["C@1"]
    assert interval.value == 0.0 == interval.low
    assert 0.5 < interval.high < 0.8
    assert interval.parts == (LABEL_NOISE,)


def test_no_query_with_a_positive_gives_nan():
    items = np.array([[1, 2], [2, 1]])
    judged = JudgedPairs.of([0], [1], [0], [0.0])
    none = (np.array([], int), np.array([], int))
    interval = score_intervals.score_intervals({"r": items}, judged, none)["r"]["AP"]
    assert np.isnan(interval.value) and np.isnan(interval.low) and np.isnan(interval.high)
    assert interval.parts == ()
    # Relevant in some draws only: the value has no mean, the draws that do make the ends.
    maybe = JudgedPairs.of([0], [1], [0], [0.3])
    interval = score_intervals.score_intervals({"r": items}, maybe, none)["r"]["AP"]
    assert np.isnan(interval.value) and interval.low == interval.high == 1.0
    assert interval.parts == (LABEL_NOISE,)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="same length"):
        JudgedPairs.of([0, 1], [1], [1, 0])
    with pytest.raises(ValueError, match="between 0 and 1"):
        JudgedPairs.of([0], [1], [1], [1.5])
    with pytest.raises(ValueError, match="1, 0 or -1"):
        JudgedPairs.of([0], [1], [2])
    items = np.array([[1, 2]])
    none = (np.array([], int), np.array([], int))
    with pytest.raises(ValueError, match="more than once"):
        score_intervals.score_intervals({"r": items}, JudgedPairs.of([0, 0], [1, 1], [1, 1]), none)
    with pytest.raises(ValueError, match="rows must lie"):
        score_intervals.score_intervals({"r": items}, JudgedPairs.of([3], [1], [1]), none)


def test_exact_intervals_and_their_json():
    intervals = score_intervals.exact_intervals({"C@1": 0.5, "R@1": 0.2, "AP": 0.4})
    assert list(intervals) == ["C@1", "AP"]
    assert intervals["AP"] == ScoreInterval("AP", 0.4, 0.4, 0.4)
    assert intervals["AP"].as_dict() == {
        "value": 0.4,
        "low": 0.4,
        "high": 0.4,
        "parts": [],
        "dominant": None,
    }
