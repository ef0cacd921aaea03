"""How many labels a pair needs and how its labels resolve, under either labelling policy.

``fire``: the labelling policy of FIRE §3.1: one label per pair, a second for a seeded 10%
sample, and further labels while two or more disagree, up to a cap (FIRE's "third label to
resolve").

``adaptive``: one label per pair, then another (from a different annotator) while the
posterior probability of the pair's resolved label is below a confidence target, up to a
cap; the posterior weighs each label by its annotator's estimated confusion
(:mod:`annotation.policy.confusion`), so a careful annotator's single label can settle a pair and
a spammer's never does. This is the dynamic overlap of crowd platforms (re-label only what
is still uncertain; Yang et al., SIGIR 2010, reach full-overlap quality at about 1.4
labels per item this way).

A label is a binary relevance judgement. An escalation ("too ambiguous to judge", FIRE §3.2)
is not a label and is never counted here. Per pair the vectorised functions see ``relevant``
(labels saying relevant) and ``total`` (all labels); a pair still tied once the cap is reached
is a disagreement for an admin to adjudicate (FIRE Table 2's "Disagreement" row).
"""

import math
from collections.abc import Iterable

import numpy as np

from retrieval.label_sets.status import LabelStatus, has_majority, majority

DEFAULT_SECOND_LABEL_RATE = 0.1
DEFAULT_CAP = 3
NOT_ADJUDICATED = -1

FIRE = "fire"
ADAPTIVE = "adaptive"
POLICIES = (FIRE, ADAPTIVE)
DEFAULT_CONFIDENCE = 0.95
"""The adaptive policy's target: the posterior probability of a pair's resolved label."""
CONFIDENCE_RANGE = (0.5, 0.9999)
DEFAULT_ADAPTIVE_CAP = 5
"""The adaptive policy's default cap on labels per pair."""


def second_label_count(n_pairs: int, rate: float) -> int:
    """How many pairs get a second label: ``rate x n_pairs`` rounded half up (FIRE §3.1).

    The product is first rounded to 9 decimals so that, say, 0.29 x 50 counts as 14.5
    (giving 15) rather than the float 14.4999...
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError("rate must be between 0 and 1")
    if n_pairs < 0:
        raise ValueError("n_pairs must be non-negative")
    return min(n_pairs, math.floor(round(rate * n_pairs, 9) + 0.5))


def second_label_sample(
    n_pairs: int, rate: float = DEFAULT_SECOND_LABEL_RATE, seed: int = 0
) -> np.ndarray:
    """Mask of the pairs that get a second label (FIRE §3.1: 10% of annotations).

    Exactly :func:`second_label_count` pairs, the first ones of a permutation seeded by ``seed``.
    """
    chosen = np.zeros(n_pairs, dtype=bool)
    count = second_label_count(n_pairs, rate)
    chosen[np.random.default_rng(seed).permutation(n_pairs)[:count]] = True
    return chosen


def labels_needed(
    relevant: np.ndarray, total: np.ndarray, double: np.ndarray, cap: int = DEFAULT_CAP
) -> np.ndarray:
    """How many more labels each pair needs now (FIRE §3.1), as int64.

    A pair needs one label, two if ``double``; once it has at least two labels and they are
    tied (no strict majority), it needs one more while ``total < cap``. Otherwise it is done.
    """
    relevant, total, double = np.broadcast_arrays(
        np.asarray(relevant, dtype=np.int64),
        np.asarray(total, dtype=np.int64),
        np.asarray(double, dtype=bool),
    )
    _check_counts(relevant, total)
    if cap < 1:
        raise ValueError("cap must be at least 1")
    target = np.where(double, 2, 1)
    tied = (total >= 2) & ~has_majority(relevant, total) & (total < cap)
    return np.where(total < target, target - total, tied.astype(np.int64))


def resolve(
    relevant: np.ndarray,
    total: np.ndarray,
    double: np.ndarray | bool = False,
    cap: int = DEFAULT_CAP,
    adjudicated: np.ndarray | None = None,
) -> np.ndarray:
    """Status code (:class:`~retrieval.label_sets.status.LabelStatus`, int8) of each pair under
    the FIRE §3.1 policy.

    Pending while :func:`labels_needed` asks for more; then the strict majority, or
    disagreement when there is none. An ``adjudicated`` 0/1 (-1: not adjudicated) always wins.
    """
    relevant = np.asarray(relevant, dtype=np.int64)
    total = np.asarray(total, dtype=np.int64)
    status = majority(relevant, total)
    status = np.where(labels_needed(relevant, total, double, cap) > 0, LabelStatus.PENDING, status)
    return _with_adjudication(status, adjudicated)


def _with_adjudication(status: np.ndarray, adjudicated: np.ndarray | None) -> np.ndarray:
    """Status codes (int8) with an ``adjudicated`` 0/1 (-1: not adjudicated) winning."""
    if adjudicated is not None:
        adjudicated = np.asarray(adjudicated, dtype=np.int64)
        if not np.isin(adjudicated, (NOT_ADJUDICATED, 0, 1)).all():
            raise ValueError("adjudicated values must be -1, 0 or 1")
        status = np.where(adjudicated != NOT_ADJUDICATED, adjudicated, status)
    return np.asarray(status).astype(np.int8)


def summary(status: np.ndarray) -> dict[str, int | float]:
    """Pair counts per status and the share of complete pairs resolved to a label (FIRE Table 2)."""
    status = np.asarray(status, dtype=np.int64)
    result: dict[str, int | float] = {"pairs": len(status)}
    for s in (
        LabelStatus.IRRELEVANT,
        LabelStatus.RELEVANT,
        LabelStatus.DISAGREEMENT,
        LabelStatus.PENDING,
    ):
        result[s.label] = int((status == s).sum())
    complete = result["pairs"] - result["pending"]
    resolved = result["relevant"] + result["irrelevant"]
    result["resolved_share"] = resolved / complete if complete else 0.0
    return result


def tally(labels: Iterable[bool | None]) -> tuple[int, int]:
    """``(relevant, total)`` of one pair's labels; escalations (None) are not labels."""
    votes = [bool(label) for label in labels if label is not None]
    return sum(votes), len(votes)


def needed_for(labels: Iterable[bool | None], double: bool = False, cap: int = DEFAULT_CAP) -> int:
    """How many more labels one pair needs: :func:`labels_needed` for a single pair."""
    relevant, total = tally(labels)
    return int(labels_needed(np.array([relevant]), np.array([total]), np.array([double]), cap)[0])


def _check_counts(relevant: np.ndarray, total: np.ndarray) -> None:
    if (relevant < 0).any() or (relevant > total).any():
        raise ValueError("need 0 <= relevant <= total for every pair")


# The adaptive policy.


def certainty(posterior) -> np.ndarray:
    """The posterior probability of the label a pair resolves to: max(p, 1 - p)."""
    posterior = np.asarray(posterior, dtype=np.float64)
    return np.maximum(posterior, 1.0 - posterior)


def adaptive_needed(total, posterior, confidence: float, cap: int) -> np.ndarray:
    """How many more labels each pair needs under the adaptive policy, as int64: one while
    it has none; then one while :func:`certainty` of its ``posterior`` is below
    ``confidence`` and it has fewer than ``cap`` labels; else none."""
    total = np.asarray(total, dtype=np.int64)
    if cap < 1:
        raise ValueError("cap must be at least 1")
    unsure = certainty(posterior) < confidence
    return np.where(total == 0, 1, (unsure & (total < cap)).astype(np.int64))


def adaptive_resolve(total, posterior, adjudicated: np.ndarray | None = None) -> np.ndarray:
    """Status code of each pair under the adaptive policy (int8): pending with no label,
    else the label its posterior favours (a disagreement at exactly one half); an
    ``adjudicated`` 0/1 (-1: none) always wins. A pair still below the confidence target
    keeps its likelier label: how sure it is travels with it as its posterior."""
    total = np.asarray(total, dtype=np.int64)
    posterior = np.asarray(posterior, dtype=np.float64)
    status = np.where(
        posterior > 0.5,
        LabelStatus.RELEVANT,
        np.where(posterior < 0.5, LabelStatus.IRRELEVANT, LabelStatus.DISAGREEMENT),
    )
    status = np.where(total > 0, status, LabelStatus.PENDING)
    return _with_adjudication(status, adjudicated)
