"""Pure: one whole campaign replayed offline under a policy, seed by seed, beside FIRE's policy on
the same crowd: the labels each spent (campaign, gold and qualification) and, per run and metric,
the true-label value, the estimate and its 95% interval. ``manage.py simulate_campaign`` prints
it; the benches read it.

``fire`` and ``adaptive`` report the scores of their resolved labels with the interval
:mod:`retrieval.scoring.score_intervals` gives them (label noise and unjudged pairs); ``active``
its active-inference estimate and interval (:mod:`annotation.simulation.active`).
"""

from dataclasses import dataclass, replace

import numpy as np

from annotation.policy import rules as policy
from annotation.simulation import offline
from annotation.simulation.active import ActiveSettings, simulate_active
from annotation.simulation.estimates import METRICS, true_scores, world_intervals
from annotation.simulation.model import Outcome, World
from annotation.simulation.offline import QualityControl, SimulatedCrowd
from retrieval.prediction.features import PairFeatures

ACTIVE = "active"
POLICIES = (policy.FIRE, policy.ADAPTIVE, ACTIVE)
ORDER = {policy.FIRE: offline.DEPTH, policy.ADAPTIVE: offline.METRIC_FIRST}
"""The judging order each policy is replayed with: FIRE's by depth (FIRE §3.1), the adaptive
policy's most valuable pair first."""


@dataclass(frozen=True)
class SeedResult:
    """One seed: labels spent by FIRE's policy and by the policy (each by kind), and per (run,
    metric) the estimate and its interval."""

    seed: int
    fire: dict[str, int]
    spent: dict[str, int]
    scores: dict[tuple[str, str], tuple[float, float, float]]
    settled: bool | None = None
    stages: int | None = None


def simulate_seed(
    world: World,
    crowd: SimulatedCrowd,
    policy_name: str,
    seed: int,
    *,
    features: PairFeatures | None = None,
    settings: ActiveSettings | None = None,
    quality: QualityControl | None = None,
) -> SeedResult:
    """``policy_name`` and FIRE's policy judged by ``crowd`` with ``seed`` (features and
    settings are the active policy's)."""
    if policy_name not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}")

    def judged(name: str) -> Outcome:
        return offline.simulate(
            world, crowd, policy_name=name, order=ORDER[name], seed=seed, quality=quality
        )

    fire = judged(policy.FIRE)
    if policy_name in ORDER:
        outcome = fire if policy_name == policy.FIRE else judged(policy_name)
        return SeedResult(seed, fire.spent, outcome.spent, _resolved(world, outcome))
    if features is None:
        raise ValueError("the active policy needs the pool's features")
    active = simulate_active(world, crowd, features, settings=settings, seed=seed, quality=quality)
    found = active.estimates
    scores = {
        (run, metric): tuple(
            float(getattr(found[metric], end)[r]) for end in ("estimate", "low", "high")
        )
        for r, run in enumerate(world.run_names)
        for metric in METRICS
    }
    return SeedResult(
        seed, fire.spent, active.outcome.spent, scores, active.settled, len(active.stages)
    )


def _resolved(world: World, outcome: Outcome) -> dict[tuple[str, str], tuple[float, float, float]]:
    """The resolved labels' scores (unlabelled pairs irrelevant, as a label set resolved from a
    campaign reports them) and their score intervals."""
    values = true_scores(replace(world, labels=outcome.status == 1))
    intervals = world_intervals(world, outcome)
    scores = {}
    for run, by_metric in values.items():
        for metric, value in by_metric.items():
            interval = intervals.get(run, {}).get(metric)
            low, high = (value, value) if interval is None else (interval.low, interval.high)
            scores[(run, metric)] = (value, min(low, value), max(high, value))
    return scores


def summary(world: World, policy_name: str, results: list[SeedResult]) -> dict:
    """The JSON of ``manage.py simulate_campaign``: labels and scores as means over the seeds,
    each seed beside them; scores in points (0-100)."""
    truth = true_scores(world)

    def scores(result: SeedResult) -> list[dict]:
        return [
            {
                "run": run,
                "metric": metric,
                "true": 100 * truth[run][metric],
                "estimate": 100 * estimate,
                "low": 100 * low,
                "high": 100 * high,
                "error": 100 * (estimate - truth[run][metric]),
                "covered": bool(low - 1e-12 <= truth[run][metric] <= high + 1e-12),
            }
            for (run, metric), (estimate, low, high) in result.scores.items()
        ]

    seeds = [
        {
            "seed": result.seed,
            "labels": _labels(
                sum(result.fire.values()),
                sum(result.spent.values()),
                fire_by_kind=dict(result.fire),
                policy_by_kind=dict(result.spent),
            ),
            "scores": scores(result),
            **({"settled": result.settled, "stages": result.stages} if result.stages else {}),
        }
        for result in results
    ]
    mean_scores = [
        {
            "run": rows[0]["run"],
            "metric": rows[0]["metric"],
            "true": rows[0]["true"],
            **{
                key: float(np.mean([row[key] for row in rows]))
                for key in ("estimate", "low", "high", "error")
            },
            "worst_seed_error": float(max(abs(row["error"]) for row in rows)),
            "coverage": float(np.mean([row["covered"] for row in rows])),
        }
        for rows in zip(*(seed["scores"] for seed in seeds), strict=True)
    ]
    return {
        "policy": policy_name,
        "queries": int(world.layout.pair_of.shape[0]),
        "pairs": len(world.pool),
        "labels": _labels(
            *(float(np.mean([s["labels"][k] for s in seeds])) for k in ("fire", "policy"))
        ),
        "scores": mean_scores,
        "seeds": seeds,
    }


def _labels(fire, spent, **by_kind) -> dict:
    """Labels spent by FIRE's policy and by the policy, and their share."""
    return {"fire": fire, "policy": spent, "share": spent / fire if fire else None, **by_kind}
