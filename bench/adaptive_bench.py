"""FIRE's protocol against the adaptive policy on the demo world, replayed offline: labels
spent and each model's C@K error, and the 95% intervals' coverage.

A demo world of ``--videos`` clips (reused with ``--world``) is pooled at depth 10
(:func:`annotation.simulation.replay_service.replay_world`) and judged offline by the quality
bench's crowd of 20, same seeds for both: FIRE §3.1's policy with qualification and 5% gold,
against the adaptive policy (``--confidence`` 0.95, cap 5, metric-first order). Target: every
model's C@1/5/10 within 1 point of its true-label value with at most 50% of FIRE's labels;
``--coverage N`` also checks the 95% intervals cover the truth in 90% of N replays::

    nice -n 5 .venv/bin/python bench/adaptive_bench.py --videos 1500 --world /tmp/w1500 \\
        [--seeds 5] [--coverage 50]
"""

import argparse
import os
import time
from pathlib import Path

import numpy as np
from crowd_bench import DEMO_RUNS, DEPTH, demo_world
from harness import log, machine, temporary_django

CROWD = ((0.6, 0.98, 0.98), (0.2, 0.92, 0.92), (0.1, 0.5, 0.5), (0.1, 0.0, 1.0))
ANNOTATORS = 20
METRICS = ("C@1", "C@5", "C@10", "AP")
"""Metrics compared point by point; coverage is measured for nDCG@10 too."""
TARGET_GAP = 0.01
TARGET_SHARE = 0.5
TARGET_COVERAGE = 0.9


def run_config(world, crowd, policy_name: str, order: str, seed: int, confidence: float):
    """One seeded offline campaign, and each run's scores with its resolved labels."""
    from annotation.simulation import offline

    outcome = offline.simulate(
        world, crowd, policy_name=policy_name, order=order, seed=seed, confidence=confidence
    )
    return outcome, world.relabelled(outcome.status == 1).scores()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", type=int, default=1500)
    parser.add_argument("--world", type=Path, help="Keep (or reuse) the built demo world here.")
    parser.add_argument("--seeds", type=int, default=5, help="Seeded campaigns per config.")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--coverage", type=int, default=0, help="Seeded replays for coverage.")
    args = parser.parse_args()
    began = time.perf_counter()
    load = os.getloadavg()
    reuse = args.world is not None and (args.world / "bench.sqlite3").exists()
    with temporary_django(template=args.world if reuse else None) as tmp:
        from annotation.simulation.offline import SimulatedCrowd
        from annotation.simulation.replay_service import replay_world

        dataset, _ = demo_world(args.videos, args.world, tmp, reuse)
        world, dropped = replay_world(dataset, list(DEMO_RUNS), DEPTH, None)
        log(
            f"pool: {len(world.pool):,} pairs, {world.labels.mean():.1%} relevant, {dropped} dropped"
        )
        crowd = SimulatedCrowd.of(CROWD, ANNOTATORS)
        true = world.scores()
        configs = {"FIRE": ("fire", "depth"), "adaptive": ("adaptive", "metric-first")}
        results: dict[str, list] = {name: [] for name in configs}
        for seed in range(args.seeds):
            for name, (policy_name, order) in configs.items():
                started = time.perf_counter()
                outcome, got = run_config(world, crowd, policy_name, order, seed, args.confidence)
                results[name].append((outcome, got, time.perf_counter() - started))
            log(f"seed {seed} done")
        coverage = coverage_of(world, crowd, args) if args.coverage else None
    report(args, world, true, results, coverage, load, time.perf_counter() - began)


def coverage_of(world, crowd, args) -> dict[str, float]:
    """Share of (seed, run) whose 95% interval holds the true-label value, per metric."""
    from annotation.simulation.estimates import world_intervals
    from annotation.simulation.model import Outcome

    # The true-label value of every metric (nDCG@10 too): the intervals of the truth itself,
    # every pair labelled and certain, are the exact scores.
    n, labels = len(world.pool), world.labels
    truth = Outcome(np.arange(n), np.zeros(n, np.int64), labels, labels * 1.0, labels * 1)
    true = {
        run: {metric: interval.value for metric, interval in metrics.items()}
        for run, metrics in world_intervals(world, truth).items()
    }
    held: dict[str, list[bool]] = {}
    for seed in range(1000, 1000 + args.coverage):
        outcome, _ = run_config(world, crowd, "adaptive", "metric-first", seed, args.confidence)
        intervals = world_intervals(world, outcome)
        for run, metrics in intervals.items():
            for metric, interval in metrics.items():
                if metric in true[run]:
                    inside = interval.low - 1e-12 <= true[run][metric] <= interval.high + 1e-12
                    held.setdefault(metric, []).append(inside)
    return {metric: float(np.mean(values)) for metric, values in held.items()}


def report(args, world, true, results, coverage, load, seconds) -> None:
    fire_spent = np.mean([o.total_spent for o, _, _ in results["FIRE"]])
    print(f"Machine: {machine()}; load average at start {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(
        f"Demo world {args.videos} videos, {len(world.pool):,} pooled pairs ({', '.join(DEMO_RUNS)}"
        f" @ {DEPTH}), {ANNOTATORS} annotators, seeds 0-{args.seeds - 1}, adaptive confidence "
        f"{args.confidence}, cap 5\n"
    )
    print(
        "| config | labels: campaign + gold + qualification = total | share of FIRE's | seconds |"
    )
    print("|---|---|---|---|")
    for name, rows in results.items():
        spent = {key: np.mean([o.spent[key] for o, _, _ in rows]) for key in rows[0][0].spent}
        total = np.mean([o.total_spent for o, _, _ in rows])
        share = total / fire_spent
        mark = "" if name == "FIRE" else (" ✓" if share <= TARGET_SHARE else " ✗")
        print(
            f"| {name} | {spent['campaign']:,.0f} + {spent['gold']:,.0f} + "
            f"{spent['qualification']:,.0f} = {total:,.0f} | {100 * share:.1f}%{mark} | "
            f"{np.mean([t for _, _, t in rows]):.1f} |"
        )
    print("\nScore minus its true-label value, in points: mean over seeds (worst seed)\n")
    print("| model | metric | true | FIRE | adaptive |")
    print("|---|---|---|---|---|")
    for run in world.run_names:
        for metric in METRICS:
            cells = []
            for name in results:
                gaps = np.array(
                    [got[run][metric] - true[run][metric] for _, got, _ in results[name]]
                )
                worst = gaps[np.argmax(np.abs(gaps))]
                mark = ""
                if metric != "AP":
                    mark = " ✓" if np.abs(gaps).max() <= TARGET_GAP + 1e-12 else " ✗"
                cells.append(f"{100 * gaps.mean():+.2f} ({100 * worst:+.2f}){mark}")
            print(f"| {run} | {metric} | {100 * true[run][metric]:.2f} | {' | '.join(cells)} |")
    if coverage is not None:
        print(
            f"\n95% interval coverage over {args.coverage} seeded adaptive replays, per metric:\n"
        )
        print("| metric | coverage (target >= 90%) |")
        print("|---|---|")
        for metric, share in coverage.items():
            mark = "✓" if share >= TARGET_COVERAGE else "✗"
            print(f"| {metric} | {100 * share:.1f}% {mark} |")
    print(f"\nWhole bench: {seconds:.0f} s")


if __name__ == "__main__":
    main()
