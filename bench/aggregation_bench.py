"""Majority against Dawid-Skene on a simulated crowd under FIRE's labelling policy.

``--pairs`` pairs, ``--relevant`` truly relevant (FIRE §3.2: 7-30%), labelled as FIRE §3.1
does by the issue's crowd (60% careful, 20% normal, 10% random spammers, 10% always "not
relevant"; the reference crowd has no spammers), resolved by strict majority, Dawid & Skene
(1979), and Dawid-Skene with 5% gold; a disagreement counts as wrong. Last, one Dawid-Skene
fit at FIRE's scale (660,000 labels). Run with ``.venv/bin/python bench/aggregation_bench.py``.
"""

from collections import defaultdict

import numpy as np
from harness import once, parser

from annotation.people import quality
from retrieval.label_sets.status import LabelStatus

CROWD = (("careful", 0.6, 0.02), ("normal", 0.2, 0.08), ("random", 0.1, None), ("no", 0.1, None))
CLEAN = (("careful", 0.8, 0.02), ("normal", 0.2, 0.08))


def crowd(people: int, profiles) -> list[tuple[str, float | None]]:
    counts = np.floor(np.array([share for _, share, _ in profiles]) * people).astype(int)
    counts[0] += people - counts.sum()
    return [
        (name, err) for (name, _, err), n in zip(profiles, counts, strict=True) for _ in range(n)
    ]


def answer(kind: str, err: float | None, truth: np.ndarray, rng) -> np.ndarray:
    if kind == "random":
        return (rng.random(truth.shape) < 0.5).astype(np.int64)
    if kind == "no":
        return np.zeros_like(truth)
    flip = rng.random(truth.shape) < err
    return np.where(flip, 1 - truth, truth)


def label(truth: np.ndarray, people, rng, second_rate: float = 0.1):
    """FIRE's policy: (item, annotator, label) arrays, and the label count."""
    n = len(truth)
    chosen = np.argsort(rng.random((n, len(people))), axis=1)[:, :3]  # three distinct people
    answers = np.empty((n, 3), dtype=np.int64)
    for a, (kind, err) in enumerate(people):
        mask = chosen == a
        answers[mask] = answer(kind, err, np.broadcast_to(truth[:, None], (n, 3))[mask], rng)
    second = rng.random(n) < second_rate
    third = second & (answers[:, 0] != answers[:, 1])
    take = np.stack([np.ones(n, bool), second, third], axis=1)
    items = np.broadcast_to(np.arange(n)[:, None], (n, 3))[take]
    return items, chosen[take], answers[take]


def gold_answers(people, n_labels_each: np.ndarray, rate: float, n_items: int, rng):
    """Each annotator answers known pairs, ``rate`` of their labels (at least one)."""
    per = np.maximum(1, np.round(n_labels_each * rate)).astype(int)
    n_gold = int(per.max())
    gold_truth = (rng.random(n_gold) < 0.5).astype(np.int64)
    items, annotators, labels = [], [], []
    for a, (kind, err) in enumerate(people):
        which = rng.choice(n_gold, per[a], replace=False)
        items.append(n_items + which)
        annotators.append(np.full(per[a], a))
        labels.append(answer(kind, err, gold_truth[which], rng))
    known = np.concatenate([np.full(n_items, quality.UNKNOWN), gold_truth])
    return np.concatenate(items), np.concatenate(annotators), np.concatenate(labels), known


def accuracy(status: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    decided = (status == LabelStatus.RELEVANT) | (status == LabelStatus.IRRELEVANT)
    right = decided & ((status == LabelStatus.RELEVANT) == (truth == 1))
    return float(right.mean()), float(right[truth == 1].mean()), float((~decided).mean())


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--pairs", type=int, default=20_000)
    options.add_argument("--relevant", type=float, default=0.15)
    options.add_argument("--people", type=int, default=20)
    options.add_argument("--seeds", type=int, default=5)
    args = options.parse_args()
    rows: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    overhead = []
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        truth = (rng.random(args.pairs) < args.relevant).astype(np.int64)
        for name, profiles in (("reference crowd (no spammers)", CLEAN), ("issue's crowd", CROWD)):
            people = crowd(args.people, profiles)
            items, who, labels = label(truth, people, np.random.default_rng(seed + 100))
            majority = quality.majority(items, labels, args.pairs).status
            rows[f"{name}: majority"].append(accuracy(majority, truth))
            if profiles is CLEAN:
                continue
            ds = quality.dawid_skene(items, who, labels, args.pairs, len(people))
            rows[f"{name}: Dawid-Skene"].append(accuracy(ds.status, truth))
            each = np.bincount(who, minlength=len(people))
            g_items, g_who, g_labels, known = gold_answers(
                people, each, 0.05, args.pairs, np.random.default_rng(seed + 200)
            )
            fit = quality.dawid_skene(
                np.concatenate([items, g_items]),
                np.concatenate([who, g_who]),
                np.concatenate([labels, g_labels]),
                len(known),
                len(people),
                known,
            )
            rows[f"{name}: Dawid-Skene + 5% gold"].append(accuracy(fit.status[: args.pairs], truth))
            overhead.append(len(g_items) / len(items))
    print(
        f"{args.pairs:,} pairs, {args.relevant:.0%} relevant, {args.people} annotators, "
        f"FIRE policy (10% second label, third on disagreement), mean of {args.seeds} seeds"
    )
    print(f"{'resolution':<52} {'accuracy':>9} {'relevant':>9} {'no label':>9}")
    for name, values in rows.items():
        acc, rel, none = np.mean(values, axis=0)
        print(f"{name:<52} {acc:>9.2%} {rel:>9.2%} {none:>9.2%}")
    print(f"gold labels as a share of campaign labels: {np.mean(overhead):.1%}")

    rng = np.random.default_rng(9)
    n_items, n_people = 555_000, 100
    truth = (rng.random(n_items) < 0.1).astype(np.int64)
    people = crowd(n_people, CROWD)
    items, who, labels = label(truth, people, rng, second_rate=0.19)
    took, fit = once(lambda: quality.dawid_skene(items, who, labels, n_items, n_people))
    print(
        f"Dawid-Skene fit of {len(labels):,} labels on {n_items:,} pairs, {n_people} annotators: "
        f"{took:.2f} s ({fit.iterations} EM iterations, converged={fit.converged})"
    )


if __name__ == "__main__":
    main()
