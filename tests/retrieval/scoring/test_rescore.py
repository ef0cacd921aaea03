"""The rescore command: file mode against ir_measures, database mode with label sets."""

import csv
import io
import json

import ir_measures
import numpy as np
import pytest
from django.core.management import CommandError, call_command
from ir_measures import AP, Bpref, Judged, R, Success, nDCG

from retrieval.formats import trec
from retrieval.label_sets.judged import Judged as JudgedPairs
from retrieval.label_sets.service import store_label_set
from retrieval.models import Caption, Dataset, RetrievalModel, Video
from retrieval.scoring.estimation import PoolState
from retrieval.scoring.metrics import METRIC_NAMES
from retrieval.scoring.rescoring import Qrels, leave_one_out_qrels, points, table_cell
from retrieval.search.runs import RankedLists
from retrieval.search.runs_service import store_run

MEASURES = {
    "C@1": Success @ 1,
    "C@5": Success @ 5,
    "C@10": Success @ 10,
    "R@5": R @ 5,
    "AP": AP,
    "nDCG@10": nDCG @ 10,
    "Judged@10": Judged @ 10,
    "bpref": Bpref,
}


def write_files(tmp_path, seed):
    """Random qrels (some queries without positives), an original qrels, and two runs."""
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(40)]
    qrels, original = [], []
    for q in range(25):
        own = docs[q]
        original.append(f"q{q} 0 {own} 1")
        qrels.append(f"q{q} 0 {own} {0 if q == 3 else 1}")  # q3: only judged negatives
        for doc in rng.choice(docs, 6, replace=False):
            if doc != own:
                qrels.append(f"q{q} 0 {doc} {int(rng.random() < 0.4 and q != 3)}")
    (tmp_path / "c.qrels").write_text("\n".join(qrels) + "\n")
    (tmp_path / "o.qrels").write_text("\n".join(original) + "\n")
    runs = []
    for r in range(2):
        lines = []
        for q in range(25):
            if q == 7 + r:
                continue  # unanswered
            depth = 5 if q % 6 == 0 else 12  # some lists shorter than 10
            for rank, doc in enumerate(rng.choice(docs, depth, replace=False), start=1):
                score = round(float(rng.random()), 1)  # ties
                lines.append(f"q{q} Q0 {doc} {rank} {score} run{r}")
        lines.append(f"extra Q0 d1 1 1.0 run{r}")  # a query no qrels judge
        path = tmp_path / f"run{r}.txt"
        path.write_text("\n".join(lines) + "\n")
        runs.append(path)
    return tmp_path / "c.qrels", tmp_path / "o.qrels", runs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_file_mode_equals_ir_measures(tmp_path, seed):
    qrels, original, runs = write_files(tmp_path, seed)
    out = io.StringIO()
    call_command(
        "rescore",
        qrels=str(qrels),
        original_qrels=str(original),
        run=[str(r) for r in runs],
        format="json",
        stdout=out,
    )
    result = json.loads(out.getvalue())
    for block, path in (("runs", qrels), ("original", original)):
        # ir_measures averages over every qrels query; ours (as the issue asks) over those
        # with a positive, so the reference gets the qrels of those queries only.
        judged = list(ir_measures.read_trec_qrels(str(path)))
        with_positive = {q.query_id for q in judged if q.relevance > 0}
        judged = [q for q in judged if q.query_id in with_positive]
        for run in runs:
            expected = ir_measures.calc_aggregate(
                list(MEASURES.values()), judged, list(ir_measures.read_trec_run(str(run)))
            )
            # ir_measures' own Judged@K orders tied scores by docno ascending, the other
            # measures (through pytrec_eval) and ours by trec_eval's rule, docno descending;
            # so Judged@K is compared on the same ranking with the ties resolved.
            untied = [
                ir_measures.ScoredDoc(qid, docno, -rank)
                for qid, ranking in trec.read_run(run).rankings.items()
                for rank, (docno, _) in enumerate(ranking)
            ]
            expected[Judged @ 10] = ir_measures.calc_aggregate([Judged @ 10], judged, untied)[
                Judged @ 10
            ]
            got = result[block][run.stem]
            for name, measure in MEASURES.items():
                assert got[name] == pytest.approx(expected[measure], abs=1e-9), (block, name)
    for run in runs:
        for name in MEASURES:
            assert result["delta"][run.stem][name] == pytest.approx(
                result["runs"][run.stem][name] - result["original"][run.stem][name]
            )


def test_file_mode_errors_are_clear(tmp_path):
    qrels, _, runs = write_files(tmp_path, 0)
    with pytest.raises(CommandError, match="give --dataset, or --qrels"):
        call_command("rescore", qrels=str(qrels))
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 Q0 d1 1 high run9\n")
    with pytest.raises(CommandError, match=r"bad.txt, line 1, field 'score'"):
        call_command("rescore", qrels=str(qrels), run=[str(bad)])
    with pytest.raises(CommandError, match="run id 'run0' is also the id of"):
        call_command("rescore", qrels=str(qrels), run=[str(runs[0]), str(runs[0])])


def test_table_cell_reads_like_fire_table_1():
    assert table_cell(0.61, 0.135) == "61.0 (13.5 + 47.5)"
    assert table_cell(0.5, None) == "50.0"


def test_leave_one_out_removes_positives_only_that_run_pooled():
    # Two queries; run a ranks [10, 11], run b ranks [11, 12]; pool depth 2.
    pooled = {"a": np.array([[10, 11], [20, 21]]), "b": np.array([[11, 12], [21, 22]])}
    original = Qrels.of([0, 1], [99, 98], [1, 1])
    corrected = Qrels.of([0, 0, 0, 1, 1, 1], [99, 10, 11, 98, 22, 30], [1, 1, 1, 1, 0, 1])
    masks = leave_one_out_qrels(corrected, original, pooled, depth=2)

    def pairs(q):
        return sorted(zip(q.rows.tolist(), q.items.tolist(), strict=True))

    # Leaving a out drops (0, 10): only a pooled it. (1, 30) came from no pooled run: kept.
    assert (0, 10) not in pairs(masks["a"]) and (0, 11) in pairs(masks["a"])
    assert (1, 30) in pairs(masks["a"]) and (0, 99) in pairs(masks["a"])
    # Leaving b out drops its own pairs (1, 22) (a judged negative) but keeps shared (0, 11).
    assert (1, 22) not in pairs(masks["b"]) and (0, 11) in pairs(masks["b"])
    assert (0, 10) in pairs(masks["b"])


@pytest.fixture
def world(db):
    """Three query captions, eight videos, two runs, and a label set from a 'campaign'."""
    dataset = Dataset.objects.create(name="w")
    videos = Video.objects.bulk_create(
        [Video(dataset=dataset, key=f"v{i}", split="test") for i in range(8)]
    )
    captions = Caption.objects.bulk_create(
        [
            Caption(
                dataset=dataset,
                key=f"c{q}",
                text="a b " * (q + 1),
                video=videos[q],
                split="test",
                is_query=True,
            )
            for q in range(3)
        ]
    )
    caption_ids = np.array([c.pk for c in captions])
    for name, shift in (("first", 1), ("second", 0)):
        model = RetrievalModel.objects.create(dataset=dataset, name=name, source="run")
        items = np.array([[videos[(q + r + shift) % 8].pk for r in range(4)] for q in range(3)])
        scores = -np.arange(4, dtype=float)[None].repeat(3, 0)
        store_run(model, name, RankedLists(caption_ids, items, scores))
    # Judged: for c0, v1 relevant (first ranks it 1st), v2 irrelevant, v3 a disagreement.
    pairs = JudgedPairs.build(
        [captions[0].pk] * 3, [videos[1].pk, videos[2].pk, videos[3].pk], [1, 0, -1]
    )
    store_label_set(
        dataset,
        "fire",
        pairs,
        source="campaign",
        metadata={"pooled_runs": ["first", "second"], "pool_depth": 2},
    )
    return dataset


def test_database_mode_blocks(world):
    out = io.StringIO()
    call_command("rescore", dataset="w", labels="fire", format="json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["queries"] == 3
    # first never ranks a caption's own video (shift 1): originals give C@1 = 0 ...
    assert result["original"]["first"]["C@1"] == 0
    # ... but the judged positive v1 for c0 is its top result: 1 of 3 queries.
    assert result["runs"]["first"]["C@1"] == pytest.approx(1 / 3)
    assert result["delta"]["first"]["C@1"] == pytest.approx(1 / 3)
    # second ranks every own video first.
    assert result["runs"]["second"]["C@1"] == 1 and result["original"]["second"]["C@1"] == 1
    # Leave first out: v1 for c0 was pooled only by first (second has it at rank 2 too:
    # second's top 2 for c0 are v0, v1), so it stays.
    assert result["leave_one_out"]["first"]["C@1"] == pytest.approx(1 / 3)
    table = io.StringIO()
    call_command("rescore", dataset="w", labels="fire", stdout=table)
    assert "33.3 (0.0 + 33.3)" in table.getvalue()
    csv_out = io.StringIO()
    call_command("rescore", dataset="w", labels="fire", format="csv", stdout=csv_out)
    assert csv_out.getvalue().splitlines()[0].startswith("run,positives,C@1")


def test_database_mode_errors(world):
    with pytest.raises(CommandError, match="no label set named 'nope'"):
        call_command("rescore", dataset="w", labels="nope")
    with pytest.raises(CommandError, match="no run named 'ghost'"):
        call_command("rescore", dataset="w", runs="first,ghost")
    with pytest.raises(CommandError, match="choose database mode"):
        call_command("rescore", dataset="w", qrels="x")


def rescore_json(**options) -> dict:
    out = io.StringIO()
    call_command("rescore", format="json", stdout=out, **options)
    return json.loads(out.getvalue())


def test_file_mode_intervals_are_the_scores_themselves(tmp_path):
    """TREC qrels carry no probabilities: every interval is exact."""
    qrels, original, runs = write_files(tmp_path, 0)
    result = rescore_json(qrels=str(qrels), run=[str(r) for r in runs])
    for run in runs:
        intervals = result["intervals"][run.stem]
        assert list(intervals) == ["C@1", "C@5", "C@10", "AP", "nDCG@10"]
        for metric, interval in intervals.items():
            value = result["runs"][run.stem][metric]
            assert interval == {
                "value": value,
                "low": value,
                "high": value,
                "parts": [],
                "dominant": None,
            }
    assert any(note.startswith("intervals:") for note in result["notes"])


def test_a_label_set_with_confidences_widens_the_intervals(world):
    """The same judgements with probabilities: first's C@1 rests on c0's v1 (0.7 relevant),
    so it is 1/3 in 70% of the labellings and 0 in the rest."""
    exact = rescore_json(dataset="w", labels="fire")
    captions = {c.key: c.pk for c in Caption.objects.filter(dataset=world)}
    videos = {v.key: v.pk for v in Video.objects.filter(dataset=world)}
    pairs = JudgedPairs.build(
        [captions["c0"]] * 3,
        [videos["v1"], videos["v2"], videos["v3"]],
        [1, 0, -1],
        confidence=[0.7, 0.2, 0.5],
    )
    store_label_set(world, "fire-p", pairs, source="campaign")
    noisy = rescore_json(dataset="w", labels="fire-p")
    assert noisy["runs"] == exact["runs"]  # the same resolved labels
    for run in ("first", "second"):
        for metric, interval in exact["intervals"][run].items():
            assert interval["low"] == interval["value"] == interval["high"]
            assert interval["parts"] == []
            wider = noisy["intervals"][run][metric]
            assert wider["value"] == interval["value"]
            assert wider["low"] <= interval["low"] and wider["high"] >= interval["high"]
    c1 = noisy["intervals"]["first"]["C@1"]
    assert (c1["low"], c1["value"], c1["high"]) == pytest.approx((0, 1 / 3, 1 / 3))
    assert c1["parts"] == ["label noise"]

    # The table shows the corrected scores with their intervals, in points, where not exact ...
    table = io.StringIO()
    call_command("rescore", dataset="w", labels="fire-p", stdout=table)
    text = table.getvalue()
    assert "intervals [low–high] from the labels" in text and "label noise" in text
    section = text[text.index("Corrected scores with") :].splitlines()
    first = next(line for line in section if line.startswith("first "))
    assert f"{points(c1['value'])} [{points(c1['low'])}–{points(c1['high'])}]" in first
    # ... and not at all where every score is exact.
    table = io.StringIO()
    call_command("rescore", dataset="w", labels="fire", stdout=table)
    assert "95% intervals" not in table.getvalue() and "[" not in table.getvalue()

    # CSV: low and high columns after the metrics, filled on the corrected rows only.
    out = io.StringIO()
    call_command("rescore", dataset="w", labels="fire-p", format="csv", stdout=out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert list(rows[0])[: 2 + len(METRIC_NAMES)] == ["run", "positives", *METRIC_NAMES]
    assert list(rows[0])[-2:] == ["nDCG@10 low", "nDCG@10 high"]
    by_block = {(row["run"], row["positives"]): row for row in rows}
    corrected = by_block[("first", "corrected")]
    for metric, interval in noisy["intervals"]["first"].items():
        assert float(corrected[f"{metric} low"]) == pytest.approx(interval["low"])
        assert float(corrected[f"{metric} high"]) == pytest.approx(interval["high"])
    assert by_block[("first", "original")]["C@1 low"] == ""


def test_unjudged_pooled_pairs_widen_the_intervals(world):
    """A set made before judging ended: c1's v2, first's top result for c1, is unjudged."""
    captions = {c.key: c.pk for c in Caption.objects.filter(dataset=world)}
    videos = {v.key: v.pk for v in Video.objects.filter(dataset=world)}
    pairs = JudgedPairs.build([captions["c0"]], [videos["v1"]], [1])
    none = np.zeros(0, np.int64)
    state = PoolState((np.array([captions["c1"]]), np.array([videos["v2"]])), (none, none), none)
    store_label_set(world, "early", pairs, source="campaign", pool_state=state)
    result = rescore_json(dataset="w", labels="early")
    c1 = result["intervals"]["first"]["C@1"]
    assert (c1["low"], c1["value"], c1["high"]) == pytest.approx((1 / 3, 1 / 3, 2 / 3))
    assert c1["parts"] == ["unjudged pairs"]
    assert result["kinds"]["first"]["C@1"]["kind"] == "bounds"
