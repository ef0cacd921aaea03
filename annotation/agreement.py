"""Agreement between annotators on binary relevance labels (FIRE §3.2, Table 2, Fig. 7).

Inputs are plain arrays: one row per label with the pair's index, the annotator's index and
the label (1 relevant, 0 irrelevant). Everything is computed from per-pair value counts
(pairs x 2), never from a dense annotators x pairs matrix, so FIRE's scale (660,000 labels
over 555,000 pairs) stays cheap.

- Percent agreement: the share of pairs with two or more labels whose labels all agree.
- Krippendorff's alpha (nominal): computed by the ``krippendorff`` package from the value
  counts; :func:`alpha_from_counts` is the same closed form, vectorised over bootstrap
  weights, for confidence intervals (it agrees with the package, see the tests).
"""

from collections.abc import Sequence
from dataclasses import dataclass

import krippendorff
import numpy as np


class AgreementError(ValueError):
    """The labels cannot support the figure asked for (say why, never crash)."""


def value_counts(pair_index: np.ndarray, labels: np.ndarray, n_pairs: int) -> np.ndarray:
    """Counts (pairs x 2): column 0 irrelevant labels, column 1 relevant labels."""
    pair_index = np.asarray(pair_index, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    if pair_index.shape != labels.shape:
        raise ValueError("pair_index and labels must have the same length")
    if labels.size and not np.isin(labels, (0, 1)).all():
        raise ValueError("labels must be 0 (irrelevant) or 1 (relevant)")
    flat = np.bincount(pair_index * 2 + labels, minlength=2 * n_pairs)
    return flat.reshape(n_pairs, 2)


def multiply_labelled(counts: np.ndarray) -> np.ndarray:
    """Rows of ``counts`` for pairs with two or more labels (the only ones agreement uses)."""
    counts = np.asarray(counts, dtype=np.int64)
    return counts[counts.sum(axis=1) >= 2]


def percent_agreement(counts: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray | float:
    """Share of multiply-labelled pairs whose labels all agree (FIRE §3.2 "Agreement").

    ``weights`` (resamples x pairs, bootstrap multiplicities over the multiply-labelled
    pairs) gives one value per resample.
    """
    multi = multiply_labelled(counts)
    if len(multi) == 0:
        raise AgreementError("no pair has two or more labels, so agreement is undefined")
    unanimous = (multi.min(axis=1) == 0).astype(np.float64)
    if weights is None:
        return float(unanimous.mean())
    return (weights @ unanimous) / weights.sum(axis=1)


def alpha_from_counts(counts: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray | float:
    """Krippendorff's nominal alpha from binary value counts, optionally per bootstrap resample.

    With ``n_uv`` labels of value v on pair u (only pairs with ``n_u >= 2`` count), the
    coincidences are ``o_01 = sum_u n_u0 n_u1 / (n_u - 1)`` and ``n_v = sum_u n_uv``, and
    ``alpha = 1 - (n - 1) o_01 / (n_0 n_1)`` (Krippendorff 2011, nominal, two values).
    """
    multi = multiply_labelled(counts).astype(np.float64)
    if len(multi) == 0:
        raise AgreementError("no pair has two or more labels, so alpha is undefined")
    n_u = multi.sum(axis=1)
    disagreement = multi[:, 0] * multi[:, 1] / (n_u - 1)
    if weights is None:
        weights_ = np.ones((1, len(multi)))
    else:
        weights_ = np.asarray(weights, dtype=np.float64)
    o_01 = weights_ @ disagreement
    n_0 = weights_ @ multi[:, 0]
    n_1 = weights_ @ multi[:, 1]
    n = n_0 + n_1
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = np.where(n_0 * n_1 > 0, 1.0 - (n - 1.0) * o_01 / (n_0 * n_1), np.nan)
    if weights is None:
        if np.isnan(alpha[0]):
            raise AgreementError(
                "every label has the same value, so alpha is undefined (no variation to agree on)"
            )
        return float(alpha[0])
    return alpha


def krippendorff_alpha(counts: np.ndarray) -> float:
    """Nominal alpha computed by the ``krippendorff`` package from value counts."""
    multi = multiply_labelled(counts)
    if len(multi) == 0:
        raise AgreementError("no pair has two or more labels, so alpha is undefined")
    if (multi.sum(axis=0) > 0).sum() < 2:
        raise AgreementError(
            "every label has the same value, so alpha is undefined (no variation to agree on)"
        )
    return float(krippendorff.alpha(value_counts=multi, level_of_measurement="nominal"))


BOOTSTRAP_CHUNK = 64
"""Resamples whose weights are held in memory at once (keeps memory flat at any size)."""


def bootstrap_weights(n_units: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Multiplicities (resamples x units) of resampling ``n_units`` units with replacement."""
    weights = np.empty((resamples, n_units), dtype=np.float64)
    for row in range(resamples):
        weights[row] = np.bincount(rng.integers(0, n_units, n_units), minlength=n_units)
    return weights


@dataclass(frozen=True)
class Interval:
    """A bootstrap percentile interval."""

    low: float
    high: float


def bootstrap_intervals(
    counts: np.ndarray, *, resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> dict[str, Interval]:
    """95% percentile intervals of percent agreement and alpha, resampling pairs."""
    multi = multiply_labelled(counts)
    if len(multi) == 0:
        raise AgreementError("no pair has two or more labels, so there is nothing to resample")
    rng = np.random.default_rng(seed)
    agreement, alpha = [], []
    for start in range(0, resamples, BOOTSTRAP_CHUNK):
        weights = bootstrap_weights(len(multi), min(BOOTSTRAP_CHUNK, resamples - start), rng)
        agreement.append(percent_agreement(multi, weights))
        alpha.append(alpha_from_counts(multi, weights))
    tail = (1.0 - level) / 2 * 100
    result = {}
    for name, values in (
        ("percent_agreement", np.concatenate(agreement)),
        ("krippendorff_alpha", np.concatenate(alpha)),
    ):
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            continue
        low, high = np.percentile(finite, [tail, 100 - tail])
        result[name] = Interval(float(low), float(high))
    return result


def by_label_count(counts: np.ndarray) -> list[dict]:
    """Pairs and their agreement, grouped by how many labels each pair received (FIRE Fig. 7)."""
    counts = np.asarray(counts, dtype=np.int64)
    totals = counts.sum(axis=1)
    unanimous = counts.min(axis=1) == 0
    rows = []
    for k in np.unique(totals[totals >= 1]).tolist():
        mask = totals == k
        rows.append(
            {
                "labels": int(k),
                "pairs": int(mask.sum()),
                "percent_agreement": float(unanimous[mask].mean()) if k >= 2 else None,
            }
        )
    return rows


def per_annotator(
    pair_index: np.ndarray,
    annotator_index: np.ndarray,
    labels: np.ndarray,
    resolved: np.ndarray,
    annotators: Sequence[str],
    seconds: np.ndarray | None = None,
) -> list[dict]:
    """Per annotator: labels given, agreement with the resolved label and with co-annotators.

    ``resolved`` holds each pair's final label (1, 0, or -1 when unresolved). Agreement with
    co-annotators is over the other labels on the same pairs (each pair of labels once per
    side), so it is not inflated by the annotator's own label.
    """
    pair_index = np.asarray(pair_index, dtype=np.int64)
    annotator_index = np.asarray(annotator_index, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    counts = value_counts(pair_index, labels, len(resolved))
    own_pair_counts = counts[pair_index]
    same = own_pair_counts[np.arange(len(labels)), labels] - 1
    other = own_pair_counts.sum(axis=1) - 1
    final = np.asarray(resolved, dtype=np.int64)[pair_index]
    rows = []
    for a, name in enumerate(annotators):
        mine = annotator_index == a
        n = int(mine.sum())
        if n == 0:
            rows.append({"annotator": name, "labels": 0})
            continue
        judged = mine & (final >= 0)
        co = other[mine].sum()
        row = {
            "annotator": name,
            "labels": n,
            "relevant_share": float(labels[mine].mean()),
            "agreement_with_resolved": float((labels[judged] == final[judged]).mean())
            if judged.any()
            else None,
            "agreement_with_coannotators": float(same[mine].sum() / co) if co else None,
        }
        if seconds is not None:
            mine_seconds = np.asarray(seconds, dtype=np.float64)[mine]
            mine_seconds = mine_seconds[np.isfinite(mine_seconds)]
            row["median_seconds"] = float(np.median(mine_seconds)) if mine_seconds.size else None
        rows.append(row)
    return rows


def report(
    pair_index: np.ndarray,
    annotator_index: np.ndarray,
    labels: np.ndarray,
    n_pairs: int,
    annotators: Sequence[str],
    *,
    resolved: np.ndarray | None = None,
    seconds: np.ndarray | None = None,
    resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """The whole agreement report of FIRE §3.2 as plain data (JSON-ready)."""
    counts = value_counts(pair_index, labels, n_pairs)
    totals = counts.sum(axis=1)
    labelled = int((totals > 0).sum())
    if resolved is None:
        majority = np.where(
            counts[:, 1] * 2 > totals, 1, np.where(counts[:, 0] * 2 > totals, 0, -1)
        )
        resolved = np.where(totals > 0, majority, -1)
    result: dict = {
        "pairs": labelled,
        "labels": int(totals.sum()),
        "labels_per_pair": float(totals.sum() / labelled) if labelled else 0.0,
        "resolved_share": float((resolved[totals > 0] >= 0).mean()) if labelled else 0.0,
        "multiply_labelled_pairs": int((totals >= 2).sum()),
        "by_label_count": by_label_count(counts),
        "annotators": per_annotator(
            pair_index, annotator_index, labels, resolved, annotators, seconds
        ),
    }
    for name, compute in (
        ("percent_agreement", percent_agreement),
        ("krippendorff_alpha", krippendorff_alpha),
    ):
        try:
            result[name] = compute(counts)
        except AgreementError as exc:
            result[name] = None
            result.setdefault("notes", []).append(str(exc))
    try:
        intervals = bootstrap_intervals(counts, resamples=resamples, seed=seed)
        result["intervals"] = {k: [v.low, v.high] for k, v in intervals.items()}
    except AgreementError:
        result["intervals"] = {}
    return result
