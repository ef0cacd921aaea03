"""Pure: a campaign's labels, machine judgements and caption texts as the per-pair columns the
relevance predictor (:mod:`retrieval.prediction`) reads, pairs in pool order.

Targets are each labelled pair's probability of relevance as the campaign resolves it: the
posterior under the adaptive policy, the share of relevant live labels under FIRE's
(Rodriguez et al. 2022, §3.1: labels from several annotators resolve a pair), an adjudicated
label certain under both; NaN where no human said anything. Machine assessors stay features,
never targets (a model judging pairs is a signal to calibrate, not ground truth)."""

from collections.abc import Sequence

import numpy as np

NO_VERDICT = -1
"""An adjudicated or machine label code meaning "none given" (1: relevant, 0: irrelevant)."""


def label_targets(
    slots: np.ndarray,
    pair_index: np.ndarray,
    labels: np.ndarray,
    adjudicated: np.ndarray,
    n_slots: int,
    posterior: np.ndarray | None = None,
) -> np.ndarray:
    """Each pair's target: ``slots`` its dense slot among the ``n_slots`` of the campaign's
    labels read model; ``pair_index`` and ``labels`` (1/0) one entry per live label;
    ``adjudicated`` per pair (1/0, :data:`NO_VERDICT`); ``posterior`` per slot under the
    adaptive policy (None: FIRE's share of relevant labels). NaN for a pair without labels."""
    slots = np.asarray(slots, dtype=np.int64)
    adjudicated = np.asarray(adjudicated, dtype=np.int64)
    if adjudicated.shape != slots.shape:
        raise ValueError("adjudicated must hold one code per pair")
    index = np.asarray(pair_index, dtype=np.int64)
    said = np.asarray(labels, dtype=np.float64)
    # One slot more, empty, for pairs outside the read model.
    total = np.bincount(index, minlength=n_slots + 1)
    relevant = np.bincount(index, weights=said, minlength=n_slots + 1)
    at = np.where((slots >= 0) & (slots < n_slots), slots, n_slots)
    labelled = total[at] > 0
    if posterior is None:
        share = relevant[at] / np.maximum(total[at], 1)
    else:
        posterior = np.asarray(posterior, dtype=np.float64)
        if posterior.shape != (n_slots,):
            raise ValueError(f"posterior must hold one value per slot ({n_slots})")
        share = np.append(posterior, np.nan)[at]
    targets = np.where(labelled, share, np.nan)
    decided = adjudicated != NO_VERDICT
    targets[decided] = adjudicated[decided]
    return targets


def assessor_columns(
    names: Sequence[str],
    assessor: np.ndarray,
    row: np.ndarray,
    score: np.ndarray,
    label: np.ndarray,
    pairs: int,
) -> dict[str, np.ndarray]:
    """One column per assessor (``assessor:<name>``, in ``names``' order) over ``pairs`` pairs:
    its score of the pair, else its label as 1/0, NaN where it judged nothing. Per judgement:
    ``assessor`` its index in ``names``, ``row`` the pair's position (-1: not a pooled pair),
    ``score`` (NaN: none), ``label`` (1/0, :data:`NO_VERDICT`)."""
    assessor = np.asarray(assessor, dtype=np.int64)
    row = np.asarray(row, dtype=np.int64)
    score = np.asarray(score, dtype=np.float64)
    label = np.asarray(label, dtype=np.int64)
    value = np.where(np.isnan(score), np.where(label == NO_VERDICT, np.nan, label), score)
    matrix = np.full((len(names), pairs), np.nan)
    keep = (row >= 0) & (row < pairs)
    matrix[assessor[keep], row[keep]] = value[keep]
    return {f"assessor:{name}": matrix[i] for i, name in enumerate(names)}


def word_counts(texts: Sequence[str]) -> np.ndarray:
    """Each text's length in words (runs of non-space characters)."""
    return np.fromiter((len(text.split()) for text in texts), dtype=np.float64, count=len(texts))
