"""Time the FIRE §4 analyses at MSVD's scale (27,763 test queries): budget bootstrap, RBO, significance.

Pure numpy on three synthetic runs with FIRE Table 4's Correct@1 rates and distinct per-query
scores (the resampling's worst case); best of ``--repeats``::

    .venv/bin/python bench/analysis_bench.py [--queries 27763] [--repeats 3]
"""

import numpy as np
from harness import machine, parser, summarised

from retrieval.scoring import analysis

BUDGET_TARGET_SECONDS = 3.0
SIZES = (500, 1000, 3000)
RESAMPLES = 10_000
VIDEOS = 670
DEPTH = 10


def synthetic_runs(n_queries: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Top-10 lists of three runs that share part of their ranking signal; 5% of lists short."""
    base = rng.random((n_queries, VIDEOS), dtype=np.float32)
    runs = {}
    for name, noise in (("clip4clip", 1.5), ("teachtext", 0.6), ("ssb", 0.7)):
        scores = base + noise * rng.random((n_queries, VIDEOS), dtype=np.float32)
        top = np.argpartition(-scores, DEPTH, axis=1)[:, :DEPTH]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1)
        ids = np.take_along_axis(top, order, axis=1).astype(np.int64)
        short = rng.random(n_queries) < 0.05
        lengths = rng.integers(1, DEPTH, n_queries)
        ids[short[:, None] & (np.arange(DEPTH)[None, :] >= lengths[:, None])] = -1
        runs[name] = ids
    return runs


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--queries", type=int, default=27_763)
    options.add_argument("--repeats", type=int, default=3)
    options.add_argument("--seed", type=int, default=0)
    args = options.parse_args()
    rng = np.random.default_rng(args.seed)
    q = args.queries

    correct = {
        name: (rng.random(q) < rate).astype(np.float64)
        for name, rate in (("clip4clip", 0.674), ("teachtext", 0.241), ("ssb", 0.273))
    }
    continuous = {name: rng.beta(2, 3, q) + 0.01 * i for i, name in enumerate(correct)}
    runs = synthetic_runs(q, rng)

    def budget(per_query: dict[str, np.ndarray]) -> dict:
        return {
            name: analysis.budget_bootstrap(values, SIZES, RESAMPLES, args.seed)
            for name, values in per_query.items()
        }

    print(f"Machine: {machine()}")
    print(f"{q:,} queries, 3 runs, best of {args.repeats}\n")
    print("| what | time | target |\n|------|------|--------|")

    def row(what: str, work, target: str = "|"):
        """``work``'s row: its best time and ``target`` (the last cell, closing bar included);
        what it returned."""
        seconds, result = summarised(work, args.repeats)
        print(f"| {what} | {seconds:.3f} s | {target}")
        return result

    within = f"<= {BUDGET_TARGET_SECONDS:g} s |"
    what = f"budget bootstrap, C@1 (0/1), {RESAMPLES:,} resamples x N in {SIZES}, 3 runs"
    errors = row(what, lambda: budget(correct), within)
    row("same, continuous per-query scores (index draws)", lambda: budget(continuous), within)
    stacked = np.column_stack(list(continuous.values()))
    row(
        "same, continuous, 3 runs as one queries x 3 matrix (shared draws)",
        lambda: analysis.budget_bootstrap(stacked, SIZES, RESAMPLES, args.seed),
    )
    rbos = row(
        f"RBO_ext (p = 0.9) @ {DEPTH}, 3 pairs",
        lambda: analysis.pairwise(runs, analysis.rbo, k=DEPTH),
    )
    overlaps = row(
        f"overlap @ {DEPTH}, 3 pairs",
        lambda: analysis.pairwise(runs, analysis.overlap_at_k, k=DEPTH),
    )
    what = f"compare_runs, C@1 (0/1): {RESAMPLES:,} bootstrap + 10,000 sign flips, 3 pairs"
    rows = row(what, lambda: analysis.compare_runs(correct))
    row("compare_runs, continuous scores, 3 pairs", lambda: analysis.compare_runs(continuous))

    print("\nBudget (C@1, FIRE §4.3): 95th percentile of |resampled mean - full mean|")
    for name, by_size in errors.items():
        summary = analysis.budget_summary(by_size)
        cells = ", ".join(f"N={n}: {summary[n]['p95']:.4f}" for n in SIZES)
        print(f"  {name}: {cells}")
    print("RBO / overlap @ 10 (synthetic runs):")
    for pair in rbos:
        print(f"  {pair[0]} & {pair[1]}: overlap {overlaps[pair]:.3f}, RBO_ext {rbos[pair]:.3f}")
    print("compare_runs, C@1:")
    for row in rows:
        print(
            f"  {row['run_a']} - {row['run_b']}: {row['difference']:+.4f} "
            f"[{row['ci_low']:+.4f}, {row['ci_high']:+.4f}], p {row['p']:.4g}, "
            f"Holm {row['p_holm']:.4g}"
        )


if __name__ == "__main__":
    main()
