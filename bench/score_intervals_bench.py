"""Time the label-noise intervals of 3 runs x 27,000 queries x depth 10 with 5% of the judged
pairs uncertain, beside the plain re-scoring of the same arrays.

Synthetic pooled runs (FIRE §2.2.1), 5% of judged pairs with a probability of relevance
(``--everyone``: all of them, as Dawid-Skene's posteriors). Times
:func:`retrieval.scoring.score_intervals.score_intervals` (2,000 draws, with and without
``--unjudged`` pairs) against :func:`retrieval.scoring.rescoring.rescore` (the anchor) and
checks them against it; try ``OPENBLAS_NUM_THREADS=1`` too::

    .venv/bin/python bench/score_intervals_bench.py [--queries 27000] [--everyone]
"""

import os
import statistics

import numpy as np
from harness import machine, parser, timed

from retrieval.scoring import rescoring, score_intervals


def build(queries: int, uncertain: float, unjudged: float, seed: int, everyone: bool) -> dict:
    """Runs, judged pairs (rows, items, relevance, probability), unjudged pairs, originals."""
    rng = np.random.default_rng(seed)
    # Distinct candidates per query: its own video (id = row) and 24 others after it.
    steps = np.cumsum(rng.integers(1, 40, size=(queries, 24)), axis=1)
    candidates = np.column_stack([np.arange(queries), np.arange(queries)[:, None] + steps])
    runs = {}
    for r in range(3):
        pick = np.argsort(rng.random((queries, 25)) - (np.arange(25) == 0) * 0.3, axis=1)[:, :10]
        runs[f"run{r}"] = np.take_along_axis(candidates, pick, axis=1)
    pooled = np.unique(
        np.concatenate(
            [np.repeat(np.arange(queries), 10) * (1 << 32) + ids.ravel() for ids in runs.values()]
        )
    )
    rows, items = np.divmod(pooled, 1 << 32)
    own = items == rows
    rows, items = rows[~own], items[~own]
    relevance = (rng.random(len(rows)) < 0.1).astype(np.int64)
    p = np.full(len(rows), np.nan)
    drawn = rng.random(len(rows)) < uncertain
    p[drawn] = rng.uniform(0.05, 0.95, int(drawn.sum()))
    coin = drawn & (rng.random(len(rows)) < 0.2)
    relevance[coin], p[coin] = -1, 0.5
    relevance[drawn & ~coin] = (p[drawn & ~coin] > 0.5).astype(np.int64)
    if everyone:
        # Dawid-Skene's posteriors: every pair off certainty, most of them by little.
        doubt = 10.0 ** rng.uniform(-4.0, -1.3, len(rows))
        p = np.where(drawn, p, np.where(relevance == 1, 1.0 - doubt, doubt))
    left = np.isin(rows, np.flatnonzero(rng.random(queries) < unjudged)) & ~drawn
    left &= rng.random(len(rows)) < 0.3
    return {
        "runs": runs,
        "judged": (rows[~left], items[~left], relevance[~left], p[~left]),
        "unjudged": (rows[left], items[left]),
        "positives": (np.arange(queries), np.arange(queries)),
    }


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--queries", type=int, default=27_000)
    options.add_argument("--uncertain", type=float, default=0.05)
    options.add_argument("--unjudged", type=float, default=0.1)
    options.add_argument("--draws", type=int, default=score_intervals.DEFAULT_DRAWS)
    options.add_argument("--repeats", type=int, default=3)
    options.add_argument("--seed", type=int, default=0)
    options.add_argument(
        "--everyone",
        action="store_true",
        help="every other judged pair 10^-4 to 10^-1.3 off certainty, as Dawid-Skene gives",
    )
    args = options.parse_args()
    data = build(args.queries, args.uncertain, args.unjudged, args.seed, args.everyone)
    rows, items, relevance, p = data["judged"]
    judged = score_intervals.JudgedPairs.of(rows, items, relevance, p)
    corrected = rescoring.Qrels.of(rows, items, np.where(relevance == 1, 1, 0)).union(
        rescoring.Qrels.of(*data["positives"], np.ones(args.queries, np.int64))
    )
    n_uncertain = int(((judged.p_relevant > 0) & (judged.p_relevant < 1)).sum())
    print(
        f"machine: {machine()}; {args.queries:,} queries, 3 runs, depth 10, {len(rows):,} judged "
        f"pairs, {n_uncertain:,} uncertain, {len(data['unjudged'][0]):,} unjudged; "
        f"{args.draws:,} draws; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '-')}"
    )
    work = {
        "rescore (anchor)": lambda: rescoring.rescore(data["runs"], corrected),
        "score_intervals": lambda: score_intervals.score_intervals(
            data["runs"], judged, data["positives"], draws=args.draws, seed=args.seed
        ),
        "score_intervals, unjudged pairs too": lambda: score_intervals.score_intervals(
            data["runs"],
            judged,
            data["positives"],
            unjudged=data["unjudged"],
            draws=args.draws,
            seed=args.seed,
        ),
    }
    results = {}
    for name, run in work.items():
        times, results[name] = timed(run, args.repeats)
        print(f"{name}: best {min(times):.2f} s, median {statistics.median(times):.2f} s")
    anchor = results["rescore (anchor)"].blocks["corrected"]
    for run, intervals in results["score_intervals"].items():
        for metric, interval in intervals.items():
            assert interval.value == anchor[run].means[metric], (run, metric)
    sample = results["score_intervals, unjudged pairs too"]["run0"]
    print(
        "run0 with unjudged pairs: "
        + "; ".join(
            f"{m} {100 * s.value:.1f} [{100 * s.low:.1f}, {100 * s.high:.1f}]"
            for m, s in sample.items()
        )
    )


if __name__ == "__main__":
    main()
