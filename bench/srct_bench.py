"""SRCT against random, mme and jpose on a demo world, with the expert ablation.

For each training seed: train, embed and search a ``--videos`` demo world; text-to-video
R@1/5/10 and MedR with the caption's own video as positive (Zhu, Bresson & Lim, §5) and
C@1/5/10 and nDCG under the world's ground truth; mean ± std over seeds, ``--json PATH``
writes every figure::

    .venv/bin/python bench/srct_bench.py --videos 1500 --seeds 0 1 2
"""

import json
import os
import time

import numpy as np
from harness import machine, parser, temporary_django

MODELS = {
    "random": ("random", {}),
    "mme": ("mme", {}),
    "jpose": ("jpose", {}),
    "srct": ("srct", {}),
    "srct (appearance)": ("srct", {"experts": ["appearance"]}),
    "srct (appearance + action)": ("srct", {"experts": ["appearance", "action"]}),
}


def _scores(original: np.ndarray, exhaustive: np.ndarray) -> dict[str, float]:
    """Figures of full rankings: bool queries x test videos hit matrices, rank order."""
    depth = original.shape[1]
    first = np.where(original.any(1), original.argmax(1) + 1, depth + 1)
    out = {f"R@{k}": float((first <= k).mean() * 100) for k in (1, 5, 10)}
    out["MedR"] = float(np.median(first))
    for k in (1, 5, 10):
        out[f"C@{k}"] = float(exhaustive[:, :k].any(1).mean() * 100)
    gains = 1.0 / np.log2(np.arange(2, depth + 2))
    dcg = (exhaustive * gains).sum(1)
    n_relevant = exhaustive.sum(1)
    ideal = np.cumsum(gains)[np.maximum(n_relevant, 1) - 1]
    out["nDCG"] = float(np.mean(np.where(n_relevant > 0, dcg / ideal, 0.0)) * 100)
    return out


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--videos", type=int, default=1500)
    options.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    options.add_argument("--srct-epochs", type=int, default=None, help="default: the encoder's")
    options.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    options.add_argument("--workers", type=int, default=2)
    options.add_argument("--json", default=None)
    args = options.parse_args()

    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in args.models}
    with temporary_django():
        from retrieval.datasets.demo.service import create_demo_dataset
        from retrieval.encoders import service as encoding
        from retrieval.models import Video
        from retrieval.scoring.evaluation import ground_truth_hits, original_hits
        from retrieval.search import service as search

        started = time.perf_counter()
        dataset = create_demo_dataset(n_videos=args.videos, seed=0, workers=args.workers)
        print(f"world: {args.videos} videos in {time.perf_counter() - started:.0f} s", flush=True)
        started = time.perf_counter()
        encoding.extract_dataset_features(dataset, device="cpu", experts=True)
        print(f"features + experts: {time.perf_counter() - started:.0f} s", flush=True)
        n_test = Video.objects.filter(dataset=dataset, split="test").count()
        for seed in args.seeds:
            for label in args.models:
                encoder, config = MODELS[label]
                config = dict(config) | ({"seed": seed} if encoder == "random" else {})
                model = encoding.register_encoder(dataset, f"{label} s{seed}", encoder, config)
                train_s = 0.0
                if encoder != "random":
                    epochs = args.srct_epochs if encoder == "srct" else None
                    started = time.perf_counter()
                    encoding.train(model, epochs=epochs, seed=seed, device="cpu")
                    train_s = time.perf_counter() - started
                started = time.perf_counter()
                encoding.embed(model, device="cpu")
                embed_s = time.perf_counter() - started
                run = search.predict(model, k=n_test)
                row = _scores(original_hits(run), ground_truth_hits(run))
                row |= {"train_s": train_s, "embed_s": embed_s}
                results[label].append(row)
                print(f"seed {seed} {label}: " + json.dumps({k: round(v, 2) for k, v in row.items()}), flush=True)  # fmt: skip
        queries = run.query_count

    print(f"\n{args.videos} videos ({n_test} test, {queries} queries), seeds {args.seeds}, "
          f"srct epochs {args.srct_epochs or 'default'}; {machine()}, CPU only\n")  # fmt: skip
    columns = ["R@1", "R@5", "R@10", "MedR", "C@1", "C@5", "C@10", "nDCG", "train_s", "embed_s"]
    print("| model | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for label, rows in results.items():
        values = np.array([[row[column] for column in columns] for row in rows])
        cells = [f"{m:.1f} ± {s:.1f}" for m, s in zip(values.mean(0), values.std(0), strict=True)]
        print(f"| {label} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"args": vars(args), "results": results}, handle, indent=1)


if __name__ == "__main__":
    main()
