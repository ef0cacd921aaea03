"""Retrieval metrics: hand-computed cases, and equality with ir_measures / pytrec_eval.

The randomized tests build TREC-style qrels and runs with string ids, put each of our rows in
trec_eval's order (score descending, docno descending) from the same scores, and compare
every trec_eval-defined metric per query and as a mean to 1e-9.
"""

import math

import ir_measures
import numpy as np
import pytest
import pytrec_eval
from ir_measures import AP, Bpref, Judged, R, Success, nDCG

from retrieval.scoring import metrics
from retrieval.scoring.metrics import (
    FIRST_POSITIVE,
    FIRST_POSITIVE_FOUND,
    FIRST_POSITIVE_MEAN,
    FIRST_POSITIVE_MEDIAN,
    METRIC_NAMES,
    RankedJudgements,
    align_rows,
    evaluate,
    judgements_from_arrays,
    mean_scores,
)
from retrieval.search.runs import descending_key_rank, trec_sort

TOLERANCE = 1e-9


def hand_case() -> RankedJudgements:
    """Four queries over items 1..9 (qrels: 1 = positive, 0 = judged negative).

    row 0: ranks p1 n2 u3 p4, R = 3 (p1, p4, p5 unretrieved), N = 2 (n2, n6 unretrieved)
    row 1: unanswered, R = 1
    row 2: ranks n7, no positive at all (R = 0, N = 1): out of every mean
    row 3: ranks u3 n8 p9, R = 1, N = 1
    """
    item_ids = np.array([[1, 2, 3, 4, -1], [-1] * 5, [7, -1, -1, -1, -1], [3, 8, 9, -1, -1]])
    qrels = [(0, 1, 1), (0, 4, 1), (0, 5, 1), (0, 2, 0), (0, 6, 0), (1, 1, 1), (2, 7, 0)]
    qrels += [(3, 9, 1), (3, 8, 0)]
    rows, items, rel = np.array(qrels).T
    return judgements_from_arrays(item_ids, rows, items, rel)


def test_lookup_marks_positives_judged_items_and_counts():
    j = hand_case()
    assert j.relevant.tolist()[0] == [True, False, False, True, False]
    assert j.judged.tolist()[0] == [True, True, False, True, False]
    assert not j.relevant[1].any() and not j.judged[1].any()
    assert j.judged.tolist()[3] == [False, True, True, False, False]
    assert j.n_relevant.tolist() == [3, 1, 0, 1]
    assert j.n_nonrelevant.tolist() == [2, 0, 1, 1]
    assert j.n_retrieved.tolist() == [4, 0, 1, 3]


def test_hand_computed_per_query_values():
    per_query = evaluate(hand_case(), ks=(1, 5))
    expected = {
        # row 0: positives at ranks 1 and 4 of R = 3
        # row 3: the positive at rank 3 of R = 1
        "C@1": [1, 0, 0, 0],
        "C@5": [1, 0, 0, 1],
        "R@1": [1 / 3, 0, 0, 0],
        "R@5": [2 / 3, 0, 0, 1],
        # row 0: (1/1 + 2/4) / 3;  row 3: (1/3) / 1
        "AP": [0.5, 0, 0, 1 / 3],
        # FIRE: mean precision over the hits found: row 0 (1/1 + 2/4) / 2; row 3 (1/3) / 1
        "FIRE-AP": [0.75, 0, 0, 1 / 3],
        # row 0: (1/log2(2) + 1/log2(5)) / (1/log2(2) + 1/log2(3) + 1/log2(4))
        # row 3: (1/log2(4)) / (1/log2(2)) = 0.5
        "nDCG@10": [
            (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3) + 0.5),
            0,
            0,
            0.5,
        ],
        # judged in the top 10 over the list length when shorter: 3/4, 0 (no list), 1/1, 2/3
        "Judged@10": [0.75, 0, 1, 2 / 3],
        # row 0: p1 has no judged negative above (1), p4 has one: 1 - min(1, R=3)/min(R=3, N=2)
        #        = 1/2; (1 + 1/2) / 3 = 0.5
        # row 3: p9 has n8 above: 1 - min(1, 1)/min(1, 1) = 0
        "bpref": [0.5, 0, 0, 0],
        # condensed lists: row 0 p1 n2 p4 -> (1/1 + 2/3) / 3 = 5/9; row 3 n8 p9 -> (1/2) / 1
        "AP'": [5 / 9, 0, 0, 0.5],
    }
    for name, values in expected.items():
        np.testing.assert_allclose(per_query[name], values, rtol=0, atol=1e-15, err_msg=name)
    np.testing.assert_array_equal(per_query[FIRST_POSITIVE], [1, np.nan, np.nan, 3])


def test_hand_computed_means_skip_queries_without_positives():
    j = hand_case()
    means = mean_scores(evaluate(j), j.n_relevant)
    assert list(means) == list(METRIC_NAMES)
    # rows 0, 1 and 3 have R > 0; row 1 (unanswered) counts 0
    assert means["C@1"] == pytest.approx(1 / 3)
    assert means["C@5"] == pytest.approx(2 / 3)
    assert means["AP"] == pytest.approx((0.5 + 0 + 1 / 3) / 3)
    assert means["Judged@10"] == pytest.approx((0.75 + 0 + 2 / 3) / 3)
    # first positives at ranks 1 and 3; row 1 finds none
    assert means[FIRST_POSITIVE_MEAN] == 2.0
    assert means[FIRST_POSITIVE_MEDIAN] == 2.0
    assert means[FIRST_POSITIVE_FOUND] == pytest.approx(2 / 3)


def test_evaluate_only_the_named_metrics_gives_the_same_values():
    full = evaluate(hand_case(), (1, 3))
    some = evaluate(hand_case(), (1, 3), only=("C@3", "AP", "nDCG@10", FIRST_POSITIVE))
    assert list(some) == ["C@3", "AP", "nDCG@10", FIRST_POSITIVE]
    for name, values in some.items():
        np.testing.assert_array_equal(values, full[name])


def test_fire_ap_only_looks_at_the_top_cutoff():
    relevant = np.zeros((2, 25), bool)
    relevant[0, [1, 21]] = True  # rank 2 in, rank 22 out: (1/2) / 1
    relevant[1, 22] = True  # nothing in the top 20
    j = RankedJudgements(relevant, relevant, np.array([2, 1]), np.array([0, 0]))
    assert evaluate(j)["FIRE-AP"].tolist() == [0.5, 0.0]
    assert evaluate(j)["AP"].tolist() == [(1 / 2 + 2 / 22) / 2, 1 / 23]  # AP sees rank 22


def test_ndcg_ideal_is_cut_at_k_and_lists_may_be_shorter_than_k():
    # R = 12 positives but k = 10: the ideal holds 10; the list has 3 entries, all positives
    j = RankedJudgements(
        np.ones((1, 3), bool), np.ones((1, 3), bool), np.array([12]), np.array([0])
    )
    discount = [1 / math.log2(r + 1) for r in range(1, 11)]
    assert evaluate(j)["nDCG@10"][0] == pytest.approx(sum(discount[:3]) / sum(discount))


def test_judged_at_k_without_list_lengths_divides_by_k_or_the_depth():
    judged = np.array([[True, False, True]])
    j = RankedJudgements(np.zeros_like(judged), judged, np.array([0]), np.array([2]))
    assert evaluate(j, judged_k=2)["Judged@2"].tolist() == [0.5]
    assert evaluate(j, judged_k=10)["Judged@10"].tolist() == [2 / 3]
    empty = RankedJudgements(np.zeros_like(judged), judged, [0], [2], n_retrieved=[0])
    assert evaluate(empty)["Judged@10"].tolist() == [0.0]


def test_bpref_caps_the_negatives_above_at_r():
    # R = 1, N = 3: ranks n n p -> 1 - min(2, 1) / min(1, 3) = 0
    j = RankedJudgements(
        np.array([[False, False, True]]), np.ones((1, 3), bool), np.array([1]), np.array([3])
    )
    assert evaluate(j)["bpref"].tolist() == [0.0]
    # R = 3, N = 1: ranks p n p -> (1 + (1 - 1/1)) / 3
    j = RankedJudgements(
        np.array([[True, False, True]]), np.ones((1, 3), bool), np.array([3]), np.array([1])
    )
    assert evaluate(j)["bpref"].tolist() == [pytest.approx(1 / 3)]


def test_negative_relevance_is_pooled_but_unjudged_as_in_trec_eval():
    # item 5 has rel -1: not judged, not a negative (N = 1), skipped by bpref and AP'
    item_ids = np.array([[5, 1, 2, 3]])
    rows, items, rel = np.array([[0, 5, -1], [0, 1, 1], [0, 2, 0], [0, 3, 1], [0, 4, 0]]).T
    j = judgements_from_arrays(item_ids, rows, items, rel)
    assert j.judged.tolist() == [[False, True, True, True]]
    assert j.n_nonrelevant.tolist() == [2]
    qrels = {"q": {"d5": -1, "d1": 1, "d2": 0, "d3": 1, "d4": 0}}
    run = {"q": {"d5": 4.0, "d1": 3.0, "d2": 2.0, "d3": 1.0}}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate(run)["q"]
    assert evaluate(j)["bpref"][0] == pytest.approx(theirs["bpref"], abs=TOLERANCE)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"map"}, judged_docs_only_flag=1).evaluate(run)
    assert evaluate(j)["AP'"][0] == pytest.approx(theirs["q"]["map"])


def test_judged_at_k_breaks_ties_like_trec_eval_not_like_ir_measures_judged():
    # "a" and "b" tie; trec_eval ranks "b" first (docno descending), so the top 1 is
    # unjudged. ir_measures' Judged provider sorts ties by docno ascending and says 1.
    qrels, run = {"q": {"a": 0}}, {"q": {"a": 1.0, "b": 1.0}}
    ordered, _ = trec_sort(np.array([[0, 1]]), np.array([[1.0, 1.0]]), np.array([[1, 0]]))
    assert ordered.tolist() == [[1, 0]]  # ids 0 = "a", 1 = "b"
    j = judgements_from_arrays(ordered, [0], [0], [0])
    assert evaluate(j, judged_k=1)["Judged@1"].tolist() == [0.0]
    as_relevant = pytrec_eval.RelevanceEvaluator({"q": {"a": 1}}, {"P_1"}).evaluate(run)
    assert as_relevant["q"]["P_1"] == 0.0
    assert ir_measures.calc_aggregate([Judged @ 1], qrels, run)[Judged @ 1] == 1.0


def test_trec_sort_keeps_padding_last_whatever_the_tiebreak_dtype():
    """Padding sorts as +inf score and the largest tiebreak; a narrow tiebreak array must not
    turn that sentinel into -1 and put padding before an item scored -inf."""
    for dtype in (np.int8, np.int16, np.int32, np.int64):
        ordered, _ = trec_sort(
            np.array([[-1, 7]]), np.array([[np.nan, -np.inf]]), np.array([[0, 0]], dtype=dtype)
        )
        assert ordered.tolist() == [[7, -1]], dtype


def test_lookup_rejects_duplicate_qrels_inner_padding_and_bad_rows():
    item_ids = np.array([[1, 2]])
    with pytest.raises(ValueError, match="more than once"):
        judgements_from_arrays(item_ids, np.array([0, 0]), np.array([1, 1]), np.array([1, 0]))
    with pytest.raises(ValueError, match="padding"):
        judgements_from_arrays(np.array([[1, -1, 2]]), np.array([0]), np.array([1]), np.array([1]))
    with pytest.raises(ValueError, match="qrel_rows"):
        judgements_from_arrays(item_ids, np.array([1]), np.array([1]), np.array([1]))
    with pytest.raises(ValueError, match="judged"):
        RankedJudgements(np.ones((1, 1), bool), np.zeros((1, 1), bool), np.ones(1), np.zeros(1))


def test_lookup_handles_huge_ids_and_empty_qrels():
    big = 2**61
    item_ids = np.array([[big + 3, big + 1, 7], [big + 1, -1, -1]])
    rows, items, rel = np.array([[0, big + 1, 1], [1, big + 1, 0], [0, 7, 0]]).T
    j = judgements_from_arrays(item_ids, rows, items, rel)
    assert j.relevant.tolist() == [[False, True, False], [False, False, False]]
    assert j.judged.tolist() == [[False, True, True], [True, False, False]]
    empty = np.array([], dtype=np.int64)
    j = judgements_from_arrays(item_ids, empty, empty, empty)
    assert not j.judged.any() and j.n_relevant.tolist() == [0, 0]
    assert math.isnan(mean_scores(evaluate(j), j.n_relevant)["AP"])


@pytest.mark.parametrize("seed", range(4))
def test_binary_search_lookup_equals_the_table_lookup(seed, monkeypatch):
    # past LOOKUP_TABLE_CELLS the lookup sorts the packed pairs and binary-searches them
    rng = np.random.default_rng(seed)
    item_ids = np.stack([rng.permutation(50)[:12] for _ in range(30)])
    item_ids[rng.random(30) < 0.2, 6:] = -1
    pairs = rng.choice(30 * 50, 400, replace=False)
    rows, items, rel = pairs // 50, pairs % 50, rng.integers(-1, 2, 400)
    table = judgements_from_arrays(item_ids, rows, items, rel)
    monkeypatch.setattr(metrics, "LOOKUP_TABLE_CELLS", 0)
    searched = judgements_from_arrays(item_ids, rows, items, rel)
    for name in ("relevant", "judged", "n_relevant", "n_nonrelevant", "n_retrieved"):
        np.testing.assert_array_equal(getattr(table, name), getattr(searched, name))
    assert searched.relevant.any() and (searched.judged & ~searched.relevant).any()
    with pytest.raises(ValueError, match="more than once"):
        judgements_from_arrays(item_ids, [0, 0], [1, 1], [1, 0])


def test_align_rows_follows_the_qrels_queries():
    run_queries = np.array([30, 10, 99])
    item_ids = np.array([[3, 4], [1, -1], [9, 9]])
    aligned = align_rows(run_queries, item_ids, np.array([10, 20, 30]))
    assert aligned.tolist() == [[1, -1], [-1, -1], [3, 4]]
    with pytest.raises(ValueError, match="twice"):
        align_rows(np.array([1, 1]), item_ids[:2], np.array([1]))


def test_mean_correct_at_ks_keeps_its_behaviour():
    hits = np.array([[False, True, False], [False, False, False]])
    assert metrics.mean_correct_at_ks(hits) == {"C@1": 0.0, "C@5": 0.5, "C@10": 0.5}
    assert metrics.mean_correct_at_ks(np.zeros((0, 3), bool)) == {
        "C@1": 0.0,
        "C@5": 0.0,
        "C@10": 0.0,
    }


# --- randomized comparison with ir_measures / pytrec_eval -------------------------------------

MEASURES = {
    "C@1": Success @ 1,
    "C@5": Success @ 5,
    "C@10": Success @ 10,
    "R@1": R @ 1,
    "R@5": R @ 5,
    "R@10": R @ 10,
    "AP": AP,
    "nDCG@10": nDCG @ 10,
    "bpref": Bpref,
    "AP'": AP(judged_only=True),
}


def random_case(seed: int, max_depth: int):
    """Random graded 0/1 qrels and a run with tied scores, as TREC dicts and as our arrays.

    Some qrels queries have no positive, some are unanswered, the run answers a few queries
    without judgements, lists are 1..``max_depth`` long and scores have one decimal (ties).
    """
    rng = np.random.default_rng(seed)
    n_queries, n_items = 60, 90
    docnos = [f"v{i}" for i in range(n_items)]  # "v10" < "v9": string order is not id order
    qids = [f"q{q}" for q in range(n_queries)]
    qrel_rows, qrel_items, qrel_rel = [], [], []
    qrels: dict[str, dict[str, int]] = {}
    for q, qid in enumerate(qids):
        judged = rng.choice(n_items, size=rng.integers(1, 14), replace=False)
        rel = (rng.random(len(judged)) < (0.0 if rng.random() < 0.15 else 0.4)).astype(int)
        qrels[qid] = {docnos[i]: int(r) for i, r in zip(judged, rel, strict=True)}
        qrel_rows += [q] * len(judged)
        qrel_items += judged.tolist()
        qrel_rel += rel.tolist()

    answered = [q for q in range(n_queries) if rng.random() < 0.8] + list(range(1000, 1005))
    item_ids = np.full((len(answered), max_depth), -1, dtype=np.int64)
    scores = np.zeros(item_ids.shape)
    run: dict[str, dict[str, float]] = {}
    for row, q in enumerate(answered):
        length = int(rng.integers(1, max_depth + 1))
        near = [docnos.index(d) for d in qrels.get(f"q{q}", {})]
        pool = np.unique(np.concatenate([near, rng.choice(n_items, 10)])).astype(np.int64)
        items = rng.choice(pool, size=min(length, len(pool)), replace=False)
        values = np.round(rng.random(len(items)), 1)
        item_ids[row, : len(items)] = items
        scores[row, : len(items)] = values
        run[f"q{q}" if q < n_queries else f"x{q}"] = {
            docnos[i]: float(s) for i, s in zip(items, values, strict=True)
        }
    tiebreak = descending_key_rank(docnos)[np.where(item_ids < 0, 0, item_ids)]
    ordered, _ = trec_sort(item_ids, scores, tiebreak)
    aligned = align_rows(np.array(answered), ordered, np.arange(n_queries))
    j = judgements_from_arrays(
        aligned, np.array(qrel_rows), np.array(qrel_items), np.array(qrel_rel)
    )
    # The same run with strictly decreasing scores in our (trec_eval) order: ir_measures'
    # Judged provider breaks ties by docno *ascending*, so ties are taken out for it.
    untied = {
        f"q{q}": {docnos[i]: float(len(row) - r) for r, i in enumerate(row[row >= 0])}
        for q, row in zip(range(n_queries), aligned, strict=True)
        if (row >= 0).any()
    }
    return qids, qrels, run, untied, j


def per_query_values(measures, qrels, run) -> dict[tuple[str, str], float]:
    return {
        (str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(measures, qrels, run)
    }


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_depth", [15, 7])
def test_equal_to_ir_measures_per_query_and_mean(seed, max_depth):
    qids, qrels, run, untied, j = random_case(seed, max_depth)
    ours = evaluate(j)
    assert j.relevant.any() and (j.n_relevant == 0).any() and (j.n_retrieved == 0).any()

    theirs = per_query_values(list(MEASURES.values()), qrels, run)
    judged = per_query_values([Judged @ 10], qrels, untied)
    assert {q for _, q in theirs} == set(qids) == {q for _, q in judged}
    for name, measure in MEASURES.items():
        expected = [theirs[str(measure), qid] for qid in qids]
        np.testing.assert_allclose(ours[name], expected, rtol=0, atol=TOLERANCE, err_msg=name)
    expected = [judged["Judged@10", qid] for qid in qids]
    np.testing.assert_allclose(ours["Judged@10"], expected, rtol=0, atol=TOLERANCE)

    # Means: over the qrels queries with a positive, unanswered ones counting 0.
    means = mean_scores(ours, j.n_relevant)
    with_positive = {q: judged for q, judged in qrels.items() if max(judged.values()) > 0}
    aggregate = ir_measures.calc_aggregate(list(MEASURES.values()), with_positive, run)
    for name, measure in MEASURES.items():
        assert means[name] == pytest.approx(aggregate[measure], abs=TOLERANCE), name
    aggregate = ir_measures.calc_aggregate([Judged @ 10], with_positive, untied)
    assert means["Judged@10"] == pytest.approx(aggregate[Judged @ 10], abs=TOLERANCE)


@pytest.mark.parametrize("seed", range(6))
def test_judged_at_10_with_ties_equals_trec_eval_precision_on_judgement_qrels(seed):
    """With ties, Judged@10 is P@10 (trec_eval's order) when every judgement counts as
    relevant, times 10 over the list length when the list is shorter."""
    qids, qrels, run, _, j = random_case(seed, 15)
    everything = {q: {d: 1 for d in judged} for q, judged in qrels.items()}
    result = pytrec_eval.RelevanceEvaluator(everything, {"P_10", "num_ret"}).evaluate(run)
    expected = [
        result[q]["P_10"] * 10 / min(10, result[q]["num_ret"]) if q in result else 0.0 for q in qids
    ]
    np.testing.assert_allclose(evaluate(j)["Judged@10"], expected, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("seed", range(3))
def test_fire_ap_and_first_positive_against_a_plain_loop(seed):
    _, _, _, _, j = random_case(seed, 25)
    per_query = evaluate(j)
    for row, hits in enumerate(j.relevant):
        ranks = np.flatnonzero(hits[:20]) + 1
        fire = np.mean([(i + 1) / rank for i, rank in enumerate(ranks)]) if len(ranks) else 0.0
        assert per_query["FIRE-AP"][row] == pytest.approx(fire, abs=1e-12)
        first = np.flatnonzero(hits)
        assert np.array_equal(
            per_query[FIRST_POSITIVE][row : row + 1],
            [first[0] + 1 if len(first) else np.nan],
            equal_nan=True,
        )
