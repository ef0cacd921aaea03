"""Time one cross-fit of the relevance predictor at FIRE's scale (about 550,000 pooled pairs, 20
features, a quarter of the queries labelled), or compare its calibrations.

The pool is :func:`retrieval.prediction.synthetic.synthetic_pool` (5 runs, depth 10). With
``--calibration`` each calibration (none, isotonic, sigmoid) is fitted on a smaller pool and its
expected calibration error (10 equal-count bins of the out-of-fold labelled pairs, predicted mean
against mean target) printed beside its log loss and seconds. No Django needed::

    .venv/bin/python bench/predictor_bench.py [--queries 26500] [--share 0.25] [--calibration]
        [--method none|isotonic|sigmoid] [--max-train-pairs 200000] [--threads 1]
"""

import os
import time

import numpy as np
from harness import log, machine, parser

from retrieval.prediction.model import CALIBRATIONS, MAX_TRAIN_PAIRS, THREADS, cross_fit
from retrieval.prediction.synthetic import synthetic_pool


def calibration_error(predicted: np.ndarray, observed: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error over ``bins`` equal-count bins of the predictions."""
    parts = np.array_split(np.argsort(predicted, kind="stable"), bins)
    gaps = [abs(predicted[p].mean() - observed[p].mean()) * p.size for p in parts if p.size]
    return float(sum(gaps) / predicted.size)


def main() -> None:
    options = parser(__doc__, seed=True)
    options.add_argument("--queries", type=int, default=26_500)
    options.add_argument("--share", type=float, default=0.25, help="share of queries labelled")
    options.add_argument("--calibration", action="store_true", help="compare calibrations")
    options.add_argument(
        "--method", choices=[*CALIBRATIONS, "none"], default="none", help="calibration to time"
    )
    options.add_argument("--max-train-pairs", type=int, default=MAX_TRAIN_PAIRS)
    options.add_argument("--threads", type=int, default=THREADS)
    args = options.parse_args()
    queries = 4_000 if args.calibration and args.queries == 26_500 else args.queries
    log(f"building a synthetic pool of {queries:,} queries")
    pool = synthetic_pool(queries, seed=args.seed)
    features = pool.features()
    targets = pool.targets(args.share, seed=args.seed + 1)
    labelled = ~np.isnan(targets)
    print(
        f"{len(pool):,} pairs x {features.matrix.shape[1]} features, "
        f"{int(labelled.sum()):,} labelled ({labelled.mean():.0%}); {machine()}, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    chosen = None if args.method == "none" else args.method
    for calibration in (None, *CALIBRATIONS) if args.calibration else (chosen,):
        log(f"cross-fitting, calibration {calibration}")
        began = time.perf_counter()
        result = cross_fit(
            features,
            pool.groups,
            targets,
            seed=args.seed,
            calibration=calibration,
            max_train_pairs=args.max_train_pairs,
            threads=args.threads,
        )
        seconds = time.perf_counter() - began
        quality = result.quality
        ece = calibration_error(result.probability[labelled], targets[labelled])
        print(
            f"calibration {calibration or 'none'}: {seconds:.1f} s, ECE {ece:.4f}, "
            f"log loss {quality.log_loss:.4f} (base rate {quality.base_log_loss:.4f}), "
            f"Brier {quality.brier:.4f}, AUC {quality.auc:.3f}; {result.method}, at most "
            f"{args.max_train_pairs:,} training pairs a fold, {args.threads} thread(s)"
        )


if __name__ == "__main__":
    main()
