"""Time system pooling (FIRE §2.2.1) of 3 runs x 27,763 queries x top 10 against trectools.

Synthetic runs over ``--candidates`` videos per query; ours at depth 10 and 20 cut at 10,
trectools' ``make_pool(strategy="topX")`` (optional) on the first 1,000 and 5,000 queries. Run
with ``.venv/bin/python bench/pooling_bench.py``.
"""

import statistics

import numpy as np
from harness import once, parser, summarised

from annotation.campaigns.pooling import pool
from retrieval.search.runs import RankedLists

TARGET = "pool build <= 5 s including DB writes (the lead measures writes)"
ANCHORS = {1000: 3.0, 5000: 45.5}  # trectools seconds measured earlier on this machine


def synthetic_runs(
    queries: int, videos: int, candidates: int, runs: int, width: int, seed: int
) -> list[RankedLists]:
    """``runs`` runs of depth ``width``, each a random order of per-query candidate videos."""
    rng = np.random.default_rng(seed)
    # sorted draws plus 0..C-1 give C distinct ids per row
    drawn = np.sort(rng.integers(0, videos - candidates, size=(queries, candidates)), axis=1)
    pool_of = drawn + np.arange(candidates)
    result = []
    for _ in range(runs):
        order = np.argsort(rng.random((queries, candidates)), axis=1)[:, :width]
        rows = rng.permutation(queries)
        items = np.take_along_axis(pool_of, order, axis=1)[rows]
        scores = np.tile(np.linspace(1.0, 0.0, width), (queries, 1))
        result.append(RankedLists(rows.astype(np.int64), items.astype(np.int64), scores))
    return result


def first_queries(runs: list[RankedLists], n: int) -> list[RankedLists]:
    """The runs restricted to query ids below ``n``."""
    return [
        RankedLists(r.query_ids[keep], r.item_ids[keep], r.scores[keep])
        for r in runs
        for keep in [r.query_ids < n]
    ]


def trectools_runs(runs: list[RankedLists], depth: int):
    """The runs as trectools TrecRun objects (query and docid as strings, like a run file)."""
    import pandas as pd
    from trectools import TrecRun

    converted = []
    for r, run in enumerate(runs):
        items = run.item_ids[:, :depth]
        frame = pd.DataFrame(
            {
                "query": np.repeat(run.query_ids, items.shape[1]),
                "q0": "Q0",
                "docid": items.ravel(),
                "rank": np.tile(np.arange(1, items.shape[1] + 1), len(run)),
                "score": run.scores[:, :depth].ravel(),
                "system": f"run{r}",
            }
        )
        trec_run = TrecRun()
        trec_run.load_run_from_dataframe(frame)
        converted.append(trec_run)
    return converted


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--queries", type=int, default=27_763)
    options.add_argument("--videos", type=int, default=1_000_000)
    options.add_argument("--candidates", type=int, default=24)
    options.add_argument("--runs", type=int, default=3)
    options.add_argument("--depth", type=int, default=10)
    options.add_argument("--repeats", type=int, default=5)
    options.add_argument("--trectools-queries", type=int, nargs="*", default=[1000, 5000])
    args = options.parse_args()

    deep = synthetic_runs(args.queries, args.videos, args.candidates, args.runs, 2 * args.depth, 0)
    shallow = [run.truncated(args.depth) for run in deep]
    rng = np.random.default_rng(1)
    origin = (
        np.arange(args.queries, dtype=np.int64),
        deep[0].item_ids[np.argsort(deep[0].query_ids), 0],
    )
    # a previous campaign judged 50,000 of run 0's top-10 pairs
    judged_rows, judged_cols = np.unravel_index(
        rng.choice(shallow[0].item_ids.size, 50_000, replace=False), shallow[0].item_ids.shape
    )
    judged = (shallow[0].query_ids[judged_rows], shallow[0].item_ids[judged_rows, judged_cols])

    rows: list[tuple[str, int, float, int, str]] = []
    label = f"{args.runs} runs x top {args.depth}"
    for name, runs, kwargs in [
        (f"firepool pool(), depth-{args.depth} arrays", shallow, {}),
        (f"firepool pool(), depth-{2 * args.depth} arrays cut at {args.depth}", deep, {}),
        (
            "firepool pool(), + origin + 50,000 judged pairs excluded",
            shallow,
            {"origin": origin, "exclude": judged},
        ),
    ]:
        seconds, result = summarised(
            lambda r=runs, k=kwargs: pool(r, args.depth, **k), args.repeats, statistics.median
        )
        rows.append((name, args.queries, seconds, len(result), f"median of {args.repeats}"))
    overlap = pool(shallow, args.depth).overlap_counts()

    for n in args.trectools_queries:
        subset = first_queries(shallow, n)
        seconds, result = summarised(
            lambda s=subset: pool(s, args.depth), args.repeats, statistics.median
        )
        rows.append(
            (f"firepool pool(), {label}", n, seconds, len(result), f"median of {args.repeats}")
        )
    try:
        from trectools import TrecPoolMaker
    except ImportError as error:
        print(f"trectools not timed: {error} (pip install trectools)")
        TrecPoolMaker = None
    if TrecPoolMaker is not None:
        for n in args.trectools_queries:
            subset = first_queries(shallow, n)
            load, converted = once(lambda s=subset: trectools_runs(s, args.depth))
            seconds, trec_pool = once(
                lambda c=converted: TrecPoolMaker().make_pool(c, strategy="topX", topX=args.depth)
            )
            pairs = int(trec_pool.get_total_pool_size())
            ours = len(pool(subset, args.depth))
            note = f"1 run; +{load:.2f} s loading; anchor {ANCHORS.get(n, float('nan'))} s"
            if pairs != ours:
                note += f"; MISMATCH with firepool ({ours} pairs)"
            rows.append((f"trectools make_pool topX={args.depth}", n, seconds, pairs, note))

    print(f"\n{label}, {args.videos:,} video ids, {args.candidates} candidates per query")
    print(f"{'method':<58} {'queries':>8} {'seconds':>9} {'pairs':>9}  note")
    for name, queries, seconds, pairs, note in rows:
        print(f"{name:<58} {queries:>8,} {seconds:>9.3f} {pairs:>9,}  {note}")
    print(f"pairs retrieved by exactly 1..{args.runs} runs (first pool): {overlap[1:].tolist()}")
    print(f"target: {TARGET}")


if __name__ == "__main__":
    main()
