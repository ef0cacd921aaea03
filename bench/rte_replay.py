"""Replay FIRE's and the adaptive labelling policy on a real crowd: labels used and accuracy
against Dawid-Skene on every label.

The crowd is Snow et al.'s (EMNLP 2008) Mechanical Turk RTE data in ``../shared/data/
crowd-rte/``: 800 items, 10 labels each by 164 workers, an expert gold label per item. This
script writes it in firepool's raw-label layout (caption_id = the item, video_id = "rte",
annotator = the worker) and its gold file to a temporary folder, then runs ``manage.py
replay_labels`` on them for each policy, so the figures are the command's own. Target:
accuracy within 0.5 point of Dawid-Skene on all ten labels with at most 50% of the labels.

    .venv/bin/python bench/rte_replay.py [--seeds 10] [--crowd ../shared/data/crowd-rte]
"""

import argparse
import csv
import io
import json
import tempfile
import time
from pathlib import Path

from harness import ROOT, machine

TARGET_GAP = 0.005
TARGET_SHARE = 0.5
SETTINGS = (
    ("fire", None, None),
    ("adaptive", 0.95, 5),
    ("adaptive", 0.95, 10),
)


def write_files(crowd: Path, folder: Path) -> tuple[Path, Path]:
    """The TSV as a raw label file and a gold file in ``folder``."""
    raw, gold = folder / "rte-labels.jsonl", folder / "rte-gold.jsonl"
    seen = {}
    with (crowd / "rte.standardized.tsv").open(newline="") as source, raw.open("w") as out:
        for row in csv.DictReader(source, delimiter="\t"):
            label = "relevant" if row["response"] == "1" else "irrelevant"
            item = row["orig_id"]
            out.write(
                json.dumps(
                    {
                        "caption_id": item,
                        "video_id": "rte",
                        "annotator": row["!amt_worker_ids"],
                        "label": label,
                    }
                )
                + "\n"
            )
            seen[item] = "relevant" if row["gold"] == "1" else "irrelevant"
    with gold.open("w") as out:
        for item, label in seen.items():
            out.write(json.dumps({"caption_id": item, "video_id": "rte", "label": label}) + "\n")
    return raw, gold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--crowd", type=Path, default=ROOT.parent / "shared/data/crowd-rte")
    args = parser.parse_args()
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    print(f"Machine: {machine()}; crowd: {args.crowd}; seeds: {args.seeds}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="firepool-rte-") as tmp:
        raw, gold = write_files(args.crowd, Path(tmp))
        for name, confidence, cap in SETTINGS:
            command = ["replay_labels", "--labels", str(raw), "--gold", str(gold)]
            command += ["--policy", name, "--seeds", str(args.seeds), "--format", "json"]
            if confidence is not None:
                command += ["--confidence", str(confidence)]
            if cap is not None:
                command += ["--max-labels", str(cap)]
            out = io.StringIO()
            started = time.perf_counter()
            call_command(*command, stdout=out, verbosity=0)
            seconds = time.perf_counter() - started
            rows.append((" ".join(command[5:]), json.loads(out.getvalue()), seconds))
    reference = rows[0][1]["accuracy_all_labels"]
    print(
        f"\nDawid-Skene on all {rows[0][1]['labels_available']:,} labels: {100 * reference:.2f}%;"
        f" majority on all: {100 * rows[0][1]['accuracy_majority_all_labels']:.2f}%\n"
    )
    print("| replay_labels arguments | labels used (share) | accuracy | gap to DS-all | target |")
    print("|---|---|---|---|---|")
    for command, result, seconds in rows:
        gap = result["accuracy"] - reference
        share = result["labels_used_share"]
        met = gap >= -TARGET_GAP and share <= TARGET_SHARE
        print(
            f"| {command} | {result['labels_used']:,.0f} ({100 * share:.1f}%) | "
            f"{100 * result['accuracy']:.2f}% | {100 * gap:+.2f} pt | "
            f"{'met' if met else 'missed'} ({seconds:.1f} s) |"
        )


if __name__ == "__main__":
    main()
