"""Replay a labelling policy on a crowd file: what ``manage.py replay_labels`` runs.

The raw labels are replayed once per seed (:func:`annotation.simulation.crowd.replay`; the
model never sees the gold file) and each replay scored against the gold labels, beside
Dawid-Skene and majority on every label. No database: the files are the whole input.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from annotation.people import quality
from annotation.policy import rules as policy
from annotation.simulation import crowd as crowd_replay
from config.errors import UserError
from retrieval.formats.labels import read_gold_jsonl, read_raw_jsonl

SEEDS = (1, 1000)
MAX_LABELS = (1, 1000)


class ReplayLabelsError(UserError):
    """The replay cannot run as asked (bounds, or files that share no pair)."""


@dataclass(frozen=True)
class SeedResult:
    seed: int
    labels_used: int
    accuracy: float


@dataclass(frozen=True)
class ReplaySummary:
    """A policy's replays on one crowd: means over the seeds, and each seed's figures
    (accuracies over the gold pairs with labels; a disagreement counts as wrong)."""

    policy: str
    confidence: float | None
    max_labels: int
    pairs: int
    annotators: int
    gold_pairs: int
    gold_without_labels: int
    labels_available: int
    labels_used: float
    labels_used_share: float
    accuracy: float
    accuracy_all_labels: float
    accuracy_majority_all_labels: float
    seeds: int
    per_seed: tuple[SeedResult, ...]

    def as_dict(self) -> dict:
        return asdict(self)


def replay_labels(
    labels_path: Path,
    gold_path: Path,
    policy_name: str,
    *,
    confidence: float = policy.DEFAULT_CONFIDENCE,
    max_labels: int | None = None,
    seeds: int = 10,
    duplicates: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> ReplaySummary:
    """Replay ``policy_name`` on the crowd once per seed (0 .. seeds - 1) and score it."""
    if policy_name not in policy.POLICIES:
        raise ReplayLabelsError(f"policy must be one of {', '.join(policy.POLICIES)}")
    if not SEEDS[0] <= seeds <= SEEDS[1]:
        raise ReplayLabelsError(f"seeds must be between {SEEDS[0]} and {SEEDS[1]}")
    low, high = policy.CONFIDENCE_RANGE
    if not low <= confidence <= high:
        raise ReplayLabelsError(f"confidence must be between {low} and {high}")
    default_cap = policy.DEFAULT_CAP if policy_name == policy.FIRE else policy.DEFAULT_ADAPTIVE_CAP
    cap = default_cap if max_labels is None else max_labels
    if not MAX_LABELS[0] <= cap <= MAX_LABELS[1]:
        raise ReplayLabelsError(f"max-labels must be between {MAX_LABELS[0]} and {MAX_LABELS[1]}")
    items, names, item_index, annotator_index, labels = quality.index_raw(
        read_raw_jsonl(Path(labels_path), duplicates)
    )
    gold_labels = read_gold_jsonl(Path(gold_path))
    known = {items[pair]: label for pair, label in gold_labels.items() if pair in items}
    gold = np.full(len(items), -1, dtype=np.int64)
    gold[list(known)] = list(known.values())
    if not (gold >= 0).any():
        raise ReplayLabelsError(
            f"{gold_path}: none of its pairs has a label in {labels_path}: nothing to score"
        )
    crowd = crowd_replay.RecordedCrowd(item_index, annotator_index, labels, len(items), len(names))
    missing = len(gold_labels) - len(known)
    return summarise(crowd, gold, missing, policy_name, cap, confidence, seeds, progress)


def summarise(
    crowd: crowd_replay.RecordedCrowd,
    gold: np.ndarray,
    missing: int,
    policy_name: str,
    cap: int,
    confidence: float,
    seeds: int,
    progress: Callable[[int], None] | None = None,
) -> ReplaySummary:
    """Replay ``policy_name`` once per seed, score each replay against ``gold`` (-1: none), and
    Dawid-Skene and majority on every label beside them."""
    runs = []
    for seed in range(seeds):
        found = crowd_replay.replay(crowd, policy_name, seed, confidence=confidence, max_labels=cap)
        score = crowd_replay.accuracy(found.status, gold)
        runs.append(SeedResult(seed, found.spent["campaign"], score))
        if progress is not None:
            progress(seed + 1)
    everything = quality.dawid_skene(
        crowd.item_index, crowd.annotator_index, crowd.labels, crowd.n_items, crowd.n_annotators
    )
    majority = quality.majority(crowd.item_index, crowd.labels, crowd.n_items)
    used = float(np.mean([run.labels_used for run in runs]))
    return ReplaySummary(
        policy=policy_name,
        confidence=confidence if policy_name == policy.ADAPTIVE else None,
        max_labels=cap,
        pairs=crowd.n_items,
        annotators=crowd.n_annotators,
        gold_pairs=int((gold >= 0).sum()),
        gold_without_labels=missing,
        labels_available=int(crowd.labels.size),
        labels_used=used,
        labels_used_share=used / crowd.labels.size if crowd.labels.size else 0.0,
        accuracy=float(np.mean([run.accuracy for run in runs])),
        accuracy_all_labels=crowd_replay.accuracy(everything.status, gold),
        accuracy_majority_all_labels=crowd_replay.accuracy(majority.status, gold),
        seeds=seeds,
        per_seed=tuple(runs),
    )
