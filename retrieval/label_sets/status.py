"""Pure: the one vocabulary of where a judged caption-video pair stands, and the majority rule.

Integer codes (so campaigns resolve as arrays) with the names pages, files and the
database's choices show: relevant (1), irrelevant (0), disagreement (-1: no strict majority
once labelling stops; kept apart, never a positive) and pending (-2). Label sets store the
first three. Rodriguez et al. 2022 (FIRE), §3.1-3.2, Table 2.
"""

import enum

import numpy as np


class LabelStatus(enum.IntEnum):
    """Where a pair stands: a final label, a disagreement, or still pending."""

    PENDING = -2
    DISAGREEMENT = -1
    IRRELEVANT = 0
    RELEVANT = 1

    @property
    def label(self) -> str:
        """The name shown in pages, files and ``Pair.status``: ``"relevant"``, ..."""
        return self.name.lower()


RELEVANT, IRRELEVANT = LabelStatus.RELEVANT, LabelStatus.IRRELEVANT
DISAGREEMENT, PENDING = LabelStatus.DISAGREEMENT, LabelStatus.PENDING
FINAL = (RELEVANT, IRRELEVANT, DISAGREEMENT)
"""The statuses a label set may hold."""
LABELS = (RELEVANT, IRRELEVANT)
"""The labels a person gives: an annotator's judgement, an admin's adjudication, a gold answer."""
CODES = {status.label: int(status) for status in LabelStatus}
"""Code of each status name, for turning stored names into arrays in bulk."""
NAMES = {int(status): status.label for status in LabelStatus}
"""Name of each status code (the inverse of :data:`CODES`)."""
_OFFSET = -min(LabelStatus)
_NAMES = np.array([LabelStatus(code - _OFFSET).label for code in range(len(LabelStatus))])


def names(codes: np.ndarray) -> np.ndarray:
    """Status names of an array of codes (``"relevant"``, ``"pending"``, ...)."""
    return _NAMES[np.asarray(codes, dtype=np.int64) + _OFFSET]


def has_majority(relevant: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Whether one side holds more than half of a pair's labels (never for zero labels)."""
    relevant = np.asarray(relevant, dtype=np.int64)
    total = np.asarray(total, dtype=np.int64)
    return (2 * relevant > total) | (2 * (total - relevant) > total)


def majority(relevant: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Status codes (int8) by strict majority: RELEVANT, IRRELEVANT, or DISAGREEMENT for a
    tie (and for a pair with no labels), FIRE §3.1."""
    relevant = np.asarray(relevant, dtype=np.int64)
    return np.where(
        has_majority(relevant, total),
        np.where(2 * relevant > total, RELEVANT, IRRELEVANT),
        DISAGREEMENT,
    ).astype(np.int8)
