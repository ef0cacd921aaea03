"""Retrieval metrics over whole runs as arrays (pure numpy, no ORM).

Inputs are ``hits``: a bool queries x depth matrix saying whether the video at each rank
is a positive, in rank order. Correct@K is FIRE §2.1's name for what text-to-video papers
call Recall@K: 1 when any positive is in the top K, else 0.
"""

import numpy as np

DEFAULT_KS = (1, 5, 10)


def correct_at_k(hits: np.ndarray, k: int) -> np.ndarray:
    """Per query, 1.0 if a positive is among the first ``k`` ranks (FIRE §2.1)."""
    hits = np.asarray(hits, dtype=bool)
    return hits[:, :k].any(axis=1).astype(np.float64)


def mean_correct_at_ks(hits: np.ndarray, ks=DEFAULT_KS) -> dict[str, float]:
    """Mean Correct@K over queries for each K, keyed ``"C@K"``."""
    return {f"C@{k}": float(correct_at_k(hits, k).mean()) if len(hits) else 0.0 for k in ks}
