"""Pure: how far each annotator's labels can be trusted, and how sure each pair's label is.

Each annotator has a binary confusion (sensitivity, specificity; Dawid & Skene 1979 §2) and
a pair's posterior log-odds are its class prior's plus one log-likelihood ratio per label.
:func:`fit` is a MAP Dawid-Skene EM made safe while labels are few: Beta pseudo-answers on
every confusion; a pair's *first* label never informs its annotator's confusion (under the
adaptive policy later labels are asked for because of it, so first labels are a biased
sample), gold answers always do; and a class prior per stratum of pairs (``strata``).
"""

from dataclasses import dataclass

import numpy as np

PRIOR_ACCURACY = 0.8
"""The sensitivity and specificity an annotator is credited with before any evidence."""
PRIOR_STRENGTH = 10.0
"""Pseudo-answers per class behind :data:`PRIOR_ACCURACY`: at strength 4 a replay of a real
crowd was overconfident (its 0.95-confident labels 94% right), and empirical Bayes worse."""
CLASS_PRIOR = 0.5
CLASS_PRIOR_STRENGTH = 2.0
"""Pseudo-pairs behind each stratum's share of relevant pairs, at the whole pool's share."""
EPS = 1e-6


@dataclass(frozen=True)
class Confusion:
    """Per annotator: ``sensitivity``, ``specificity`` and ``evidence`` (answers that informed them)."""

    sensitivity: np.ndarray
    specificity: np.ndarray
    evidence: np.ndarray

    @classmethod
    def default(cls, n_annotators: int) -> "Confusion":
        """Everyone at the prior: what an annotator nobody has evidence on is credited with."""
        return cls(
            np.full(n_annotators, PRIOR_ACCURACY),
            np.full(n_annotators, PRIOR_ACCURACY),
            np.zeros(n_annotators),
        )

    def __len__(self) -> int:
        return len(self.sensitivity)


def log_ratios(sensitivity, specificity, labels) -> np.ndarray:
    """Each label's log-likelihood ratio for relevance, log P(label | relevant) / P(label |
    irrelevant), confusions clipped to [EPS, 1 - EPS]."""
    sens = np.clip(np.asarray(sensitivity, dtype=np.float64), EPS, 1 - EPS)
    spec = np.clip(np.asarray(specificity, dtype=np.float64), EPS, 1 - EPS)
    labels = np.asarray(labels)
    return np.where(labels == 1, np.log(sens / (1 - spec)), np.log((1 - sens) / spec))


def logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), EPS, 1 - EPS)
    return np.log(p / (1 - p))


def expit(x) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=np.float64)))


def posterior(prior, sensitivity, specificity, labels) -> float:
    """One pair's probability of relevance from its class ``prior`` and its labels, given
    the confusions of the annotators who gave them (arrays, one entry per label)."""
    evidence = float(log_ratios(sensitivity, specificity, labels).sum()) if len(labels) else 0.0
    return float(expit(logit(prior) + evidence))


def posteriors(
    prior_per_item: np.ndarray,
    item_index: np.ndarray,
    annotator_index: np.ndarray,
    labels: np.ndarray,
    confusion: Confusion,
) -> np.ndarray:
    """Every item's probability of relevance: :func:`posterior` for all items at once."""
    # One ratio per (annotator, answer), looked up per label: no logarithm per label.
    table = log_ratios(
        np.repeat(confusion.sensitivity, 2),
        np.repeat(confusion.specificity, 2),
        np.tile([0, 1], len(confusion)),
    )
    ratios = table[np.asarray(annotator_index, np.int64) * 2 + np.asarray(labels, np.int64)]
    evidence = np.bincount(item_index, weights=ratios, minlength=len(prior_per_item))
    return expit(logit(prior_per_item) + evidence)


@dataclass(frozen=True)
class Fit:
    """A fitted model: the confusions, each stratum's ``prior`` and each item's ``posterior``."""

    confusion: Confusion
    prior: np.ndarray
    posterior: np.ndarray
    iterations: int
    converged: bool


MAX_RUN_SETS = 6
"""Up to this many pooled runs, a stratum tells which runs retrieved the pair; beyond, how many."""


def pool_strata(ranks: np.ndarray) -> np.ndarray:
    """Each pooled pair's stratum for the class prior from its ranks (pairs x runs, 0 = not
    retrieved): which runs retrieved it and the best rank any gave it."""
    ranks = np.asarray(ranks, dtype=np.int64)
    if ranks.ndim != 2 or not ranks.size:
        return np.zeros(ranks.shape[0] if ranks.ndim else 0, dtype=np.int64)
    retrieved = ranks > 0
    depth = int(ranks.max(initial=1))
    best = np.where(retrieved, ranks, depth + 1).min(axis=1)
    best = np.minimum(best, depth) - 1
    if ranks.shape[1] <= MAX_RUN_SETS:
        group = (retrieved * (1 << np.arange(ranks.shape[1]))).sum(axis=1)
    else:
        group = retrieved.sum(axis=1)
    return group * depth + best


def first_labels(item_index: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Whether each label is its item's first by ``order`` (default: the labels' own order)."""
    order = np.arange(np.size(item_index)) if order is None else order
    return group_positions(item_index, order) == 0


def group_positions(item_index: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Each entry's place (0 first) among its item's entries, in ``keys`` order (ties: in the
    entries' own order)."""
    item_index = np.asarray(item_index, dtype=np.int64)
    order = np.lexsort((np.asarray(keys), item_index))
    sorted_items = item_index[order]
    starts = np.flatnonzero(np.r_[True, sorted_items[1:] != sorted_items[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, sorted_items.size]))
    position = np.empty(item_index.size, dtype=np.int64)
    position[order] = np.arange(item_index.size) - run_start
    return position


def fit(
    item_index: np.ndarray,
    annotator_index: np.ndarray,
    labels: np.ndarray,
    n_items: int,
    n_annotators: int,
    *,
    first: np.ndarray | None = None,
    known: np.ndarray | None = None,
    strata: np.ndarray | None = None,
    n_strata: int | None = None,
    start: np.ndarray | None = None,
    warm: tuple[Confusion, np.ndarray] | None = None,
    tol: float = 1e-4,
    max_iter: int = 200,
) -> Fit:
    """Fit confusions and class priors by EM (see the module docstring), and every item's
    posterior. ``known``: -1, 0 or 1 per item; ``start`` posteriors, or ``warm`` confusions
    and priors, to start from (a refit then takes a few iterations instead of dozens)."""
    item_index, annotator_index, labels = _label_arrays(
        item_index, annotator_index, labels, n_items, n_annotators
    )
    first = first_labels(item_index) if first is None else np.asarray(first, dtype=bool)
    known = np.full(n_items, -1, np.int64) if known is None else np.asarray(known, np.int64)
    if known.shape != (n_items,) or not np.isin(known, (-1, 0, 1)).all():
        raise ValueError("known must hold -1, 0 or 1 per item")
    strata = np.zeros(n_items, np.int64) if strata is None else np.asarray(strata, np.int64)
    if strata.shape != (n_items,) or (strata.size and strata.min() < 0):
        raise ValueError("strata must hold a non-negative int per item")
    n_strata = int(strata.max(initial=-1)) + 1 if n_strata is None else int(n_strata)
    clamped = known >= 0
    counts = np.bincount(item_index, minlength=n_items)
    relevant = np.bincount(item_index, weights=labels, minlength=n_items)
    labelled = (counts > 0) & ~clamped
    evidence = ~first | clamped[item_index]
    ev_items, ev_annotators, ev_labels = (
        item_index[evidence],
        annotator_index[evidence],
        labels[evidence],
    )
    if start is None and warm is not None and len(warm[0]) == n_annotators:
        earlier, earlier_prior = warm
        if len(earlier_prior) == n_strata:
            start = posteriors(earlier_prior[strata], item_index, annotator_index, labels, earlier)
    current = (relevant + 0.5) / (counts + 1.0) if start is None else np.asarray(start, float)
    current = np.where(clamped, known, current)
    c_alpha, c_beta = CLASS_PRIOR, 1.0 - CLASS_PRIOR  # Beta(1, 1) on the whole pool's share
    stratum_size = np.bincount(strata[labelled], minlength=n_strata).astype(np.float64)
    iterations, converged = 0, False
    while True:
        # M-step: confusions from the fair evidence, priors from the labelled pairs.
        confusion = _confusions(current[ev_items], ev_annotators, ev_labels, n_annotators)
        share = np.bincount(strata[labelled], weights=current[labelled], minlength=n_strata)
        # Each stratum's share is pulled toward the whole pool's (a small one says little).
        pooled = (share.sum() + c_alpha) / (stratum_size.sum() + c_alpha + c_beta)
        prior = (share + CLASS_PRIOR_STRENGTH * pooled) / (stratum_size + CLASS_PRIOR_STRENGTH)
        if converged or iterations >= max_iter:
            break
        # E-step.
        updated = posteriors(prior[strata], item_index, annotator_index, labels, confusion)
        updated = np.where(clamped, known, updated)
        change = float(np.abs(updated - current).max(initial=0.0))
        current = updated
        iterations += 1
        converged = change <= tol
    final = posteriors(prior[strata], item_index, annotator_index, labels, confusion)
    return Fit(confusion, prior, np.where(clamped, known, final), iterations, converged)


def _label_arrays(
    item_index, annotator_index, labels, n_items: int, n_annotators: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The labels as int64 arrays of one length, checked (ValueError names what is wrong)."""
    item_index = np.asarray(item_index, dtype=np.int64)
    annotator_index = np.asarray(annotator_index, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    if not (item_index.shape == annotator_index.shape == labels.shape):
        raise ValueError("item_index, annotator_index and labels must have the same length")
    if item_index.size and (item_index.min() < 0 or item_index.max() >= n_items):
        raise ValueError("item_index must lie in 0..n_items - 1")
    if annotator_index.size and (
        annotator_index.min() < 0 or annotator_index.max() >= n_annotators
    ):
        raise ValueError("annotator_index must lie in 0..n_annotators - 1")
    if not np.isin(labels, (0, 1)).all():
        raise ValueError("labels must be 0 or 1")
    return item_index, annotator_index, labels


def _confusions(
    p: np.ndarray, annotators: np.ndarray, labels: np.ndarray, n_annotators: int
) -> Confusion:
    """Each annotator's sensitivity and specificity from labels on items that are relevant
    with probability ``p``, under the Beta prior of :data:`PRIOR_ACCURACY`."""
    alpha = PRIOR_STRENGTH * PRIOR_ACCURACY
    beta = PRIOR_STRENGTH * (1.0 - PRIOR_ACCURACY)
    said_relevant = labels == 1
    true_pos = np.bincount(annotators, weights=p * said_relevant, minlength=n_annotators)
    positives = np.bincount(annotators, weights=p, minlength=n_annotators)
    true_neg = np.bincount(annotators, weights=(1 - p) * ~said_relevant, minlength=n_annotators)
    negatives = np.bincount(annotators, weights=1 - p, minlength=n_annotators)
    return Confusion(
        (true_pos + alpha) / (positives + alpha + beta),
        (true_neg + alpha) / (negatives + alpha + beta),
        np.bincount(annotators, minlength=n_annotators).astype(np.float64),
    )
