"""Time building a leaderboard: the demo world's models, and synthetic runs at scale.

Best of ``--repeats``: the demo campaign's four models plus an unpooled run through
:func:`retrieval.scoring.leaderboard_service.build_leaderboard`, and, without Django,
``--queries`` x 4 synthetic runs through :func:`retrieval.scoring.rescoring.rescore` and
:func:`retrieval.scoring.leaderboard.build`::

    .venv/bin/python bench/leaderboard_bench.py [--videos 600] [--queries 1000] [--skip-demo]
"""

import time

import numpy as np
from harness import machine, parser, summarised, temporary_django

VIDEOS = 1_000
DEPTH = 10


def synthetic(n_queries: int, seed: int):
    """Four runs sharing part of their ranking signal, and pooled judgements of three."""
    from retrieval.scoring.rescoring import Qrels

    rng = np.random.default_rng(seed)
    own = rng.integers(0, VIDEOS, n_queries)
    runs = {}
    for name, noise in (("clip4clip", 0.5), ("teachtext", 1.0), ("ssb", 1.1), ("new", 0.8)):
        scores = rng.random((n_queries, VIDEOS), dtype=np.float32) * noise
        scores[np.arange(n_queries), own] += 0.4
        top = np.argpartition(-scores, DEPTH, axis=1)[:, :DEPTH]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1)
        runs[name] = np.take_along_axis(top, order, axis=1).astype(np.int64)
    original = Qrels.of(range(n_queries), own, [1] * n_queries)
    pooled = {name: runs[name] for name in ("clip4clip", "teachtext", "ssb")}
    rows = np.repeat(np.arange(n_queries), DEPTH * len(pooled))
    items = np.concatenate(list(pooled.values()), axis=1).ravel()
    keys = np.unique(rows * VIDEOS + items)
    rel = (rng.random(len(keys)) < 0.1).astype(np.int64)
    corrected = Qrels(keys // VIDEOS, keys % VIDEOS, rel).union(original)
    return runs, original, corrected, pooled


def bench_synthetic(args) -> None:
    from retrieval.scoring import leaderboard
    from retrieval.scoring.rescoring import rescore

    runs, original, corrected, pooled = synthetic(args.queries, args.seed)

    def build():
        result = rescore(runs, corrected, original=original, pooled=pooled, pool_depth=DEPTH)
        return leaderboard.build(
            result, dataset="synthetic", label_set="pooled", pooled_runs=list(pooled)
        )

    seconds, board = summarised(build, args.repeats)
    print(
        f"| synthetic: {args.queries:,} queries x 4 runs @ {DEPTH} (3 pooled), "
        f"{board.resamples:,} resamples, {board.permutations:,} sign flips | {seconds:.2f} s |"
    )
    new = next(row for row in board.rows if row.run == "new")
    print(
        f"|   unpooled 'new': C@1 {new.corrected['C@1'].value:.3f}, "
        f"Webber & Park estimate {new.adjusted['C@1']:.3f} | |"
    )


def bench_demo(args) -> None:
    with temporary_django():
        from django.core.management import call_command

        from retrieval.models import Dataset
        from retrieval.scoring.leaderboard_formats import to_text
        from retrieval.scoring.leaderboard_service import build_leaderboard
        from tests.factories import random_run

        started = time.perf_counter()
        call_command("demo", videos=args.videos, workers=2, verbosity=0)
        call_command("demo_campaign", verbosity=0)
        built = time.perf_counter() - started
        dataset = Dataset.objects.get(name="demo")
        random_run(dataset, "unpooled-random", 7)
        label_set = dataset.label_sets.get()
        seconds, board = summarised(lambda: build_leaderboard(dataset, label_set), args.repeats)
        print(
            f"| demo world ({args.videos} videos, {board.queries:,} queries): "
            f"{len(board.rows)} runs ({len(board.bias_runs)} pooled) | {seconds:.2f} s |"
        )
        print(f"(building the demo world and its campaign took {built:.0f} s)")
        print(to_text(board))


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--videos", type=int, default=600)
    options.add_argument("--queries", type=int, default=1_000)
    options.add_argument("--repeats", type=int, default=3)
    options.add_argument("--seed", type=int, default=0)
    options.add_argument("--skip-demo", action="store_true")
    args = options.parse_args()
    print(f"Machine: {machine()}\n")
    print("| what | leaderboard build |\n|------|------|")
    bench_synthetic(args)
    if not args.skip_demo:
        bench_demo(args)


if __name__ == "__main__":
    main()
