"""Replay FIRE's and the adaptive labelling policy on a real crowd: labels used and accuracy
against Dawid-Skene on every label.

Snow et al.'s (EMNLP 2008) RTE crowd in ``../shared/data/crowd-rte/`` (800 items, 10 labels
each), replayed by :func:`annotation.simulation.crowd_service.summarise`. Target: within 0.5
point of Dawid-Skene on all labels with at most 50% of them::

    .venv/bin/python bench/rte_replay.py [--seeds 10] [--crowd ../shared/data/crowd-rte]
"""

import csv
import time
from pathlib import Path

import numpy as np
from harness import ROOT, machine, parser

TARGET_GAP = 0.005
TARGET_SHARE = 0.5
SETTINGS = (
    ("fire", None, None),
    ("adaptive", 0.95, 5),
    ("adaptive", 0.95, 10),
)


def read_crowd(folder: Path):
    """The TSV as a recorded crowd and each item's gold label."""
    from annotation.simulation.crowd import RecordedCrowd

    items: dict[str, int] = {}
    workers: dict[str, int] = {}
    entries, gold = [], {}
    with (folder / "rte.standardized.tsv").open(newline="") as source:
        for row in csv.DictReader(source, delimiter="\t"):
            item = items.setdefault(row["orig_id"], len(items))
            worker = workers.setdefault(row["!amt_worker_ids"], len(workers))
            entries.append((item, worker, int(row["response"] == "1")))
            gold[item] = int(row["gold"] == "1")
    item_index, annotator_index, labels = np.array(entries, dtype=np.int64).T
    crowd = RecordedCrowd(item_index, annotator_index, labels, len(items), len(workers))
    return crowd, np.array([gold[i] for i in range(len(items))], dtype=np.int64)


def main() -> None:
    options = parser(__doc__, paragraph=True)
    options.add_argument("--seeds", type=int, default=10)
    options.add_argument("--crowd", type=Path, default=ROOT.parent / "shared/data/crowd-rte")
    args = options.parse_args()
    from annotation.policy import rules as policy
    from annotation.simulation.crowd_service import summarise

    print(f"Machine: {machine()}; crowd: {args.crowd}; seeds: {args.seeds}")
    crowd, gold = read_crowd(args.crowd)
    rows = []
    for name, confidence, cap in SETTINGS:
        given = f" --confidence {confidence} --max-labels {cap}" if cap else ""
        cap = cap or (policy.DEFAULT_CAP if name == policy.FIRE else policy.DEFAULT_ADAPTIVE_CAP)
        confidence = confidence or policy.DEFAULT_CONFIDENCE
        started = time.perf_counter()
        result = summarise(crowd, gold, 0, name, cap, confidence, args.seeds)
        rows.append((f"--policy {name}{given}", result, time.perf_counter() - started))
    reference = rows[0][1].accuracy_all_labels
    print(
        f"\nDawid-Skene on all {rows[0][1].labels_available:,} labels: {100 * reference:.2f}%;"
        f" majority on all: {100 * rows[0][1].accuracy_majority_all_labels:.2f}%\n"
    )
    print("| replay_labels arguments | labels used (share) | accuracy | gap to DS-all | target |")
    print("|---|---|---|---|---|")
    for setting, result, seconds in rows:
        gap = result.accuracy - reference
        share = result.labels_used_share
        met = gap >= -TARGET_GAP and share <= TARGET_SHARE
        print(
            f"| {setting} | {result.labels_used:,.0f} ({100 * share:.1f}%) | "
            f"{100 * result.accuracy:.2f}% | {100 * gap:+.2f} pt | "
            f"{'met' if met else 'missed'} ({seconds:.1f} s) |"
        )


if __name__ == "__main__":
    main()
