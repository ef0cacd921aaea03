"""Agreement between annotators on binary relevance labels (FIRE §3.2, Table 2, Fig. 7),
from per-pair value counts (pairs x 2) of plain label arrays, never a dense annotators x
pairs matrix; a bootstrap resample is one multinomial draw over the distinct count patterns.
"""

from collections.abc import Sequence

import krippendorff
import numpy as np

from config.errors import UserError
from retrieval.ids import PairKeys
from retrieval.label_sets.status import majority
from retrieval.scoring.intervals import Interval, percentile_interval


class AgreementError(UserError):
    """The labels cannot support the figure asked for (say why, never crash)."""


NO_VARIATION = "every label has the same value, so alpha is undefined (no variation to agree on)"


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


def multiply_labelled(counts: np.ndarray, undefined: str | None = None) -> np.ndarray:
    """Rows of ``counts`` for pairs with two or more labels (the only ones agreement uses);
    with ``undefined``, none raises an :class:`AgreementError` saying so."""
    counts = np.asarray(counts, dtype=np.int64)
    multi = counts[counts.sum(axis=1) >= 2]
    if undefined is not None and len(multi) == 0:
        raise AgreementError(f"no pair has two or more labels, so {undefined}")
    return multi


def percent_agreement(counts: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray | float:
    """Share of multiply-labelled pairs whose labels all agree (FIRE §3.2 "Agreement"), one
    per resample with ``weights`` (resamples x multiply-labelled pairs)."""
    multi = multiply_labelled(counts, "agreement is undefined")
    unanimous = (multi.min(axis=1) == 0).astype(np.float64)
    if weights is None:
        return float(unanimous.mean())
    return (weights @ unanimous) / weights.sum(axis=1)


def alpha_from_counts(counts: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray | float:
    """Krippendorff's nominal alpha from binary value counts, optionally per bootstrap
    resample: ``1 - (n - 1) o_01 / (n_0 n_1)`` with ``o_01 = sum_u n_u0 n_u1 / (n_u - 1)``
    over pairs with ``n_u >= 2`` (Krippendorff 2011, nominal, two values)."""
    multi = multiply_labelled(counts, "alpha is undefined").astype(np.float64)
    n_u = multi.sum(axis=1)
    disagreement = multi[:, 0] * multi[:, 1] / (n_u - 1)
    weights_ = np.ones((1, len(multi))) if weights is None else np.asarray(weights, np.float64)
    o_01 = weights_ @ disagreement
    n_0 = weights_ @ multi[:, 0]
    n_1 = weights_ @ multi[:, 1]
    n = n_0 + n_1
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = np.where(n_0 * n_1 > 0, 1.0 - (n - 1.0) * o_01 / (n_0 * n_1), np.nan)
    if weights is None:
        if np.isnan(alpha[0]):
            raise AgreementError(NO_VARIATION)
        return float(alpha[0])
    return alpha


def krippendorff_alpha(counts: np.ndarray) -> float:
    """Nominal alpha computed by the ``krippendorff`` package from value counts."""
    multi = multiply_labelled(counts, "alpha is undefined")
    if (multi.sum(axis=0) > 0).sum() < 2:
        raise AgreementError(NO_VARIATION)
    return float(krippendorff.alpha(value_counts=multi, level_of_measurement="nominal"))


BOOTSTRAP_CHUNK = 1024
"""Resamples whose pattern multiplicities are held in memory at once (keeps memory flat)."""


def count_patterns(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``(n_irrelevant, n_relevant)`` rows of ``counts`` and how many pairs have each."""
    counts = np.asarray(counts, dtype=np.int64)
    if len(counts) == 0:
        return counts.reshape(0, 2), np.zeros(0, dtype=np.int64)
    # Pack each row into one integer so np.unique runs on a flat array (much faster than axis=0).
    keys = PairKeys.fit(int(counts[:, 0].max()) + 1, counts[:, 1])
    packed, frequency = np.unique(keys.pack(counts[:, 0], counts[:, 1]), return_counts=True)
    return np.stack(keys.unpack(packed), axis=1), frequency


def bootstrap_intervals(
    counts: np.ndarray, *, resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> dict[str, Interval]:
    """Percentile intervals of percent agreement and alpha, resampling multiply-labelled
    pairs as multinomial draws over their count patterns (FIRE §3.2); a figure no resample
    defines (alpha when every label agrees) is left out."""
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    multi = multiply_labelled(counts, "there is nothing to resample")
    patterns, frequency = count_patterns(multi)
    observed = frequency[None, :].astype(np.float64)
    rng = np.random.default_rng(seed)
    n = int(frequency.sum())
    agreement, alpha = [], []
    for start in range(0, resamples, BOOTSTRAP_CHUNK):
        # Multiplicities (resamples x patterns) of resampling all n pairs with replacement: a
        # multinomial(n, frequency / n) draw, the same bootstrap at a cost free of n.
        size = min(BOOTSTRAP_CHUNK, resamples - start)
        weights = rng.multinomial(n, frequency / n, size=size).astype(np.float64)
        agreement.append(percent_agreement(patterns, weights))
        alpha.append(alpha_from_counts(patterns, weights))
    result = {}
    for name, figure, values in (
        ("percent_agreement", percent_agreement, np.concatenate(agreement)),
        ("krippendorff_alpha", alpha_from_counts, np.concatenate(alpha)),
    ):
        finite = values[np.isfinite(values)]
        if finite.size:
            result[name] = percentile_interval(figure(patterns, observed)[0], finite, level)
    return result


def by_label_count(counts: np.ndarray) -> list[dict]:
    """Pairs and their agreement, grouped by how many labels each pair received (FIRE Fig. 7)."""
    counts = np.asarray(counts, dtype=np.int64)
    totals = counts.sum(axis=1)
    unanimous = counts.min(axis=1) == 0
    return [
        {
            "labels": k,
            "pairs": int((totals == k).sum()),
            "percent_agreement": float(unanimous[totals == k].mean()) if k >= 2 else None,
        }
        for k in np.unique(totals[totals >= 1]).tolist()
    ]


def per_annotator(
    pair_index: np.ndarray,
    annotator_index: np.ndarray,
    labels: np.ndarray,
    resolved: np.ndarray,
    annotators: Sequence[str],
    seconds: np.ndarray | None = None,
    *,
    counts: np.ndarray | None = None,
) -> list[dict]:
    """Per annotator: labels given, agreement with the resolved label (``resolved``: 1, 0, or
    -1 when unresolved) and with the other labels on the same pairs. ``counts`` may pass the
    value counts already computed; every sum is one ``np.bincount``."""
    pair_index = np.asarray(pair_index, dtype=np.int64)
    annotator_index = np.asarray(annotator_index, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    n_annotators = len(annotators)
    if counts is None:
        counts = value_counts(pair_index, labels, len(resolved))
    own_pair_counts = counts[pair_index]
    totals = own_pair_counts[:, 0] + own_pair_counts[:, 1]
    same = np.where(labels == 1, own_pair_counts[:, 1], own_pair_counts[:, 0]) - 1
    other = totals - 1
    final = np.asarray(resolved, dtype=np.int64)[pair_index]
    judged = final >= 0

    def per(weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(annotator_index, weights=weights, minlength=n_annotators)

    given = per()
    relevant = per(labels)
    judged_n = per(judged)
    agree_resolved = per(judged & (labels == final))
    same_n = per(same)
    co_n = per(other)
    medians = _median_seconds(annotator_index, seconds, n_annotators)

    rows = []
    for a, name in enumerate(annotators):
        n = int(given[a])
        if n == 0:
            rows.append({"annotator": name, "labels": 0})
            continue
        row = {
            "annotator": name,
            "labels": n,
            "relevant_share": float(relevant[a] / n),
            "agreement_with_resolved": (
                float(agree_resolved[a] / judged_n[a]) if judged_n[a] else None
            ),
            "agreement_with_coannotators": float(same_n[a] / co_n[a]) if co_n[a] else None,
        }
        if medians is not None:
            row["median_seconds"] = None if np.isnan(medians[a]) else float(medians[a])
        rows.append(row)
    return rows


def _median_seconds(
    annotator_index: np.ndarray, seconds: np.ndarray | None, n_annotators: int
) -> np.ndarray | None:
    """Median of each annotator's finite ``seconds`` (NaN when none), grouped by one stable
    integer sort (a lexsort of the floats too costs twice as much)."""
    if seconds is None:
        return None
    seconds = np.asarray(seconds, dtype=np.float64)
    finite = np.isfinite(seconds)
    who = annotator_index[finite]
    # A stable sort of 16-bit keys is a radix sort: several times faster than of int64.
    keys = who.astype(np.uint16) if n_annotators <= 1 << 16 else who
    grouped = seconds[finite][np.argsort(keys, kind="stable")]
    sizes = np.bincount(who, minlength=n_annotators)
    ends = np.cumsum(sizes)
    medians = np.full(n_annotators, np.nan)
    for a, (start, end) in enumerate(zip((ends - sizes).tolist(), ends.tolist(), strict=True)):
        if end > start:
            medians[a] = np.median(grouped[start:end])
    return medians


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
    """The whole agreement report of FIRE §3.2 as plain data (JSON-ready); ``resamples`` = 0
    leaves ``intervals`` empty."""
    counts = value_counts(pair_index, labels, n_pairs)
    totals = counts.sum(axis=1)
    labelled = int((totals > 0).sum())
    if resolved is None:
        resolved = majority(counts[:, 1], totals)
    resolved = np.asarray(resolved, dtype=np.int64)
    result: dict = {
        "pairs": labelled,
        "labels": int(totals.sum()),
        "labels_per_pair": float(totals.sum() / labelled) if labelled else 0.0,
        "resolved_share": float((resolved[totals > 0] >= 0).mean()) if labelled else 0.0,
        "multiply_labelled_pairs": int((totals >= 2).sum()),
        "by_label_count": by_label_count(counts),
        "annotators": per_annotator(
            pair_index, annotator_index, labels, resolved, annotators, seconds, counts=counts
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
    result["intervals"] = {}
    if resamples > 0:
        try:
            intervals = bootstrap_intervals(counts, resamples=resamples, seed=seed)
        except AgreementError:
            intervals = {}
        result["intervals"] = {k: [v.low, v.high] for k, v in intervals.items()}
    return result
