"""Measure the judging orders (depth, metric-first, RRF, maxmean, ...) on a synthetic MSVD-scale replay.

27,763 queries, three correlated depth-10 runs pooled as FIRE §2.2.1, ~7% relevant (FIRE
§3.2). Prints, beside the targets, metric-first's judgements for exact C@1/5/10, judgements
to find 90% of positives per order, the early stop's 95% interval coverage at a 20% budget
and the times of an order and an update. Run with
``.venv/bin/python bench/judging_orders_bench.py``.
"""

import os
import statistics
import time

import numpy as np
from harness import once, parser, timed

from annotation.campaigns.pooling import pool
from annotation.ordering.orders import STRATEGIES, full_order, make_order
from annotation.simulation.model import World
from annotation.simulation.replay import exact_after, judged_first, seeded_order
from retrieval.scoring.estimation import ESTIMATE, EXACT, Sample, draw_queries, score_run
from retrieval.search.runs import RankedLists

MSVD_QUERIES = 27_763
DEPTH = 10
CANDIDATES = 40
RUN_MARGINS = (2.2, 1.4, 0.6)  # how far a relevant video rises in each run, in noise units
TARGETS = {
    "metric_first_share": 0.50,
    "adaptive_vs_depth": 0.60,
    "coverage": 0.90,
    "full_order_s": 2.0,
    "update_ms": 2.0,
}


def synthetic_world(
    queries: int = MSVD_QUERIES, relevant_rate: float = 0.036, seed: int = 0
) -> World:
    """Three correlated depth-10 runs over ``queries`` queries and their complete labels: each
    query's relevant rate a Beta draw around ``relevant_rate`` (queries differ, as in FIRE
    §3.2); candidate 0 is the query's own video."""
    rng = np.random.default_rng(seed)
    rate = rng.beta(0.6, 0.6 / relevant_rate - 0.6, size=(queries, 1))
    relevant = rng.random((queries, CANDIDATES)) < rate
    relevant[:, 0] = True
    shared = rng.normal(size=(queries, CANDIDATES))
    videos = np.arange(queries)[:, None] * CANDIDATES + np.arange(CANDIDATES)
    runs = []
    for margin in RUN_MARGINS:
        score = margin * relevant + 0.4 * shared + 0.9 * rng.normal(size=shared.shape)
        score[:, 0] += 0.5 * margin
        top = np.argsort(-score, axis=1)[:, :DEPTH]
        runs.append(
            RankedLists(
                np.arange(queries),
                np.take_along_axis(videos, top, 1),
                np.take_along_axis(score, top, 1),
            )
        )
    origin = (np.arange(queries), videos[:, 0])
    pooled = pool(runs, DEPTH, origin=origin)
    labels = relevant.ravel()[pooled.video_ids]
    known = np.stack([run.item_ids == videos[:, :1] for run in runs], axis=1)
    queried = np.unique(pooled.caption_ids)
    known_count = np.ones(queried.size, dtype=np.int64)
    return World(pooled, labels, ("strong", "middling", "weak"), DEPTH, known[queried], known_count)


def positives_needed(world: World, pairs: np.ndarray, share: float = 0.9) -> int:
    """Judgements until ``share`` of the pool's positives are found."""
    found = np.cumsum(world.labels[pairs])
    return int(np.searchsorted(found, share * world.labels.sum()) + 1)


def coverage(world: World, strategy: str, budget: float, seeds: int, sample: int) -> dict:
    """Over ``seeds`` replays stopped at ``budget`` of the pool, then about ``sample`` more
    pairs judged as a random query sample: how often each run's 95% interval holds the
    complete-label score, and the estimate's mean error."""
    complete = world.scores()
    eligible = world.eligible()
    hits, errors, kinds = {}, {}, {}
    for seed in range(seeds):
        order = seeded_order(world, strategy, seed)
        judged = judged_first(world, order, int(budget * len(world.pool)))
        before = world.run_judgements(judged)
        drawn = draw_queries(before[0].n_unjudged, sample, seed=10_000 + seed)
        after = world.run_judgements(judged | drawn[world.layout.query_of])
        for name, run, full in zip(world.run_names, before, after, strict=True):
            found = Sample(drawn, full)
            for metric, score in score_run(run, sample=found, eligible=eligible).items():
                if score.kind == EXACT:
                    continue
                truth = complete[name][metric]
                hits.setdefault(metric, []).append(score.low <= truth <= score.high)
                kinds.setdefault(metric, []).append(score.kind)
                if score.kind == ESTIMATE:
                    errors.setdefault(metric, []).append(score.value - truth)
    return {
        metric: (
            float(np.mean(hits[metric])),
            float(np.mean(errors.get(metric, [np.nan]))),
            len(hits[metric]),
            kinds[metric].count(ESTIMATE),
        )
        for metric in hits
    }


def report(world: World, title: str, args) -> None:
    """Print every measurement of the issue for one world."""
    queries = world.layout.pair_of.shape[0]
    print(
        f"\n== {title}: {queries} queries, {len(world.pool)} pool pairs, "
        f"{world.labels.mean():.1%} relevant"
    )
    known_rank = world.known_positive_rank()
    for name, values in world.scores().items():
        print(f"  {name}: " + ", ".join(f"{m} {v:.3f}" for m, v in values.items()))

    print(
        "\norder                 full order s  exact C@K after  90% positives  / depth  / depth rr"
    )
    orders, seconds = {}, {}
    for strategy in STRATEGIES:
        timings, orders[strategy] = timed(
            lambda s=strategy: full_order(
                s, world.pool, world.labels, known_positive_rank=known_rank
            ),
            3,
        )
        seconds[strategy] = min(timings)
    orders["depth (round-robin)"] = full_order("depth", world.pool, world.labels, interleave=True)
    needed = {strategy: positives_needed(world, order.pairs) for strategy, order in orders.items()}
    for strategy, order in orders.items():
        share = exact_after(world, order) / len(world.pool)
        print(
            f"{strategy:20s} "
            f"{f'{seconds[strategy]:6.2f}' if strategy in seconds else '':>13s}"
            f"  {share:14.1%}  {needed[strategy] / len(world.pool):13.1%}"
            f"  {needed[strategy] / needed['depth']:7.2f}"
            f"  {needed[strategy] / needed['depth (round-robin)']:9.2f}"
        )
    mf = orders["metric-first"]
    print(
        f"\nmetric-first: {mf.needed} judgements ({mf.needed / len(world.pool):.1%} of the pool) "
        f"for exact C@1/5/10 of every run (target <= {TARGETS['metric_first_share']:.0%})"
    )
    best = min(needed[s] for s in ("maxmean", "mtf", "rbp-adaptive"))
    print(
        f"best adaptive / depth for 90% of positives: {best / needed['depth']:.2f} "
        f"(target <= {TARGETS['adaptive_vs_depth']}); "
        f"/ depth round-robin: {best / needed['depth (round-robin)']:.2f}"
    )
    slowest = max(seconds, key=seconds.get)
    print(
        f"slowest full order: {slowest} {seconds[slowest]:.2f} s "
        f"(target <= {TARGETS['full_order_s']} s at MSVD scale)"
    )

    pairs = np.random.default_rng(1).permutation(len(world.pool))[:2000]
    for strategy in ("maxmean", "mtf", "rbp-adaptive", "metric-first"):
        state = make_order(strategy, world.pool, known_positive_rank=known_rank)
        durations = []
        for pair in pairs:
            started = time.perf_counter()
            state.update(int(pair), bool(world.labels[pair]))
            durations.append(time.perf_counter() - started)
        print(
            f"{strategy} update: median {statistics.median(durations) * 1e3:.3f} ms, "
            f"p99 {np.percentile(durations, 99) * 1e3:.3f} ms (target < {TARGETS['update_ms']} ms)"
        )

    started = time.perf_counter()
    sample = min(args.sample, int(0.05 * len(world.pool)))
    result = coverage(world, "maxmean", args.budget, args.coverage_seeds, sample)
    print(
        f"\nearly stop at {args.budget:.0%} (maxmean) + ~{sample} pairs of random queries, "
        f"{args.coverage_seeds} replays ({time.perf_counter() - started:.0f} s):"
    )
    for metric, (share, bias, n, estimates) in result.items():
        print(
            f"  {metric}: coverage {share:.1%} of {n} intervals ({estimates} estimates, the rest "
            f"bounds), estimates' mean error {bias:+.4f} "
            f"(target >= {TARGETS['coverage']:.0%})"
        )


def demo_world(videos: int) -> World:
    """A fresh demo world of ``videos`` videos with its four models' runs (``manage.py demo``,
    in a throw-away database), pooled at depth 10 with its ground truth."""
    from django.core.management import call_command

    from annotation.simulation.replay_service import replay_world
    from retrieval.models import Dataset

    call_command("demo", videos=videos, verbosity=0)
    world, _ = replay_world(Dataset.objects.get(name="demo"), None, DEPTH, None)
    return world


def main() -> None:
    options = parser(__doc__, paragraph=True)
    options.add_argument("--queries", type=int, default=MSVD_QUERIES)
    options.add_argument("--coverage-seeds", type=int, default=100)
    options.add_argument("--sample", type=int, default=2000, help="pairs judged for the estimate")
    options.add_argument("--budget", type=float, default=0.2)
    options.add_argument("--demo-videos", type=int, default=0, help="also a demo world this big")
    args = options.parse_args()

    print(f"machine: {os.cpu_count()} cores")
    took, world = once(lambda: synthetic_world(args.queries))
    print(f"synthetic world built in {took:.1f} s")
    report(world, "synthetic MSVD-scale replay", args)
    if args.demo_videos:
        from harness import temporary_django

        with temporary_django():
            took, world = once(lambda: demo_world(args.demo_videos))
            print(f"\ndemo world built in {took:.0f} s")
            report(world, f"demo world, {args.demo_videos} videos, four models", args)


if __name__ == "__main__":
    main()
