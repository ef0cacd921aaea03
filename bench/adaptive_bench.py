"""FIRE's protocol, the adaptive policy and the active one on the demo world, replayed offline
through ``manage.py simulate_campaign``: labels spent as a share of FIRE's (gold and qualification
counted), each model's error on C@1, C@5, C@10, AP and nDCG@10 against its true-label value
(mean over seeds and worst seed), and the 95% intervals' coverage over many replays, with the
predictor, with its features shuffled (the useless-predictor control) and with a simulated
machine assessor of kappa 0.6.

Targets (bench/RESULTS.md): the adaptive policy's C@K within 1 point with at most 50% of
FIRE's labels; the active policy's every score within 1 point (worst seed 1.5) with at most 25%
of FIRE's labels, 15% with the assessor; coverage at least 90% per metric, shuffled too. A demo
world of ``--videos`` clips is built (and kept in ``--world``, reused when there)::

    nice -n 5 .venv/bin/python bench/adaptive_bench.py --videos 1500 --world /tmp/w1500
        [--seeds 5] [--coverage 50] [--configs fire,adaptive,active,shuffled,assessor]
        [--coverage-configs adaptive,active,shuffled] [--half-width 1] [--proxies bow,pos]
        [--settle c@1,c@5,c@10,ap,ndcg@10]
"""

import io
import json
from pathlib import Path

import numpy as np
from crowd_bench import demo_world
from harness import log, machine, once, parser

CONFIGS = {
    "fire": {"policy": "fire"},
    "adaptive": {"policy": "adaptive"},
    "active": {"policy": "active"},
    "shuffled": {"policy": "active", "shuffle_features": True},
    "assessor": {"policy": "active", "assessor_kappa": 0.6},
}
TARGET_SHARE = {"adaptive": 0.5, "active": 0.25, "assessor": 0.15}


def simulate(first_seed: int, seeds: int, options: dict) -> dict:
    """``simulate_campaign --format json`` on the demo world's four models."""
    from django.core.management import call_command

    out = io.StringIO()
    call_command(
        "simulate_campaign", dataset="demo", format="json", seeds=seeds, first_seed=first_seed,
        stdout=out, verbosity=0, **options,
    )  # fmt: skip
    return json.loads(out.getvalue())


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--videos", type=int, default=1500)
    options.add_argument("--world", type=Path, help="Keep (or reuse) the built demo world here.")
    options.add_argument("--seeds", type=int, default=5)
    options.add_argument("--coverage", type=int, default=0, help="Replays for coverage.")
    options.add_argument("--configs", default="fire,adaptive,active,shuffled,assessor")
    options.add_argument("--coverage-configs", default="adaptive,active,shuffled")
    options.add_argument("--half-width", type=float, default=1.0)
    options.add_argument("--proxies", default="bow,pos")
    options.add_argument("--settle", default="", help="The active policy's settled scores.")
    args = options.parse_args()
    configs = [name.strip() for name in args.configs.split(",") if name.strip()]
    covered = {name.strip() for name in args.coverage_configs.split(",")}
    rows, coverage = {}, {}
    with demo_world(args.videos, args.world):
        for name in configs:
            extra = dict(CONFIGS[name])
            if extra["policy"] == "active":
                extra.update(half_width=args.half_width, proxies=args.proxies)
                if args.settle:
                    extra["settle"] = args.settle
            took, rows[name] = once(lambda e=extra: simulate(0, args.seeds, e))
            log(f"{name}: {args.seeds} seeds in {took:.0f} s")
            if args.coverage and name in covered:
                took, coverage[name] = once(
                    lambda e=extra: _coverage(simulate(1000, args.coverage, e))
                )
                log(f"{name}: {args.coverage} replays in {took:.0f} s")
    report(args, rows, coverage)


def _coverage(result: dict) -> dict[str, float]:
    """Per metric, the share of (seed, run) whose interval held the true value."""
    held: dict[str, list[bool]] = {}
    for seed in result["seeds"]:
        for row in seed["scores"]:
            held.setdefault(row["metric"], []).append(row["covered"])
    return {metric: float(np.mean(values)) for metric, values in held.items()}


def report(args, rows: dict, coverage: dict) -> None:
    first = next(iter(rows.values()))
    print(f"Machine: {machine()}")
    print(
        f"Demo world: {first['queries']} queries, {first['pairs']:,} pooled pairs "
        f"({', '.join(first['runs'])} @ depth 10), crowd {first['crowd']['spec']} x "
        f"{first['crowd']['annotators']}, seeds 0-{args.seeds - 1}, half-width "
        f"{args.half_width:g} points\n"
    )
    print(
        "| config | labels (FIRE's) | share (target) | worst mean error | worst seed "
        "| mean half-width |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, data in rows.items():
        target = f"<= {TARGET_SHARE[name]:.0%}" if name in TARGET_SHARE else "-"
        scores = data["scores"]
        worst = max(scores, key=lambda row: abs(row["error"]))
        seed_worst = max(scores, key=lambda row: row["worst_seed_error"])
        half = np.mean([(row["high"] - row["low"]) / 2 for row in scores])
        print(
            f"| {name} | {data['labels']['policy']:,.0f} ({data['labels']['fire']:,.0f}) | "
            f"{data['labels']['share']:.1%} ({target}) | {worst['error']:+.2f} ({worst['run']} "
            f"{worst['metric']}) | {seed_worst['worst_seed_error']:.2f} ({seed_worst['run']} "
            f"{seed_worst['metric']}) | {half:.2f} |"
        )
    print("\nPer model and metric, error in points (mean over seeds; worst seed):\n")
    metrics = [row["metric"] for row in first["scores"] if row["run"] == first["runs"][0]]
    print("| config | run | " + " | ".join(metrics) + " |")
    print("|---|---|" + "---:|" * len(metrics))
    for name, data in rows.items():
        for run in data["runs"]:
            cells = [
                f"{row['error']:+.2f} ({row['worst_seed_error']:.2f})"
                for row in data["scores"]
                if row["run"] == run
            ]
            print(f"| {name} | {run} | " + " | ".join(cells) + " |")
    if coverage:
        print(f"\nCoverage of the 95% intervals over {args.coverage} replays (target 90%):\n")
        print("| config | " + " | ".join(metrics) + " |")
        print("|---|" + "---:|" * len(metrics))
        for name, shares in coverage.items():
            print(f"| {name} | " + " | ".join(f"{shares[m]:.1%}" for m in metrics) + " |")


if __name__ == "__main__":
    main()
