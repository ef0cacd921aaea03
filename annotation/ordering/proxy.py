"""Pure rules behind the proxy-driven campaign settings: queue order and auto-labels.

A semantic proxy S(video, caption) (Wray et al. 2021, §4) scores each pending pair; these
functions turn scores into new queue positions within each caption and into automatic
labels at two thresholds. :mod:`annotation.ordering.proxy_queue` applies them to a campaign.
"""

from __future__ import annotations

import numpy as np

from retrieval.label_sets.status import IRRELEVANT, RELEVANT

NONE = -1
"""No automatic label (see :func:`auto_labels`)."""


def order_within_captions(
    caption_ids: np.ndarray, positions: np.ndarray, scores: np.ndarray
) -> np.ndarray:
    """New positions: each caption's positions handed out by descending score.

    The positions a caption holds stay the same set; the highest-scoring pair gets the
    smallest. Ties keep their old order, and pairs with a NaN score keep their position
    (the others are permuted among the remaining positions of their caption).
    """
    caption_ids = np.asarray(caption_ids)
    positions = np.asarray(positions, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    if not (caption_ids.ndim == positions.ndim == scores.ndim == 1):
        raise ValueError("caption_ids, positions and scores must be 1-D")
    if not (len(caption_ids) == len(positions) == len(scores)):
        raise ValueError("caption_ids, positions and scores must have the same length")
    new = positions.copy()
    known = np.flatnonzero(~np.isnan(scores))
    if not len(known):
        return new
    captions, old, score = caption_ids[known], positions[known], scores[known]
    # Pairs in their new order (caption, descending score, old position) and the caption's
    # slots in ascending order: both group by caption with the same group sizes.
    by_score = np.lexsort((old, -score, captions))
    slots = np.lexsort((old, captions))
    new[known[by_score]] = old[slots]
    return new


def check_thresholds(relevant_at: float | None, irrelevant_at: float | None) -> None:
    """Raise ValueError unless ``0 <= irrelevant_at < relevant_at <= 1`` (None: that side off)."""
    if relevant_at is None and irrelevant_at is None:
        raise ValueError("give relevant_at, irrelevant_at or both")
    for name, value in (("relevant_at", relevant_at), ("irrelevant_at", irrelevant_at)):
        if value is not None and not (0.0 <= value <= 1.0):  # also rejects NaN
            raise ValueError(f"{name} must be between 0 and 1, got {value}")
    if relevant_at is not None and irrelevant_at is not None and not irrelevant_at < relevant_at:
        raise ValueError(
            f"need irrelevant_at < relevant_at, got irrelevant_at={irrelevant_at} "
            f"and relevant_at={relevant_at}"
        )


def auto_labels(
    scores: np.ndarray, relevant_at: float | None, irrelevant_at: float | None
) -> np.ndarray:
    """int8 per score: RELEVANT (1) when ``>= relevant_at``, IRRELEVANT (0) when
    ``<= irrelevant_at``, else NONE (-1).

    NaN scores get -1; a threshold of None turns that side off.
    """
    check_thresholds(relevant_at, irrelevant_at)
    scores = np.asarray(scores, dtype=np.float64)
    out = np.full(scores.shape, NONE, dtype=np.int8)
    with np.errstate(invalid="ignore"):
        if relevant_at is not None:
            out[scores >= relevant_at] = RELEVANT
        if irrelevant_at is not None:
            out[scores <= irrelevant_at] = IRRELEVANT
    return out


def rule_text(proxy: str, op: str, threshold: float) -> str:
    """The ``Pair.auto_label`` text, e.g. ``bow>=0.90`` (two decimals, more when needed)."""
    text = f"{threshold:.2f}"
    if float(text) != threshold:
        text = repr(float(threshold))
    return f"{proxy}{op}{text}"
