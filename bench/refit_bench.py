"""The adaptive policy's annotator-model refit at FIRE's scale (target: under 5 s).

:func:`annotation.policy.confusion.fit` on 680,000 labels of 552,880 pairs, cold and warm
after 5,000 more labels; anchor: one ``bincount`` of the labels::

    .venv/bin/python bench/refit_bench.py [--pairs 552880] [--labels 680000]
"""

import numpy as np
from harness import machine, once, parser

from annotation.policy import confusion


def main() -> None:
    options = parser(__doc__, paragraph=True)
    options.add_argument("--pairs", type=int, default=552_880)
    options.add_argument("--labels", type=int, default=680_000)
    options.add_argument("--annotators", type=int, default=100)
    args = options.parse_args()
    rng = np.random.default_rng(0)
    pairs, labels, annotators = args.pairs, args.labels, args.annotators
    truth = rng.random(pairs) < 0.07
    item = np.concatenate([np.arange(pairs), rng.integers(0, pairs, max(labels - pairs, 0))])
    who = rng.integers(0, annotators, item.size)
    accuracy = np.where(np.arange(annotators) < 0.6 * annotators, 0.98, 0.92)
    accuracy[int(0.9 * annotators) :] = 0.5
    said = np.where(rng.random(item.size) < accuracy[who], truth[item], ~truth[item]).astype(int)
    strata = rng.integers(0, 80, pairs)
    anchor = once(lambda: np.bincount(item, weights=said, minlength=pairs))[0]
    cold_seconds, cold = once(
        lambda: confusion.fit(item, who, said, pairs, annotators, strata=strata)
    )
    more = 5_000
    item = np.concatenate([item, rng.integers(0, pairs, more)])
    who = np.concatenate([who, rng.integers(0, annotators, more)])
    said = np.concatenate([said, rng.integers(0, 2, more)])
    warm_seconds, warm = once(
        lambda: confusion.fit(
            item, who, said, pairs, annotators, strata=strata, warm=(cold.confusion, cold.prior)
        )
    )
    print(f"Machine: {machine()}")
    print(f"{pairs:,} pairs, {labels:,} labels, {annotators} annotators, 80 strata")
    print(f"anchor: one bincount of the labels {1000 * anchor:.1f} ms")
    print(f"cold fit: {cold_seconds:.2f} s, {cold.iterations} iterations (target < 5 s)")
    print(
        f"warm refit after {more:,} more labels: {warm_seconds:.2f} s, {warm.iterations} "
        "iterations (target < 5 s)"
    )


if __name__ == "__main__":
    main()
