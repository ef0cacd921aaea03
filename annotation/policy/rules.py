"""How many labels a pair needs and how its labels resolve, under either labelling policy.

``fire`` (FIRE §3.1): one label per pair, a second for a seeded 10% sample, more while they
disagree, up to a cap. ``adaptive``: one label, then more while the posterior of the pair's
resolved label (:mod:`annotation.policy.confusion`) is below a confidence target, up to a
cap: the dynamic overlap of crowd platforms (Yang et al., SIGIR 2010, reach full-overlap
quality at about 1.4 labels per item). Escalations (FIRE §3.2) are not labels; a pair tied
at the cap is a disagreement for an admin (FIRE Table 2).
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
    """How many pairs get a second label: ``rate x n_pairs`` rounded half up (FIRE §3.1),
    after rounding to 9 decimals (0.29 x 50 is 14.5, not 14.4999...)."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError("rate must be between 0 and 1")
    if n_pairs < 0:
        raise ValueError("n_pairs must be non-negative")
    return min(n_pairs, math.floor(round(rate * n_pairs, 9) + 0.5))


def second_label_sample(
    n_pairs: int, rate: float = DEFAULT_SECOND_LABEL_RATE, seed: int = 0
) -> np.ndarray:
    """Mask of the :func:`second_label_count` pairs that get a second label (FIRE §3.1), the
    first of a permutation seeded by ``seed``."""
    chosen = np.zeros(n_pairs, dtype=bool)
    count = second_label_count(n_pairs, rate)
    chosen[np.random.default_rng(seed).permutation(n_pairs)[:count]] = True
    return chosen


def labels_needed(
    relevant: np.ndarray, total: np.ndarray, double: np.ndarray, cap: int = DEFAULT_CAP
) -> np.ndarray:
    """How many more labels each pair needs now (FIRE §3.1): one, two if ``double``, and one
    more while two or more are tied and ``total < cap``."""
    relevant, total, double = np.broadcast_arrays(
        np.asarray(relevant, dtype=np.int64),
        np.asarray(total, dtype=np.int64),
        np.asarray(double, dtype=bool),
    )
    if (relevant < 0).any() or (relevant > total).any():
        raise ValueError("need 0 <= relevant <= total for every pair")
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
    FIRE §3.1: pending while more labels are needed, then the strict majority (or
    disagreement); an ``adjudicated`` 0/1 (-1: none) always wins."""
    return fire_state(relevant, total, double, cap, adjudicated)[1]


def fire_state(
    relevant: np.ndarray,
    total: np.ndarray,
    double: np.ndarray | bool = False,
    cap: int = DEFAULT_CAP,
    adjudicated: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(labels still needed, status code) of each pair under FIRE §3.1 from one count:
    :func:`labels_needed` and :func:`resolve` together, as a label's writer needs both."""
    relevant = np.asarray(relevant, dtype=np.int64)
    total = np.asarray(total, dtype=np.int64)
    needed = labels_needed(relevant, total, double, cap)
    status = np.where(needed > 0, LabelStatus.PENDING, majority(relevant, total))
    return needed, _with_adjudication(status, adjudicated)


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
    shown = (LabelStatus.IRRELEVANT, LabelStatus.RELEVANT, LabelStatus.DISAGREEMENT)
    for s in (*shown, LabelStatus.PENDING):
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


def certainty(posterior) -> np.ndarray:
    """The posterior probability of the label a pair resolves to: max(p, 1 - p)."""
    posterior = np.asarray(posterior, dtype=np.float64)
    return np.maximum(posterior, 1.0 - posterior)


IN_FULL_CONFIDENCE = 0.995
"""The confidence a pair of a query judged in full for an estimate is asked to (an active
stage's or an estimation sample's): that query's value enters the estimate as it is, so its
label noise is the interval's floor. At the campaign's 0.95 it kept the widest interval of
the demo world live at 1.5-1.9 points whatever more queries were drawn
(``bench/crowd_bench.py --only E``)."""


def adaptive_needed(total, posterior, confidence, cap: int) -> np.ndarray:
    """How many more labels each pair needs under the adaptive policy: one with none, then one
    while its :func:`certainty` is below ``confidence`` (one for all, or one per pair) and it
    has fewer than ``cap``."""
    total = np.asarray(total, dtype=np.int64)
    if cap < 1:
        raise ValueError("cap must be at least 1")
    unsure = certainty(posterior) < confidence
    return np.where(total == 0, 1, (unsure & (total < cap)).astype(np.int64))


def adaptive_resolve(total, posterior, adjudicated: np.ndarray | None = None) -> np.ndarray:
    """Status code of each pair under the adaptive policy (int8): pending with no label, else
    :func:`likelier`; an ``adjudicated`` 0/1 (-1: none) always wins."""
    total = np.asarray(total, dtype=np.int64)
    status = np.where(total > 0, likelier(posterior), LabelStatus.PENDING)
    return _with_adjudication(status, adjudicated)


def likelier(posterior) -> np.ndarray:
    """The status a posterior favours: relevant above one half, irrelevant below, a
    disagreement at exactly one half."""
    posterior = np.asarray(posterior, dtype=np.float64)
    return np.where(
        posterior > 0.5,
        LabelStatus.RELEVANT,
        np.where(posterior < 0.5, LabelStatus.IRRELEVANT, LabelStatus.DISAGREEMENT),
    )
