"""Pure: replay a labelling policy on a crowd whose every label is already known.

A crowd file holds several labels per pair; a replay takes each pair's labels one at a time,
in a seeded random order, and only while the policy asks for another, as a live campaign
would have asked its annotators. What it costs (labels taken) and how right it is (against
gold labels the replay never looks at) are then measured offline, on any crowd.

Both policies run in rounds: round r takes the r-th label (in the pair's seeded order) of
every pair that still needs one and has one left. ``fire`` (FIRE §3.1): one label, a second
for a seeded 10% sample, a third (up to the cap) while the labels tie; resolved by majority.
``adaptive``: one label, then more while the posterior of the pair's resolved label is below
the confidence target (:func:`annotation.policy.rules.adaptive_needed`); after every round the
annotator model is refitted (:func:`annotation.policy.confusion.fit`) on the labels taken so far,
as the live campaign refits in the background, and the last fit resolves the pairs.
"""

from dataclasses import dataclass

import numpy as np

from annotation.policy import confusion
from annotation.policy import rules as policy
from retrieval.label_sets.status import LabelStatus, majority


@dataclass(frozen=True)
class Crowd:
    """Every available label: item, annotator and label (1 relevant, 0 irrelevant) per entry,
    over ``n_items`` items and ``n_annotators`` annotators; ``strata`` optionally groups the
    items for the class prior (e.g. by best rank), one stratum by default."""

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


@dataclass(frozen=True)
class Outcome:
    """One replay: which labels were taken, each item's probability of relevance and status
    (:class:`retrieval.label_sets.status.LabelStatus` codes), and the rounds it took."""

    taken: np.ndarray
    posterior: np.ndarray
    status: np.ndarray
    rounds: int

    @property
    def labels_used(self) -> int:
        return int(self.taken.sum())


def label_positions(item_index: np.ndarray, seed: int) -> np.ndarray:
    """Each label's place (0 first) in its item's seeded random order."""
    item_index = np.asarray(item_index, dtype=np.int64)
    keys = np.random.default_rng(seed).random(item_index.size)
    order = np.lexsort((keys, item_index))
    sorted_items = item_index[order]
    starts = np.flatnonzero(np.r_[True, sorted_items[1:] != sorted_items[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, sorted_items.size]))
    position = np.empty(item_index.size, dtype=np.int64)
    position[order] = np.arange(item_index.size) - run_start
    return position


def replay(
    crowd: Crowd,
    policy_name: str,
    seed: int,
    *,
    confidence: float = policy.DEFAULT_CONFIDENCE,
    max_labels: int | None = None,
    second_label_rate: float = policy.DEFAULT_SECOND_LABEL_RATE,
) -> Outcome:
    """Replay ``policy_name`` (``fire`` or ``adaptive``) once, with labels in ``seed``'s order.

    ``max_labels`` is the cap (default 3 for fire, 5 for adaptive); ``confidence`` the
    adaptive target; ``second_label_rate`` fire's double sample."""
    if policy_name not in policy.POLICIES:
        raise ValueError(f"policy must be one of {', '.join(policy.POLICIES)}")
    position = label_positions(crowd.item_index, seed)
    available = np.bincount(crowd.item_index, minlength=crowd.n_items)
    taken = np.zeros(crowd.item_index.size, dtype=bool)
    total = np.zeros(crowd.n_items, dtype=np.int64)
    if policy_name == policy.FIRE:
        cap = policy.DEFAULT_CAP if max_labels is None else int(max_labels)
        double = policy.second_label_sample(crowd.n_items, second_label_rate, seed)
        relevant = np.zeros(crowd.n_items, dtype=np.int64)

        def needs() -> np.ndarray:
            return policy.labels_needed(relevant, total, double, cap) > 0

    else:
        cap = policy.DEFAULT_ADAPTIVE_CAP if max_labels is None else int(max_labels)
        model: confusion.Fit | None = None

        def needs() -> np.ndarray:
            nonlocal model
            mask = taken
            model = confusion.fit(
                crowd.item_index[mask],
                crowd.annotator_index[mask],
                crowd.labels[mask],
                crowd.n_items,
                crowd.n_annotators,
                first=position[mask] == 0,
                strata=crowd.strata,
                start=None if model is None else model.posterior,
            )
            return policy.adaptive_needed(total, model.posterior, confidence, cap) > 0

    rounds = 0
    wanted = np.ones(crowd.n_items, dtype=bool)  # every pair's first label
    while True:
        wanted &= available > total
        if not wanted.any():
            break
        step = wanted[crowd.item_index] & (position == total[crowd.item_index])
        taken |= step
        total += np.bincount(crowd.item_index[step], minlength=crowd.n_items)
        if policy_name == policy.FIRE:
            relevant += np.bincount(
                crowd.item_index[step], weights=crowd.labels[step], minlength=crowd.n_items
            ).astype(np.int64)
        rounds += 1
        wanted = needs()
    if policy_name == policy.FIRE:
        status = policy.resolve(relevant, total, double, cap)
        # What is left pending ran out of labels: its majority (a tie stays a disagreement).
        status = np.where(status == LabelStatus.PENDING, majority(relevant, total), status)
        status = np.where(total == 0, LabelStatus.PENDING, status).astype(np.int8)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(total > 0, relevant / np.maximum(total, 1), np.nan)
        return Outcome(taken, share, status, rounds)
    if model is None:  # nothing was labelled at all
        model = confusion.fit(
            crowd.item_index[:0], crowd.annotator_index[:0], crowd.labels[:0],
            crowd.n_items, crowd.n_annotators, strata=crowd.strata,
        )  # fmt: skip
    return Outcome(taken, model.posterior, policy.adaptive_resolve(total, model.posterior), rounds)


def accuracy(status: np.ndarray, gold: np.ndarray) -> float:
    """Share of the items with a gold label (0/1; -1 none) whose status matches it; a
    disagreement or a pending item counts as wrong."""
    gold = np.asarray(gold, dtype=np.int64)
    scored = gold >= 0
    if not scored.any():
        return float("nan")
    return float((np.asarray(status)[scored] == gold[scored]).mean())
