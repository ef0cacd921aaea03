"""Pure: replay a labelling policy on a crowd whose every label is already known.

Each pair's labels are taken one at a time, in a seeded order, only while the policy asks for
another (rounds of :func:`annotation.simulation.model.judge`; the adaptive model refitted by
:func:`annotation.policy.confusion.fit` after each), so cost and accuracy can be measured
offline on any crowd.
"""

from dataclasses import dataclass

import numpy as np

from annotation.policy import confusion
from annotation.policy import rules as policy
from annotation.simulation.model import Outcome, Rules, Tally, judge


@dataclass(frozen=True)
class RecordedCrowd:
    """Every available label (item, annotator, label 1 or 0); ``strata`` optionally groups the
    items for the class prior."""

    item_index: np.ndarray
    annotator_index: np.ndarray
    labels: np.ndarray
    n_items: int
    n_annotators: int
    strata: np.ndarray | None = None

    def __post_init__(self) -> None:
        shapes = {self.item_index.shape, self.annotator_index.shape, self.labels.shape}
        if len(shapes) != 1:
            raise ValueError("item_index, annotator_index and labels must have the same length")
        if not np.isin(self.labels, (0, 1)).all():
            raise ValueError("labels must be 0 or 1")


class _Recorded:
    """The recorded crowd as a label source: each pair's labels in ``seed``'s order."""

    def __init__(self, crowd: RecordedCrowd, seed: int) -> None:
        self.crowd = crowd
        self.position = label_positions(crowd.item_index, seed)
        self.available = np.bincount(crowd.item_index, minlength=crowd.n_items)
        self.taken = np.zeros(crowd.item_index.size, dtype=bool)

    def left(self, tally: Tally) -> np.ndarray:
        return self.available > tally.total

    def give(self, tasks: np.ndarray, tally: Tally) -> None:
        wanted = np.zeros(self.crowd.n_items, bool)
        wanted[tasks] = True
        items = self.crowd.item_index
        step = wanted[items] & (self.position == tally.total[items])
        self.taken |= step
        tally.add(items[step], self.crowd.annotator_index[step], self.crowd.labels[step])

    def fit(self, tally: Tally) -> np.ndarray:
        crowd, mask = self.crowd, self.taken
        return confusion.fit(
            crowd.item_index[mask], crowd.annotator_index[mask], crowd.labels[mask],
            crowd.n_items, crowd.n_annotators, first=self.position[mask] == 0,
            strata=crowd.strata, start=tally.posterior,
        ).posterior  # fmt: skip


def label_positions(item_index: np.ndarray, seed: int) -> np.ndarray:
    """Each label's place (0 first) in its item's seeded random order."""
    keys = np.random.default_rng(seed).random(np.size(item_index))
    return confusion.group_positions(item_index, keys)


def replay(
    crowd: RecordedCrowd,
    policy_name: str,
    seed: int,
    *,
    confidence: float = policy.DEFAULT_CONFIDENCE,
    max_labels: int | None = None,
) -> Outcome:
    """Replay ``policy_name`` (``fire`` or ``adaptive``) once, labels in ``seed``'s order, at
    most ``max_labels`` a pair (default: the policy's)."""
    rules = Rules.of(policy_name, crowd.n_items, seed, max_labels, confidence=confidence)
    source = _Recorded(crowd, seed)
    tally = judge(
        rules,
        source,
        Tally.empty(crowd.n_items),
        lambda tally, left: np.flatnonzero(rules.needed(tally) & left),
    )
    return rules.outcome(tally)


def accuracy(status: np.ndarray, gold: np.ndarray) -> float:
    """Share of the items with a gold label (0/1; -1 none) whose status matches it."""
    gold = np.asarray(gold, dtype=np.int64)
    scored = gold >= 0
    if not scored.any():
        return float("nan")
    return float((np.asarray(status)[scored] == gold[scored]).mean())
