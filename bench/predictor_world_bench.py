"""How well the relevance predictor ranks a demo world's pooled pairs: out-of-fold AUC, Brier
score against the base rate's, and mean p(1 - p) (the uncertainty left for active inference) of
the pairs of unlabelled queries, for shares of the queries labelled with their true labels;
with the features shuffled (the useless-predictor control) and with a simulated machine
assessor (truth flipped on a share of pairs, its Cohen's kappa printed) as one more column.

The world is the demo world of ``bench/adaptive_bench.py``'s ``--world`` folder (built there),
pooled at depth 10 from its four models; features are the pool's ranks, caption lengths and
the bow and pos proxies (Wray et al., CVPR 2021, §4.4), computed here::

    .venv/bin/python bench/predictor_world_bench.py --world /tmp/w1500 [--shares 0.1 0.25 0.5]
        [--assessor-accuracy 0.8 0.9] [--calibration none|isotonic|sigmoid] [--seed 0]
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
    args = options.parse_args()
    with temporary_django(template=args.world):
        from sklearn.metrics import brier_score_loss, cohen_kappa_score, roc_auc_score

        from annotation.simulation.campaign_service import PROXIES, world_features
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
        print(
            f"{len(truth):,} pooled pairs of {np.unique(groups).size} queries, "
            f"{truth.mean():.1%} relevant, {features.matrix.shape[1]} features; {machine()}\n"
        )
        print("| features | queries labelled | AUC | Brier (base rate) | mean p(1-p) |")
        print("|---|---:|---:|---:|---:|")
        assessors = {}
        for accuracy in args.assessor_accuracy:
            said = np.where(rng.random(truth.size) < accuracy, truth, ~truth)
            kappa = cohen_kappa_score(truth, said)
            assessors[f"+ assessor, kappa {kappa:.2f}"] = PairFeatures(
                np.c_[features.matrix, said], (*features.names, "assessor")
            )
        sets = {"ranks, words, proxies": features, "shuffled": shuffled(features, args.seed)}
        for share in args.shares:
            queries = np.unique(groups)
            chosen = queries[rng.random(queries.size) < share]
            labelled = np.isin(groups, chosen)
            targets = np.where(labelled, truth.astype(np.float64), np.nan)
            base = truth[labelled].mean()
            for name, matrix in {**sets, **assessors}.items():
                calibration = None if args.calibration == "none" else args.calibration
                fit = cross_fit(matrix, groups, targets, seed=args.seed, calibration=calibration)
                p = fit.probability[~labelled]
                held = truth[~labelled]
                print(
                    f"| {name} | {share:.0%} | {roc_auc_score(held, p):.3f} | "
                    f"{brier_score_loss(held, p):.4f} ({brier_score_loss(held, np.full(held.size, base)):.4f}) | "
                    f"{np.mean(p * (1 - p)):.3f} |"
                )


if __name__ == "__main__":
    main()
