"""How well the relevance predictor ranks a demo world's pooled pairs: out-of-fold AUC, Brier
score against the base rate's, and mean p(1 - p) (the uncertainty left for active inference) of
the pairs of unlabelled queries, for shares of the queries labelled with their true labels;
with the features shuffled (the useless-predictor control) and with a simulated machine
assessor (truth flipped on a share of pairs, its Cohen's kappa printed) as one more column.

"Floor": an optimistic count of the pairs a design of active inference (Zrnic & Candès, ICML
2024) drawing pairs independently must have labelled for a 95% interval of ``--half-width`` points on every run's C@1, C@5,
C@10 and AP with this predictor: the labelled queries' pairs, plus the Lagrangian dual bound of
sampling the others pair by pair with any probabilities, under the first-order variance
sum E[g^2] p(1 - p)(1/pi - 1) / N^2 (g a pair's effect on its query's metric, its mean
square taken over the other pairs' predictions; the higher-order terms add more), every label
free of noise and costing one answer. Printed as a share of the labels FIRE's policy
takes on the quality bench's crowd: a campaign settling those scores spends more.

The world is the demo world of ``bench/adaptive_bench.py``'s ``--world`` folder (built there),
pooled at depth 10 from its four models; features are the pool's ranks, caption lengths and
the bow and pos proxies (Wray et al., CVPR 2021, §4.4), computed here::

    .venv/bin/python bench/predictor_world_bench.py --world /tmp/w1500 [--shares 0.1 0.25 0.5]
        [--assessor-accuracy 0.8 0.9] [--calibration none|isotonic|sigmoid] [--seed 0]
        [--half-width 1]
"""

import numpy as np
from crowd_bench import DEMO_RUNS, DEPTH
from harness import log, machine, parser, temporary_django


def main() -> None:
    options = parser(__doc__, seed=True)
    options.add_argument(
        "--world", required=True, help="the --world folder adaptive_bench.py built"
    )
    options.add_argument("--shares", type=float, nargs="+", default=[0.1, 0.25, 0.5])
    options.add_argument("--assessor-accuracy", type=float, nargs="+", default=[0.8, 0.9])
    options.add_argument(
        "--calibration", choices=["none", "isotonic", "sigmoid"], default="isotonic"
    )
    options.add_argument("--half-width", type=float, default=1.0, help="points, for the floor")
    args = options.parse_args()
    with temporary_django(template=args.world):
        from sklearn.metrics import brier_score_loss, cohen_kappa_score, roc_auc_score

        from annotation.policy import rules as policy
        from annotation.simulation import offline
        from annotation.simulation.campaign_service import PROXIES, SimulationSpec, world_features
        from annotation.simulation.replay_service import replay_world
        from retrieval.models import Dataset
        from retrieval.prediction.features import PairFeatures, shuffled
        from retrieval.prediction.model import cross_fit

        dataset = Dataset.objects.get(name="demo")
        world, _ = replay_world(dataset, list(DEMO_RUNS), DEPTH, None)
        log("features")
        features = world_features(dataset, world, PROXIES)
        truth = world.labels
        groups = world.pool.caption_ids
        rng = np.random.default_rng(args.seed)
        queries = np.unique(groups)
        print(
            f"{len(truth):,} pooled pairs of {queries.size} queries, "
            f"{truth.mean():.1%} relevant, {features.matrix.shape[1]} features; {machine()}\n"
        )
        crowd, _ = SimulationSpec(policy="fire").checked()
        fire = sum(
            offline.simulate(world, crowd, policy_name=policy.FIRE, seed=args.seed).spent.values()
        )
        print(f"FIRE's policy on the quality bench's crowd: {fire:,} labels (the anchor)\n")
        print("| features | queries labelled | AUC | Brier (base rate) | mean p(1-p) | floor |")
        print("|---|---:|---:|---:|---:|---:|")
        assessors = {}
        for accuracy in args.assessor_accuracy:
            said = np.where(rng.random(truth.size) < accuracy, truth, ~truth)
            kappa = cohen_kappa_score(truth, said)
            assessors[f"+ assessor, kappa {kappa:.2f}"] = PairFeatures(
                np.c_[features.matrix, said], (*features.names, "assessor")
            )
        sets = {"ranks, words, proxies": features, "shuffled": shuffled(features, args.seed)}
        variance = (args.half_width / 100 / 1.96) ** 2 * len(queries) ** 2  # for +-H at 95%
        for share in args.shares:
            chosen = queries[rng.random(queries.size) < share]
            labelled = np.isin(groups, chosen)
            targets = np.where(labelled, truth.astype(np.float64), np.nan)
            base = truth[labelled].mean()
            for name, matrix in {**sets, **assessors}.items():
                calibration = None if args.calibration == "none" else args.calibration
                fit = cross_fit(matrix, groups, targets, seed=args.seed, calibration=calibration)
                known = np.where(labelled, truth, fit.probability)
                effect = _effects(world, known)
                floor = labelled.sum() + _floor(
                    effect[:, ~labelled] * known[~labelled] * (1 - known[~labelled]), variance
                )
                p = fit.probability[~labelled]
                held = truth[~labelled]
                print(
                    f"| {name} | {share:.0%} | {roc_auc_score(held, p):.3f} | "
                    f"{brier_score_loss(held, p):.4f} ({brier_score_loss(held, np.full(held.size, base)):.4f}) | "
                    f"{np.mean(p * (1 - p)):.3f} | {floor / fire:.1%} |"
                )


def _effects(world, known: np.ndarray) -> np.ndarray:
    """Rows (C@1, C@5, C@10, AP per run) x pairs: the expected square of the change of the
    pair's query metric when the pair turns relevant, other pairs relevant with ``known``
    (exact for C@K, whose change is 0 or 1, so its mean square is its mean; for AP the square
    of the mean, which is smaller). The metrics are multilinear, so the change is exact."""
    from annotation.simulation.estimates import query_metrics

    pair_of, runs = world.layout.pair_of, world.pool.run_count
    effect = np.zeros((4 * runs, known.size))
    for slot in range(pair_of.shape[1]):
        rows = np.flatnonzero(pair_of[:, slot] >= 0)
        pairs = pair_of[rows, slot]
        high, low = known.copy(), known.copy()
        high[pairs], low[pairs] = 1.0, 0.0
        up, down = query_metrics(world, high, rows), query_metrics(world, low, rows)
        for m, metric in enumerate(("C@1", "C@5", "C@10", "AP")):
            change = (up[metric] - down[metric]).T
            effect[m * runs : (m + 1) * runs, pairs] = change**2 if metric == "AP" else change
    return effect


def _floor(weights: np.ndarray, variance: float, steps: int = 3000) -> float:
    """The largest Lagrangian dual bound found on min sum pi subject to weights @ (1/pi - 1) <=
    variance per row: any multipliers give a lower bound; these come from multiplicative
    updates towards the constraints the design pi = min(1, sqrt(lam @ weights)) breaks."""
    lam, best = np.full(weights.shape[0], 1 / variance), 0.0
    row_sums = weights.sum(axis=1)
    for step in range(steps):
        w = lam @ weights
        pi = np.clip(np.sqrt(w), 1e-9, 1.0)
        dual = np.where(w <= 1, 2 * np.sqrt(w), 1 + w).sum() - lam @ (variance + row_sums)
        best = max(best, float(dual))
        ratio = weights @ (1 / pi - 1) / variance
        lam *= np.clip(ratio, 1e-3, 1e3) ** (0.2 / 2 ** (step // 1000))
    return best


if __name__ == "__main__":
    main()
