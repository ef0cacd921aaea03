"""How well a semantic proxy (Wray et al., CVPR 2021, §4.4) predicts the human labels: ROC
AUC of its score, and at the threshold that maximises Krippendorff's alpha (raw agreement
peaks at "nothing is relevant" when few pairs are) the percent agreement and alpha between
the thresholded proxy and the humans, as two coders of every pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from .agreement import AgreementError, krippendorff_alpha


@dataclass(frozen=True)
class ProxyAgreement:
    """One proxy against the human labels; None where a figure is undefined."""

    pairs: int
    relevant: int
    auc: float | None
    threshold: float | None
    agreement: float | None
    alpha: float | None
    predicted_relevant: int
    note: str = ""


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """Area under the ROC curve via the rank-sum (Mann-Whitney) identity, ties halved."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=bool)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(scores)  # average ranks for ties
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def agreement_by_threshold(
    scores: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(thresholds, percent agreement, alpha) when ``score >= t`` predicts relevant, at each
    distinct score and one above the maximum, from cumulative counts. Two coders of every
    unit: alpha = 1 - (n - 1) o_01 / (n_0 n_1) with n = 2N values, NaN where undefined."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=bool)
    n = len(scores)
    if n == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    values, inverse = np.unique(scores, return_inverse=True)
    pos_at = np.bincount(inverse, weights=labels, minlength=len(values))
    all_at = np.bincount(inverse, minlength=len(values)).astype(np.float64)
    # Pairs with score >= values[i] (suffix sums), then "above the maximum": none.
    pos_above = np.append(np.cumsum(pos_at[::-1])[::-1], 0.0)
    all_above = np.append(np.cumsum(all_at[::-1])[::-1], 0.0)
    n_pos = float(labels.sum())
    true_neg = (n - all_above) - (n_pos - pos_above)
    agree = (pos_above + true_neg) / n
    disagree = n - pos_above - true_neg
    ones = n_pos + all_above
    zeros = 2 * n - ones
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = np.where(ones * zeros > 0, 1 - (2 * n - 1) * disagree / (ones * zeros), np.nan)
    thresholds = np.append(values, np.nextafter(values[-1], np.inf))
    return thresholds, agree, alpha


def proxy_agreement(scores: np.ndarray, labels: np.ndarray) -> ProxyAgreement:
    """AUC, best threshold, agreement there and alpha for one proxy's scores of the pairs."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=bool)
    keep = ~np.isnan(scores)
    note = "" if keep.all() else f"{int((~keep).sum())} pairs outside the proxy's split left out"
    scores, labels = scores[keep], labels[keep]
    n = len(scores)
    if n == 0:
        return ProxyAgreement(0, 0, None, None, None, None, 0, "no judged pair to compare")
    thresholds, agree, alphas = agreement_by_threshold(scores, labels)
    # Highest alpha (first: the lowest threshold reaching it); raw agreement if undefined.
    best = int(np.nanargmax(alphas)) if not np.isnan(alphas).all() else int(np.argmax(agree))
    threshold = float(thresholds[best])
    predicted = scores >= threshold
    relevant = predicted.astype(np.int64) + labels  # of the two coders, per pair
    counts = np.c_[2 - relevant, relevant]
    try:
        alpha = krippendorff_alpha(counts)
    except AgreementError as exc:
        alpha, note = None, "; ".join(x for x in (note, str(exc)) if x)
    return ProxyAgreement(
        pairs=n,
        relevant=int(labels.sum()),
        auc=roc_auc(scores, labels),
        threshold=threshold,
        agreement=float(agree[best]),
        alpha=alpha,
        predicted_relevant=int(predicted.sum()),
        note=note,
    )
