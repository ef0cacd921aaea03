"""Pure: how far each annotator can be trusted, and label aggregation beyond the majority.

Inputs are arrays with one row per label (item index, annotator index, label 1 or 0) and
known labels per item (-1, :data:`UNKNOWN`, off gold): Wilson intervals (Wilson 1927),
annotator scores, the pause rule, and the majority and Dawid-Skene (Dawid & Skene 1979)
aggregations behind one interface (:class:`Aggregation`).
"""

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from annotation.campaign_read import agreement
from annotation.campaigns.settings import DEFAULT_FLOOR_SECONDS
from annotation.policy import rules as policy
from retrieval.formats.labels import RawLabel
from retrieval.label_sets.status import LabelStatus
from retrieval.scoring.intervals import Interval

UNKNOWN = -1
"""Known-label value of an item whose true label is not known (not a gold pair)."""
Z_95 = 1.959963984540054
"""Standard normal quantile of a two-sided 95% interval."""
BREAK_SECONDS = 300.0
"""A gap between two judgements longer than this is a break, not work (5 minutes)."""
ROLLING_GOLD = 50
"""Gold pairs in the rolling gold accuracy window."""
MIN_GOLD = 10
"""Gold pairs an annotator must have judged before accuracy can pause them."""
FLOOR_SECONDS = DEFAULT_FLOOR_SECONDS
"""Median seconds per judgement below which an annotator is paused (not reading)."""
EPS = 1e-10
"""Floor of a confusion-matrix entry and of the class prior in Dawid-Skene (as crowd-kit)."""


def training_split(total: int) -> tuple[int, int]:
    """(relevant, irrelevant) pairs of a balanced qualification of ``total`` training pairs:
    with 7-30% relevant gold (FIRE §3.2) a random draw let "always irrelevant" pass."""
    return total // 2, total - total // 2


def wilson_interval(
    successes: np.ndarray | int, trials: np.ndarray | int, z: float = Z_95
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper Wilson score bounds of ``successes / trials``, elementwise (Wilson 1927;
    Agresti & Coull 1998, eq. 2); 0 and 1 with no trials."""
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    if (n < 0).any() or (k < 0).any() or (k > n).any():
        raise ValueError("need 0 <= successes <= trials")
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        z2n = z * z / n
        centre = (p + z2n / 2) / (1 + z2n)
        half = z / (1 + z2n) * np.sqrt(p * (1 - p) / n + z2n / (4 * n))
    empty = n == 0
    low = np.where(empty, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(empty, 1.0, np.clip(centre + half, 0.0, 1.0))
    return low, high


def should_pause(
    gold_correct: np.ndarray | int,
    gold_total: np.ndarray | int,
    median_seconds: np.ndarray | float,
    threshold: float,
    *,
    min_gold: int = MIN_GOLD,
    floor_seconds: float = FLOOR_SECONDS,
    z: float = Z_95,
) -> np.ndarray:
    """Whether each annotator is paused: after ``min_gold`` gold pairs the upper Wilson bound of
    their gold accuracy is below ``threshold``, or their median seconds per judgement is below
    ``floor_seconds`` (NaN: no pause)."""
    total = np.asarray(gold_total, dtype=np.int64)
    _, high = wilson_interval(gold_correct, total, z)
    inaccurate = (total >= min_gold) & (high < threshold)
    median = np.asarray(median_seconds, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        too_fast = median < floor_seconds
    return inaccurate | too_fast


@dataclass(frozen=True)
class AnnotatorScore:
    """How far one annotator can be trusted (None: nothing to base a figure on); the rolling
    accuracy is over the last :data:`ROLLING_GOLD` gold pairs after each, in time order."""

    annotator: str
    labels: int
    gold: int
    gold_correct: int
    gold_accuracy: Interval | None
    sensitivity: float | None
    specificity: float | None
    agreement_with_coannotators: float | None
    agreement_with_resolved: float | None
    labels_per_hour: float | None
    median_seconds: float | None
    recent_gold_accuracy: float | None
    rolling_gold_accuracy: tuple[float, ...]
    sensitivity_interval: Interval | None = None
    specificity_interval: Interval | None = None


def annotator_scores(
    item_index: np.ndarray,
    annotator_index: np.ndarray,
    labels: np.ndarray,
    annotators: Sequence[str],
    n_items: int,
    *,
    known: np.ndarray | None = None,
    resolved: np.ndarray | None = None,
    times: np.ndarray | None = None,
    seconds: np.ndarray | None = None,
    window: int = ROLLING_GOLD,
    z: float = Z_95,
) -> list[AnnotatorScore]:
    """One :class:`AnnotatorScore` per name in ``annotators``. ``resolved``: each item's final
    label (1, 0, -1; default the strict majority); ``times``: submission times in seconds
    (order each annotator's labels); ``seconds``: recorded time per label."""
    item_index, labels = _check_labels(item_index, labels, n_items)
    annotator_index = np.asarray(annotator_index, dtype=np.int64)
    n_annotators = len(annotators)
    if resolved is None:
        status = majority(item_index, labels, n_items).status
        resolved = np.select(
            [status == LabelStatus.RELEVANT, status == LabelStatus.IRRELEVANT], [1, 0], -1
        )
    order = _time_order(annotator_index, times)
    spent = judgement_seconds(annotator_index, times, seconds)
    rows = agreement.per_annotator(item_index, annotator_index, labels, resolved, annotators, spent)

    gold = np.full(n_items, UNKNOWN) if known is None else _check_known(known, n_items)
    truth = gold[item_index]
    on_gold = truth != UNKNOWN
    correct = labels == truth

    def per(mask: np.ndarray) -> np.ndarray:
        return np.bincount(annotator_index[mask], minlength=n_annotators)

    working = np.isfinite(spent)
    timed = per(working)
    work_hours = np.bincount(annotator_index[working], spent[working], n_annotators) / 3600
    gold_n, gold_right = per(on_gold), per(on_gold & correct)
    relevant_n, relevant_right = per(truth == 1), per((truth == 1) & correct)
    irrelevant_n, irrelevant_right = per(truth == 0), per((truth == 0) & correct)
    level = math.erf(z / math.sqrt(2))  # two-sided normal coverage of z

    def intervals(right: np.ndarray, n: np.ndarray) -> list[Interval | None]:
        lows, highs = wilson_interval(right, n, z)
        return [
            Interval(float(right[a] / n[a]), float(lows[a]), float(highs[a]), level)
            if n[a]
            else None
            for a in range(n_annotators)
        ]

    accuracy = intervals(gold_right, gold_n)
    sensitivity = intervals(relevant_right, relevant_n)
    specificity = intervals(irrelevant_right, irrelevant_n)
    gold_order = order[on_gold[order]]
    rolling = np.split(
        _rolling_share(annotator_index[gold_order], correct[gold_order], window),
        np.cumsum(gold_n)[:-1],
    )

    return [
        AnnotatorScore(
            annotator=name,
            labels=int(rows[a]["labels"]),
            gold=int(gold_n[a]),
            gold_correct=int(gold_right[a]),
            gold_accuracy=accuracy[a],
            sensitivity=sensitivity[a] and sensitivity[a].estimate,
            specificity=specificity[a] and specificity[a].estimate,
            agreement_with_coannotators=rows[a].get("agreement_with_coannotators"),
            agreement_with_resolved=rows[a].get("agreement_with_resolved"),
            labels_per_hour=float(timed[a] / work_hours[a]) if work_hours[a] else None,
            median_seconds=rows[a].get("median_seconds"),
            recent_gold_accuracy=float(rolling[a][-1]) if rolling[a].size else None,
            rolling_gold_accuracy=tuple(rolling[a].tolist()),
            sensitivity_interval=sensitivity[a],
            specificity_interval=specificity[a],
        )
        for a, name in enumerate(annotators)
    ]


def judgement_seconds(
    annotator_index: np.ndarray,
    times: np.ndarray | None = None,
    seconds: np.ndarray | None = None,
) -> np.ndarray:
    """Working seconds behind each label: the recorded ``seconds``, else the gap since the
    annotator's previous submission; NaN where unknown or a break (over :data:`BREAK_SECONDS`)."""
    annotator_index = np.asarray(annotator_index, dtype=np.int64)
    spent = np.full(annotator_index.shape, np.nan)
    if times is not None:
        times = np.asarray(times, dtype=np.float64)
        order = _time_order(annotator_index, times)
        gaps = np.diff(times[order], prepend=np.nan)
        first = np.ones(order.shape, dtype=bool)
        first[1:] = annotator_index[order][1:] != annotator_index[order][:-1]
        spent[order] = np.where(first, np.nan, gaps)
    if seconds is not None:
        seconds = np.asarray(seconds, dtype=np.float64)
        spent = np.where(np.isfinite(seconds), seconds, spent)
    with np.errstate(invalid="ignore"):
        return np.where(spent <= BREAK_SECONDS, spent, np.nan)


def _time_order(annotator_index: np.ndarray, times: np.ndarray | None) -> np.ndarray:
    """Label positions grouped by annotator, each annotator's in time (else input) order."""
    if times is None:
        return np.argsort(annotator_index, kind="stable")
    return np.lexsort((np.asarray(times, dtype=np.float64), annotator_index))


def _rolling_share(group: np.ndarray, hits: np.ndarray, window: int) -> np.ndarray:
    """Share of hits over the last ``window`` entries of each (sorted) group, at every entry."""
    if window < 1:
        raise ValueError("window must be at least 1")
    n = len(group)
    cumulative = np.concatenate([[0], np.cumsum(hits, dtype=np.int64)])
    position = np.arange(n)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if n else position
    start = starts[np.searchsorted(starts, position, side="right") - 1] if n else position
    size = np.minimum(position - start + 1, window)
    return (cumulative[position + 1] - cumulative[position + 1 - size]) / size


@dataclass(frozen=True)
class Aggregation:
    """Per item: ``status`` (:class:`~retrieval.label_sets.status.LabelStatus` codes, int8) and
    ``confidence``, the probability of relevance (NaN for an item nobody labelled)."""

    method: str
    status: np.ndarray
    confidence: np.ndarray


@dataclass(frozen=True)
class DawidSkeneFit(Aggregation):
    """A Dawid-Skene aggregation with ``confusion[a, t, o]`` (annotator ``a`` answers ``o`` when
    the truth is ``t``) and ``prior`` (the share of relevant items)."""

    confusion: np.ndarray
    prior: float
    iterations: int
    converged: bool


MAJORITY = "majority"
DAWID_SKENE = "dawid-skene"
METHODS = (MAJORITY, DAWID_SKENE)


def majority(
    item_index: np.ndarray,
    labels: np.ndarray,
    n_items: int,
    known: np.ndarray | None = None,
) -> Aggregation:
    """Strict majority of each item's labels (FIRE §3.1); a known item takes its known label."""
    item_index, labels = _check_labels(item_index, labels, n_items)
    counts = agreement.value_counts(item_index, labels, n_items)
    adjudicated = None if known is None else _check_known(known, n_items)
    status = policy.resolve(counts[:, 1], counts.sum(axis=1), cap=1, adjudicated=adjudicated)
    confidence = np.select(
        [status == LabelStatus.RELEVANT, status == LabelStatus.IRRELEVANT],
        [1.0, 0.0],
        default=np.where(status == LabelStatus.DISAGREEMENT, 0.5, np.nan),
    )
    return Aggregation(MAJORITY, status, confidence)


def dawid_skene(
    item_index: np.ndarray,
    annotator_index: np.ndarray,
    labels: np.ndarray,
    n_items: int,
    n_annotators: int | None = None,
    known: np.ndarray | None = None,
    *,
    tol: float = 1e-6,
    max_iter: int = 1000,
) -> DawidSkeneFit:
    """Posterior probability of relevance per item under the Dawid & Skene (1979) model, by EM
    from each item's share of relevant labels (§4), entries floored at :data:`EPS` as
    crowd-kit; ``known`` items are clamped. Stops when no posterior moves over ``tol``."""
    item_index, labels = _check_labels(item_index, labels, n_items)
    annotator_index = np.asarray(annotator_index, dtype=np.int64)
    if annotator_index.shape != labels.shape:
        raise ValueError("annotator_index and labels must have the same length")
    if n_annotators is None:
        n_annotators = int(annotator_index.max()) + 1 if annotator_index.size else 0
    if annotator_index.size and (
        annotator_index.min() < 0 or annotator_index.max() >= n_annotators
    ):
        raise ValueError("annotator_index must lie in 0..n_annotators - 1")
    gold = np.full(n_items, UNKNOWN) if known is None else _check_known(known, n_items)
    clamped = gold != UNKNOWN
    counts = agreement.value_counts(item_index, labels, n_items)
    totals = counts.sum(axis=1)
    labelled = totals > 0

    def clamp(posterior: np.ndarray) -> np.ndarray:
        return np.where(clamped, gold, posterior)

    with np.errstate(invalid="ignore"):
        posterior = clamp(counts[:, 1] / totals)
    cell = annotator_index * 2 + labels  # (annotator, answer) of each label
    iterations, converged = 0, False
    prior, confusion = _m_step(posterior, labelled, item_index, cell, n_annotators)
    if not labelled.any():
        converged = True
    while not converged and iterations < max_iter:
        iterations += 1
        updated = clamp(_e_step(prior, confusion, item_index, annotator_index, labels, n_items))
        change = np.abs(updated - posterior)[labelled].max()
        posterior = updated
        prior, confusion = _m_step(posterior, labelled, item_index, cell, n_annotators)
        converged = bool(change <= tol)
    posterior = np.where(labelled, posterior, np.where(clamped, gold, np.nan)).astype(np.float64)
    status = np.where(labelled | clamped, policy.likelier(posterior), LabelStatus.PENDING)
    status = status.astype(np.int8)
    return DawidSkeneFit(DAWID_SKENE, status, posterior, confusion, prior, iterations, converged)


def aggregate(
    method: str,
    item_index: np.ndarray,
    annotator_index: np.ndarray,
    labels: np.ndarray,
    n_items: int,
    known: np.ndarray | None = None,
) -> Aggregation:
    """The aggregation named by ``method`` (one of :data:`METHODS`)."""
    if method == MAJORITY:
        return majority(item_index, labels, n_items, known)
    if method == DAWID_SKENE:
        return dawid_skene(item_index, annotator_index, labels, n_items, known=known)
    raise ValueError(f"unknown aggregation method {method!r} (choose from {', '.join(METHODS)})")


@dataclass(frozen=True)
class ResolvedPairs:
    """Raw labels resolved per (caption key, video key), in order of first appearance."""

    pairs: tuple[tuple[str, str], ...]
    labels: np.ndarray
    aggregation: Aggregation


def resolve_raw(records: Iterable[RawLabel], method: str) -> ResolvedPairs:
    """Resolve raw labels (one annotator's label per record) into one label per pair."""
    pairs, _, items, annotator_index, labels = index_raw(records)
    result = aggregate(method, items, annotator_index, labels, len(pairs))
    return ResolvedPairs(tuple(pairs), np.bincount(items, minlength=len(pairs)), result)


def index_raw(records: Iterable[RawLabel]) -> tuple[dict, dict, np.ndarray, np.ndarray, np.ndarray]:
    """Raw labels as (pair -> item, annotator name -> index, item, annotator and label arrays),
    pairs and names numbered in order of first appearance."""
    pairs: dict[tuple[str, str], int] = {}
    names: dict[str, int] = {}
    item_index, annotator_index, labels = [], [], []
    for record in records:
        item_index.append(pairs.setdefault((record.caption_key, record.video_key), len(pairs)))
        annotator_index.append(names.setdefault(record.annotator, len(names)))
        labels.append(record.label)
    arrays = (np.array(column, dtype=np.int64) for column in (item_index, annotator_index, labels))
    return pairs, names, *arrays


def _m_step(
    posterior: np.ndarray,
    labelled: np.ndarray,
    item_index: np.ndarray,
    cell: np.ndarray,
    n_annotators: int,
) -> tuple[float, np.ndarray]:
    """Class prior and confusions (annotators x true x answer) from the items' posteriors."""
    prior = float(np.clip(posterior[labelled].mean(), EPS, 1.0)) if labelled.any() else 0.5
    p_relevant = posterior[item_index]
    size = 2 * n_annotators
    answered = np.stack(
        [
            np.bincount(cell, weights=1.0 - p_relevant, minlength=size),
            np.bincount(cell, weights=p_relevant, minlength=size),
        ]
    )  # (true, annotator x answer)
    # Only answers the annotator gave have entries (as in crowd-kit).
    given = np.bincount(cell, minlength=size).reshape(n_annotators, 2)[:, None, :] > 0
    confusion = np.where(
        given, np.maximum(answered.reshape(2, n_annotators, 2).transpose(1, 0, 2), EPS), 0.0
    )
    total = confusion.sum(axis=2, keepdims=True)
    return prior, np.divide(confusion, total, out=np.full_like(confusion, 0.5), where=total > 0)


def _e_step(
    prior: float,
    confusion: np.ndarray,
    item_index: np.ndarray,
    annotator_index: np.ndarray,
    labels: np.ndarray,
    n_items: int,
) -> np.ndarray:
    """Posterior probability of relevance per item, in log space (products of many labels)."""
    log_answer = np.log(confusion[annotator_index, :, labels])  # (labels, true)
    log_irrelevant = np.log(max(1.0 - prior, EPS)) + np.bincount(
        item_index, weights=log_answer[:, 0], minlength=n_items
    )
    log_relevant = np.log(prior) + np.bincount(
        item_index, weights=log_answer[:, 1], minlength=n_items
    )
    return expit(log_relevant - log_irrelevant)


def _check_labels(
    item_index: np.ndarray, labels: np.ndarray, n_items: int
) -> tuple[np.ndarray, np.ndarray]:
    item_index = np.asarray(item_index, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    if item_index.shape != labels.shape:
        raise ValueError("item_index and labels must have the same length")
    if item_index.size and (item_index.min() < 0 or item_index.max() >= n_items):
        raise ValueError("item_index must lie in 0..n_items - 1")
    return item_index, labels


def _check_known(known: np.ndarray, n_items: int) -> np.ndarray:
    known = np.asarray(known, dtype=np.int64)
    if known.shape != (n_items,):
        raise ValueError("known must have one value per item")
    if not np.isin(known, (UNKNOWN, 0, 1)).all():
        raise ValueError("known values must be -1 (unknown), 0 or 1")
    return known
