"""Time the word-set proxies (BoW, PoS, SYN; Wray et al., CVPR 2021, Eq. 6-8) on 10,000 x
10,000 captions.

Target: each matrix within 30 s through sparse incidence matrices. Anchor: the same IoU in a
Python loop over ``--loop-pairs`` pairs, extrapolated, and checked against ours::

    .venv/bin/python bench/proxies_bench.py [--captions 10000] [--loop-pairs 200000]
"""

import json
import time

import numpy as np
from harness import django_ready, machine, once, parser
from meteor_bench import caption

TARGET_S = 30.0


def iou(a: frozenset, b: frozenset) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--captions", type=int, default=10_000)
    options.add_argument("--loop-pairs", type=int, default=200_000)
    options.add_argument("--seed", type=int, default=0)
    args = options.parse_args()

    django_ready()  # puts the project's WordNet on NLTK's path
    from retrieval.encoders.text import load_spacy
    from retrieval.proxies.captions import parse_captions
    from retrieval.proxies.relevance import caption_set_matrix, set_proxy_sets
    from retrieval.proxies.synsets import caption_synsets

    rng = np.random.default_rng(args.seed)
    texts = [" ".join(caption(rng)) for _ in range(args.captions)]
    load_spacy()
    from nltk.corpus import wordnet

    start = time.perf_counter()
    wordnet.ensure_loaded()
    wordnet.synsets("dog")
    wordnet_s = time.perf_counter() - start
    parse_s, terms = once(lambda: parse_captions(texts))

    n = args.captions
    rows = rng.integers(0, n, args.loop_pairs)
    cols = rng.integers(0, n, args.loop_pairs)
    figures = {
        "captions": n,
        "pairs": n * n,
        "parse_s": round(parse_s, 2),
        "wordnet_load_s": round(wordnet_s, 2),
    }
    lines = []
    for proxy in ("bow", "pos", "syn"):
        start = time.perf_counter()
        groups = caption_synsets(terms) if proxy == "syn" else None
        families = set_proxy_sets(proxy, terms, groups)
        matrix = caption_set_matrix(families)
        sparse_s = time.perf_counter() - start

        parts = list(families.values())
        start = time.perf_counter()
        loop = np.array(
            [
                sum(w * iou(sets[r], sets[c]) for w, sets in parts)
                for r, c in zip(rows.tolist(), cols.tolist(), strict=True)
            ]
        )
        loop_s = time.perf_counter() - start
        projected = loop_s / args.loop_pairs * n * n
        diff = float(np.abs(matrix[rows, cols] - loop).max())
        symmetric = bool(np.array_equal(matrix, matrix.T))
        figures[proxy] = {
            "seconds": round(sparse_s, 2),
            "loop_projected_s": round(projected, 1),
            "speedup": round(projected / sparse_s, 1),
            "max_abs_diff": diff,
            "symmetric": symmetric,
            "mean": float(matrix.mean()),
        }
        lines.append(
            f"| {proxy.upper()} {n:,} x {n:,} | {sparse_s:.1f} s | <= {TARGET_S:.0f} s "
            f"({'met' if sparse_s <= TARGET_S else 'missed'}) | {projected:,.0f} s "
            f"({projected / sparse_s:,.0f}x) | {diff:.1e}, symmetric {symmetric} |"
        )
        del matrix

    print(f"Machine: {machine()}")
    print(
        f"{n:,} synthetic captions; spaCy parse once for all proxies: {parse_s:.1f} s; "
        f"WordNet load once per process (before timing): {wordnet_s:.1f} s\n"
    )
    print("| proxy matrix | sparse | target | pair loop (projected) | max diff vs loop |")
    print("|---|---|---|---|---|")
    for line in lines:
        print(line)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
