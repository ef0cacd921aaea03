"""Time every metric of 3 runs x 27,763 queries x depth 20 (FIRE's MSVD test size, §4.3).

Synthetic runs and qrels (FIRE §2.2.1 pooling). Ours is timed in a cold process (imports
counted) beside pytrec_eval and ranx (warm, cold, and with its disk cache filled); our means
are checked against pytrec_eval's. No Django needed::

    .venv/bin/python bench/metrics_bench.py [--queries 27763] [--repeats 5]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from harness import ROOT, machine, once, parser, timed

from retrieval.scoring import metrics

TARGET_SECONDS = 0.3
ANCHORS = "anchors: ranx 0.6-0.9 s warm and about a minute cold, pytrec_eval about 0.18 s"
CUTS = (1, 5, 10)
PYTREC_MEASURES = {
    **{f"C@{k}": f"success_{k}" for k in CUTS},
    **{f"R@{k}": f"recall_{k}" for k in CUTS},
    **{"AP": "map", "nDCG@10": "ndcg_cut_10", "bpref": "bpref"},
}
RANX_METRICS = {
    **{f"C@{k}": f"hit_rate@{k}" for k in CUTS},
    **{f"R@{k}": f"recall@{k}" for k in CUTS},
    **{"AP": "map", "nDCG@10": "ndcg@10", "bpref": "bpref"},
}

COLD_OURS = """
import time
start = time.perf_counter()
import json, sys
import numpy as np
from retrieval.scoring import metrics
imported = time.perf_counter()
data = dict(np.load(sys.argv[1]))
query_ids, rows, items, rel = data["query_ids"], data["rows"], data["items"], data["rel"]
loaded = time.perf_counter()
means = []
for r in range(int(data["runs"])):
    ids = metrics.align_rows(data[f"run{r}_queries"], data[f"run{r}_items"], query_ids)
    j = metrics.judgements_from_arrays(ids, rows, items, rel)
    means.append(metrics.mean_scores(metrics.evaluate(j), j.n_relevant))
end = time.perf_counter()
print(json.dumps({"total": end - start, "imports": imported - start, "load": loaded - imported, "means": means}))
"""

COLD_RANX = """
import time
start = time.perf_counter()
import json, pickle, sys
import ranx
imported = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    qrels, runs, names = pickle.load(f)
loaded = time.perf_counter()
q = ranx.Qrels.from_dict(qrels)
results = [ranx.evaluate(q, ranx.Run.from_dict(run), names, make_comparable=True) for run in runs]
end = time.perf_counter()
print(json.dumps({"total": end - loaded + imported - start, "imports": imported - start}))
"""


def synthetic(queries: int, videos: int, candidates: int, n_runs: int, depth: int, seed: int):
    """Qrels arrays (rows = queries 0..Q-1) and runs as (query ids, trec-ordered item ids)."""
    rng = np.random.default_rng(seed)
    drawn = np.sort(rng.integers(0, videos - candidates, size=(queries, candidates)), axis=1)
    pool_of = drawn + np.arange(candidates)  # distinct candidate ids per query
    runs = []
    for _ in range(n_runs):
        order = np.argsort(rng.random((queries, candidates)), axis=1)[:, :depth]
        items = np.take_along_axis(pool_of, order, axis=1)
        answered = np.flatnonzero(rng.random(queries) >= 0.01)
        shuffled = rng.permutation(answered)
        runs.append((shuffled.astype(np.int64), items[shuffled].astype(np.int64)))
    # positives: 1-5 candidates per query; judged negatives: the rest of the pooled top 10
    n_pos = rng.integers(1, 6, queries)
    pos_cols = np.argsort(rng.random((queries, candidates)), axis=1)
    positive = np.zeros((queries, candidates), bool)
    np.put_along_axis(positive, pos_cols, np.arange(candidates) < n_pos[:, None], axis=1)
    pooled = np.zeros((queries, candidates), bool)
    for run_queries, items in runs:
        # each row of pool_of is increasing, so an item's column is the count of smaller ids
        column = (pool_of[run_queries][:, :, None] < items[:, None, :10]).sum(axis=1)
        pooled[run_queries[:, None], column] = True
    judged = positive | pooled
    rows, cols = np.nonzero(judged)
    shuffle = rng.permutation(len(rows))  # qrels in no particular order, as a database gives them
    rows, cols = rows[shuffle], cols[shuffle]
    return {
        "query_ids": np.arange(queries, dtype=np.int64),
        "rows": rows.astype(np.int64),
        "items": pool_of[rows, cols].astype(np.int64),
        "rel": positive[rows, cols].astype(np.int64),
        "runs": runs,
    }


def as_dicts(data: dict) -> tuple[dict, list[dict]]:
    """The same qrels and runs as TREC-style dicts with string ids; scores strictly decrease
    along our rank order, so every tool ranks identically."""
    qrels: dict[str, dict[str, int]] = {}
    for row, item, rel in zip(
        data["rows"].tolist(), data["items"].tolist(), data["rel"].tolist(), strict=True
    ):
        qrels.setdefault(f"q{row}", {})[f"v{item}"] = rel
    runs = []
    for run_queries, items in data["runs"]:
        depth = items.shape[1]
        scores = [float(depth - r) for r in range(depth)]
        runs.append(
            {
                f"q{q}": {f"v{i}": s for i, s in zip(row, scores, strict=True)}
                for q, row in zip(run_queries.tolist(), items.tolist(), strict=True)
            }
        )
    return qrels, runs


def cold(code: str, path: Path, env: dict | None = None) -> tuple[dict, float]:
    """Run ``code`` in a fresh interpreter; its JSON report and the wall time seen from here."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - start
    return json.loads(done.stdout.strip().splitlines()[-1]), wall


def ours_warm(data: dict) -> list[dict[str, float]]:
    means = []
    for run_queries, items in data["runs"]:
        ids = metrics.align_rows(run_queries, items, data["query_ids"])
        j = metrics.judgements_from_arrays(ids, data["rows"], data["items"], data["rel"])
        means.append(metrics.mean_scores(metrics.evaluate(j), j.n_relevant))
    return means


def trec_means(per_query: dict[str, dict[str, float]], qrels: dict, names: dict) -> dict:
    """pytrec_eval's per-query values averaged like ours: qrels queries with a positive,
    queries the run does not answer counting 0."""
    eligible = [q for q, judged in qrels.items() if max(judged.values()) > 0]
    return {
        ours: sum(per_query.get(q, {}).get(theirs, 0.0) for q in eligible) / len(eligible)
        for ours, theirs in names.items()
    }


def time_ours(args, data: dict, npz: Path) -> tuple[list, list]:
    """Ours in a cold process and warm: the table's rows and the warm means per run."""
    reports = [cold(COLD_OURS, npz) for _ in range(args.repeats)]
    totals = sorted(report["total"] for report, _ in reports)
    walls = sorted(wall for _, wall in reports)
    imports = statistics.median(report["imports"] for report, _ in reports)
    load = statistics.median(report["load"] for report, _ in reports)
    rows = [
        (
            "firepool, cold process: imports + load + all metrics",
            f"{totals[0]:.3f} / {statistics.median(totals):.3f}",
            f"best / median of {args.repeats}; imports {imports:.3f} s, .npz load "
            f"{load:.3f} s; wall incl. interpreter start {walls[0]:.3f} / {statistics.median(walls):.3f} s; "
            f"target <= {TARGET_SECONDS} s",
        )
    ]
    times, warm_means = timed(lambda: ours_warm(data), args.repeats)
    rows.append(
        (
            "firepool, warm (in process)",
            f"{min(times):.3f} / {statistics.median(times):.3f}",
            f"best / median of {args.repeats}",
        )
    )
    assert warm_means == reports[0][0]["means"]
    return rows, warm_means


def time_pytrec(args, qrels, runs, warm_means) -> tuple[tuple, dict]:
    """pytrec_eval on the same inputs: its row and its largest difference from ours."""
    import pytrec_eval

    build, evaluator = once(
        lambda: pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC_MEASURES.values()))
    )
    times, results = timed(lambda: [evaluator.evaluate(run) for run in runs], args.repeats)
    row = (
        f"pytrec_eval, {len(PYTREC_MEASURES)} measures, evaluate x {args.runs}",
        f"{min(times):.3f} / {statistics.median(times):.3f}",
        f"best / median of {args.repeats}; + {build:.3f} s building the evaluator "
        "from the qrels dict; dicts built untimed",
    )
    differences = {
        name: max(
            abs(trec_means(result, qrels, PYTREC_MEASURES)[name] - ours[name])
            for result, ours in zip(results, warm_means, strict=True)
        )
        for name in PYTREC_MEASURES
    }
    return row, differences


def time_ranx(args, qrels, runs, tmp: Path) -> tuple[list, list]:
    """ranx cold (empty numba cache, then filled) and warm: the rows and its means."""
    import pickle

    with open(tmp / "dicts.pkl", "wb") as f:
        pickle.dump((qrels, runs, list(RANX_METRICS.values())), f)
    cache = {"NUMBA_CACHE_DIR": str(tmp / "numba-cache")}
    first, first_wall = cold(COLD_RANX, tmp / "dicts.pkl", cache)
    second, _ = cold(COLD_RANX, tmp / "dicts.pkl", cache)
    rows = [
        (
            "ranx 0.3.21, cold process, empty numba cache",
            f"{first['total']:.1f}",
            f"imports {first['imports']:.1f} s + Qrels/Run.from_dict + evaluate x "
            f"{args.runs} (first call JIT-compiles); wall {first_wall:.1f} s",
        ),
        (
            "ranx 0.3.21, cold process, numba disk cache filled",
            f"{second['total']:.2f}",
            f"imports {second['imports']:.2f} s",
        ),
    ]
    import ranx

    wanted = list(RANX_METRICS.values())
    ranx.evaluate(  # compile every metric before timing
        ranx.Qrels.from_dict(qrels), ranx.Run.from_dict(runs[0]), wanted, make_comparable=True
    )
    times, eval_times = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        q = ranx.Qrels.from_dict(qrels)
        converted = [ranx.Run.from_dict(run) for run in runs]
        middle = time.perf_counter()
        means = [ranx.evaluate(q, run, wanted, make_comparable=True) for run in converted]
        end = time.perf_counter()
        times.append(end - start)
        eval_times.append(end - middle)
    rows.append(
        (
            f"ranx 0.3.21, warm, {len(RANX_METRICS)} metrics x {args.runs} runs",
            f"{min(times):.3f} / {statistics.median(times):.3f}",
            f"best / median of {args.repeats} incl. Qrels/Run.from_dict; evaluate alone "
            f"{min(eval_times):.3f} / {statistics.median(eval_times):.3f} s",
        )
    )
    return rows, means


def report(rows, differences: dict, warm_means, ranx_means) -> None:
    print(f"\n{'what':<56} {'seconds':>15}  note")
    for name, seconds, note in rows:
        print(f"{name:<56} {seconds:>15}  {note}")
    print(ANCHORS)
    worst = max(differences.values())
    print(
        "max |ours - pytrec_eval| over runs, means: "
        + ", ".join(f"{name} {value:.1e}" for name, value in differences.items())
        + ("" if worst <= 1e-9 else "  MISMATCH (> 1e-9)")
    )
    print("\nmeans per run (ours):")
    names = metrics.METRIC_NAMES
    short = [n.replace("first positive: ", "1st ")[:9] for n in names]
    print("run  " + " ".join(f"{n:>9}" for n in short))
    for r, means in enumerate(warm_means):
        print(f"{r:<4} " + " ".join(f"{means[n]:>9.4f}" for n in names))
    if ranx_means is not None:
        print("ranx, same inputs (make_comparable=True: unanswered queries score 0):")
        for r, means in enumerate(ranx_means):
            print(f"{r:<4} " + " ".join(f"{k} {means[v]:.4f}" for k, v in RANX_METRICS.items()))


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--queries", type=int, default=27_763)
    options.add_argument("--videos", type=int, default=1_000)
    options.add_argument("--candidates", type=int, default=30)
    options.add_argument("--runs", type=int, default=3)
    options.add_argument("--depth", type=int, default=20)
    options.add_argument("--repeats", type=int, default=5)
    options.add_argument("--no-ranx", action="store_true", help="skip ranx (numba JIT)")
    args = options.parse_args()

    data = synthetic(args.queries, args.videos, args.candidates, args.runs, args.depth, 0)
    positives = np.bincount(data["rows"][data["rel"] > 0], minlength=args.queries)
    print(
        f"{args.runs} runs x {args.queries:,} queries x depth {args.depth}; {len(data['rows']):,} "
        f"qrels ({int(positives.sum()):,} positives, {positives.min()}-{positives.max()} per query)"
    )
    print(machine())
    with tempfile.TemporaryDirectory(prefix="firepool-metrics-") as tmp:
        npz = Path(tmp) / "inputs.npz"
        arrays = {k: v for k, v in data.items() if k != "runs"}
        for r, (run_queries, items) in enumerate(data["runs"]):
            arrays[f"run{r}_queries"], arrays[f"run{r}_items"] = run_queries, items
        np.savez(npz, runs=len(data["runs"]), **arrays)
        rows, warm_means = time_ours(args, data, npz)
        qrels, runs = as_dicts(data)
        row, differences = time_pytrec(args, qrels, runs, warm_means)
        rows.append(row)
        ranx_means = None
        if not args.no_ranx:
            ranx_rows, ranx_means = time_ranx(args, qrels, runs, Path(tmp))
            rows += ranx_rows
    report(rows, differences, warm_means, ranx_means)


if __name__ == "__main__":
    main()
