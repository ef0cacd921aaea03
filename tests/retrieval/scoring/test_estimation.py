"""Scores when judging stopped early: exact, bounds, and sampled estimates."""

import numpy as np
import pytest

from retrieval.scoring.estimation import (
    BOUNDS,
    ESTIMATE,
    EXACT,
    RunJudgements,
    Sample,
    draw_queries,
    per_query_scores,
    score_run,
)

KS = (1, 2)


def run_of(relevant, unjudged, n_relevant, n_unjudged=None) -> RunJudgements:
    relevant, unjudged = np.array(relevant, bool), np.array(unjudged, bool)
    if n_unjudged is None:
        n_unjudged = unjudged.sum(axis=1)
    return RunJudgements(relevant, unjudged, np.array(n_relevant), np.array(n_unjudged))


def test_a_score_no_unjudged_pair_can_change_is_exact():
    # q0: positive at rank 1, rank 3 unjudged; q1: nothing unjudged anywhere.
    run = run_of([[1, 0, 0], [0, 0, 1]], [[0, 0, 1], [0, 0, 0]], [1, 1])
    scores = score_run(run, KS)
    assert scores["C@1"] == scores["C@1"].__class__("C@1", EXACT, 0.5, 0.5, 0.5)
    assert scores["C@2"].kind == EXACT and scores["C@2"].value == 0.5
    # q0's AP depends on the unjudged rank-3 pair: 1 if irrelevant, (1 + 2/3) / 2 if relevant;
    # q1's is 1/3 either way. Counted relevant it is the lower reading here (R grows).
    ap = scores["AP"]
    assert ap.kind == BOUNDS and ap.value is None
    assert (ap.low, ap.high) == pytest.approx(((5 / 6 + 1 / 3) / 2, (1 + 1 / 3) / 2))
    assert ap.as_dict()["kind"] == "bounds"


def test_correct_at_k_bounds_count_unjudged_pairs_irrelevant_then_relevant():
    run = run_of([[0, 0], [0, 1]], [[1, 0], [0, 0]], [0, 1], n_unjudged=[1, 0])
    c1 = score_run(run, KS)["C@1"]
    assert (c1.kind, c1.low, c1.high) == (BOUNDS, 0.0, 0.5)
    assert score_run(run, KS)["C@2"].low == 0.5


def test_a_pair_outside_the_list_keeps_ap_open_but_not_a_list_without_positives():
    # The run retrieved nothing relevant and has nothing unjudged: AP is 0 whatever R becomes.
    run = run_of([[0, 0]], [[0, 0]], [1], n_unjudged=[3])
    assert score_run(run, KS)["AP"].kind == EXACT
    run = run_of([[1, 0]], [[0, 0]], [1], n_unjudged=[3])
    assert score_run(run, KS)["AP"].kind == BOUNDS


def test_ap_with_one_unjudged_pair_that_cannot_move_it_is_exact():
    """AP is exact when its one unjudged pair gives the same AP either way: right below an
    unbroken run of every positive (1 either way), or where its precision if relevant equals
    the AP without it (positive at 2, pair at 4: 1/2 = (1/2 + 2/4) / 2)."""
    after_every_positive = run_of([[1, 0, 0]], [[0, 1, 0]], [1])
    assert score_run(after_every_positive, KS)["AP"] == score_run(after_every_positive, KS)[
        "AP"
    ].__class__("AP", EXACT, 1.0, 1.0, 1.0)
    coincidence = run_of([[0, 1, 0, 0]], [[0, 0, 0, 1]], [1])
    assert score_run(coincidence, KS)["AP"].kind == EXACT
    assert score_run(coincidence, KS)["AP"].value == pytest.approx(0.5)
    # Two unjudged pairs always move it, even where the two extremes agree (1, then 3/3):
    # the rank-3 pair alone gives (1 + 2/3) / 2.
    two = run_of([[1, 0, 0]], [[0, 1, 1]], [1])
    assert score_run(two, KS)["AP"].kind == BOUNDS
    # The one unjudged pair outside the list moves R: the run's AP moves with it.
    outside = run_of([[1, 0, 0]], [[0, 0, 0]], [1], n_unjudged=[1])
    assert score_run(outside, KS)["AP"].kind == BOUNDS


def test_a_sampled_pair_counts_as_judged_even_before_its_query_is_fully_judged():
    """Bounds read what is judged now: a pair judged for a sample whose query is still open
    is a judgement, not an unjudged pair again."""
    before = run_of([[0, 0], [0, 0]], [[1, 1], [1, 0]], [1, 1])
    now = run_of([[1, 0], [0, 0]], [[0, 1], [1, 0]], [2, 1], n_unjudged=[1, 1])
    scores = score_run(before, KS, sample=Sample(np.zeros(2, bool), now))
    assert scores["C@1"].kind == BOUNDS
    assert (scores["C@1"].low, scores["C@1"].high) == (0.5, 1.0)
    assert scores["C@2"].kind == BOUNDS and scores["C@2"].low == 0.5


def test_an_estimate_stays_a_score_between_0_and_1():
    """Horvitz-Thompson extrapolates the drawn queries' gain to every open one; where an open
    query already reads 1 (q0's AP, its unjudged pair counted irrelevant) the drawn gain of 1
    would carry the mean AP to 1.5. Every score lies in [0, 1], and so does its estimate."""
    before = run_of([[1, 0, 0], [0, 0, 0]], [[0, 0, 1], [1, 0, 0]], [1, 0])
    after = run_of([[1, 0, 0], [1, 0, 0]], [[0, 0, 1], [0, 0, 0]], [1, 1])
    ap = score_run(before, KS, sample=Sample(np.array([False, True]), after))["AP"]
    assert ap.kind == ESTIMATE
    assert 0.0 <= ap.low <= ap.value <= ap.high <= 1.0


def test_a_correct_at_k_estimate_stays_within_its_bounds():
    """q0 was sampled but not fully judged (its top pair judged irrelevant, rank 3 still
    open), q1 drawn and found relevant, q2 never sampled: C@1 is 0, 1 and unknown, so it
    lies in [1/3, 2/3]; carrying q1's gain to q0 and q2 would claim 1."""
    before = run_of([[0, 0, 0]] * 3, [[1, 0, 1], [1, 0, 0], [1, 0, 0]], [0, 0, 0])
    now = run_of([[0, 0, 0], [1, 0, 0], [0, 0, 0]], [[0, 0, 1], [0, 0, 0], [1, 0, 0]], [0, 1, 0])
    c1 = score_run(before, KS, sample=Sample(np.array([False, True, False]), now))["C@1"]
    assert c1.kind == ESTIMATE
    assert 1 / 3 <= c1.low <= c1.value <= c1.high <= 2 / 3


def simulated_world(queries=600, depth=10, seed=0):
    """Complete labels for one run, heterogeneous queries, top ranks judged more often."""
    rng = np.random.default_rng(seed)
    rate = rng.beta(0.5, 4.0, size=(queries, 1)) * np.linspace(1.5, 0.5, depth)
    truth = rng.random((queries, depth)) < np.minimum(rate, 1.0)
    outside = rng.binomial(2, 0.2, size=queries)  # unretrieved positives, always known
    judged = rng.random((queries, depth)) < np.linspace(0.6, 0.1, depth)
    return truth, judged, outside


def state(truth, judged, outside, full_rows=None):
    judged = judged.copy()
    if full_rows is not None:
        judged[full_rows] = True
    relevant = truth & judged
    unjudged = ~judged
    return RunJudgements(relevant, unjudged, outside + relevant.sum(axis=1), unjudged.sum(axis=1))


def test_estimates_are_unbiased_and_their_intervals_cover():
    truth, judged, outside = simulated_world()
    complete = {
        name: float(values.mean())
        for name, values in per_query_scores(truth, outside + truth.sum(axis=1), (1, 5, 10)).items()
    }
    before = state(truth, judged, outside)
    errors, covered = {name: [] for name in complete}, {name: [] for name in complete}
    for seed in range(300):
        drawn = draw_queries(before.n_unjudged, 400, seed)
        after = state(truth, judged, outside, full_rows=drawn)
        for name, score in score_run(before, (1, 5, 10), sample=Sample(drawn, after)).items():
            assert score.kind == ESTIMATE
            errors[name].append(score.value - complete[name])
            covered[name].append(score.low <= complete[name] <= score.high)
    for name in complete:
        spread = np.std(errors[name]) / np.sqrt(len(errors[name]))
        assert abs(np.mean(errors[name])) < 4 * spread + 1e-9, name
        assert 0.88 <= np.mean(covered[name]) <= 1.0, name
    # Without the sample the same scores are only bounded, and the bounds hold the truth.
    for name, score in score_run(before, (1, 5, 10)).items():
        assert score.kind == BOUNDS
        if name.startswith("C@"):
            assert score.low <= complete[name] <= score.high


def test_draw_queries_covers_the_pairs_asked_for_from_open_queries_only():
    n_unjudged = np.array([0, 3, 5, 0, 2, 4])
    drawn = draw_queries(n_unjudged, 6, seed=1)
    assert not drawn[n_unjudged == 0].any()
    assert n_unjudged[drawn].sum() >= 6
    assert n_unjudged[drawn].sum() - n_unjudged[drawn].min() < 6  # stops once covered


def test_a_sample_of_every_open_query_settles_every_score():
    """With every open query drawn and judged nothing is left unjudged: each score is exact,
    the complete score (it was an estimate whose interval closed on it)."""
    truth, judged, outside = simulated_world(queries=80, seed=3)
    complete = per_query_scores(truth, outside + truth.sum(axis=1), (1, 5, 10))
    before = state(truth, judged, outside)
    drawn = before.n_unjudged > 0
    after = state(truth, judged, outside, full_rows=drawn)
    for name, score in score_run(before, (1, 5, 10), sample=Sample(drawn, after)).items():
        assert score.kind == EXACT
        assert score.value == pytest.approx(float(complete[name].mean()))
        assert score.low == score.value == score.high


def test_a_sample_of_all_but_one_open_query_estimates_the_rest():
    """With every open query but one drawn, the scores that query leaves open are estimates
    within two queries' share of the complete score (a gain lies in [-1, 1])."""
    truth, judged, outside = simulated_world(queries=80, seed=3)
    complete = per_query_scores(truth, outside + truth.sum(axis=1), (1, 5, 10))
    before = state(truth, judged, outside)
    drawn = before.n_unjudged > 0
    drawn[np.flatnonzero(drawn)[0]] = False
    after = state(truth, judged, outside, full_rows=drawn)
    scores = score_run(before, (1, 5, 10), sample=Sample(drawn, after))
    assert any(score.kind == ESTIMATE for score in scores.values())
    for name, score in scores.items():
        assert score.kind in (EXACT, ESTIMATE)
        assert abs(score.value - float(complete[name].mean())) <= 2 / 80
        assert 0.0 <= score.low <= score.value <= score.high <= 1.0


def test_one_drawn_query_gives_an_interval_no_wider_than_the_scores_range():
    truth, judged, outside = simulated_world(queries=40, seed=4)
    before = state(truth, judged, outside)
    drawn = np.zeros(40, bool)
    drawn[np.flatnonzero(before.n_unjudged > 0)[0]] = True
    after = state(truth, judged, outside, full_rows=drawn)
    ap = score_run(before, (1,), sample=Sample(drawn, after))["AP"]
    assert ap.kind == ESTIMATE
    assert 0.0 <= ap.low <= ap.value <= ap.high <= 1.0
