"""Raw files with re-posted tasks (one annotator labelling one pair on two lines): refused by
default with both line numbers, or read as ``--duplicates first|last|all``; checked on a real
crowd (Snow et al. 2008's RTE judgements) and, for ``all``, against crowd-kit."""

import csv
import io
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene, MajorityVote
from django.core.management import CommandError, call_command

from retrieval.label_sets.service import load_judged
from retrieval.models import LabelSet
from tests.factories import query_dataset
from tests.shared_data import crowd_rte

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crowdkit")

CROWD_RTE = crowd_rte()
"""The real crowd's folder, read in place and never copied (its README says so)."""

Row = tuple[str, str, str, int]
"""(caption_id, video_id, annotator, label) of one line of a raw file."""


def write_raw(path: Path, rows: list[Row]) -> Path:
    path.write_text(
        "".join(
            json.dumps(
                {
                    "caption_id": caption,
                    "video_id": video,
                    "annotator": annotator,
                    "label": "relevant" if label else "irrelevant",
                }
            )
            + "\n"
            for caption, video, annotator, label in rows
        ),
        encoding="utf-8",
    )
    return path


def resolve(path: Path, method: str = "majority", duplicates: str | None = None) -> dict:
    """resolve_labels' output: (caption, video) to (label, labels, confidence), in file order."""
    out = path.with_suffix(f".{method}.{duplicates}.out")
    options = {"duplicates": duplicates} if duplicates else {}
    call_command(
        "resolve_labels", labels=path, method=method, output=out, **options, stderr=io.StringIO()
    )
    resolved = {}
    for text in out.read_text(encoding="utf-8").splitlines():
        row = json.loads(text)
        resolved[(row["caption_id"], row["video_id"])] = (
            row["label"],
            row["labels"],
            row["confidence"],
        )
    return resolved


def assert_same(got: dict, expected: dict, atol: float = 0.0) -> None:
    assert set(got) == set(expected)
    for pair, (label, count, confidence) in expected.items():
        assert got[pair][:2] == (label, count), pair
        assert got[pair][2] == pytest.approx(confidence, abs=atol), pair


@pytest.fixture(scope="module")
def rte() -> list[Row]:
    """The 8,000 RTE judgements as raw lines: item as caption, one video, worker, response.
    Where the shared data is not beside the tree, a crowd of the same shape (800 items, ten
    distinct workers each out of 164, seeded), so that the checks always run."""
    path = CROWD_RTE / "rte.standardized.tsv"
    if not path.is_file():
        return _rte_shaped_crowd()
    with open(path, newline="", encoding="utf-8") as handle:
        return [
            (row["orig_id"], "rte", row["!amt_worker_ids"], int(row["response"]))
            for row in csv.DictReader(handle, delimiter="\t")
        ]


def _rte_shaped_crowd(items: int = 800, workers: int = 164, each: int = 10) -> list[Row]:
    """A seeded crowd shaped like the RTE file: careful, sloppy and random workers."""
    rng = np.random.default_rng(26)
    accuracy = rng.choice([0.95, 0.8, 0.5], size=workers, p=[0.6, 0.3, 0.1])
    truth = rng.random(items) < 0.5
    rows = []
    for item in range(items):
        for worker in rng.choice(workers, size=each, replace=False).tolist():
            right = rng.random() < accuracy[worker]
            rows.append((f"i{item}", "rte", f"w{worker}", int(truth[item] == right)))
    return rows


def reposted(rows: list[Row], n: int, seed: int) -> tuple[list[Row], list[int]]:
    """``rows`` with ``n`` of them posted again with the other answer, each copy inserted at a
    random later place; returns the lines and the indices of the rows posted again."""
    rng = random.Random(seed)
    chosen = sorted(rng.sample(range(len(rows)), n))
    lines = list(rows)
    for index in reversed(chosen):
        caption, video, annotator, label = rows[index]
        lines.insert(
            rng.randrange(index + 1, len(lines) + 1), (caption, video, annotator, 1 - label)
        )
    return lines, chosen


@pytest.mark.parametrize("method", ["majority", "dawid-skene"])
def test_real_crowd_with_reposted_tasks(rte, tmp_path, method):
    assert not [k for k, n in Counter(r[:3] for r in rte).items() if n > 1]  # the file is clean
    lines, chosen = reposted(rte, 150, seed=26)
    path = write_raw(tmp_path / "reposted.jsonl", lines)

    # Refused by default, naming both lines and the option.
    with pytest.raises(CommandError) as refused:
        resolve(path, method)
    message = str(refused.value)
    first_copy = next(
        i for i, line in enumerate(lines) if any(line[:3] == lines[j][:3] for j in range(i))
    )
    original = next(j for j in range(first_copy) if lines[j][:3] == lines[first_copy][:3])
    assert f"line {first_copy + 1}" in message and f"on line {original + 1}" in message
    assert "--duplicates first, last, all" in message

    # first: as if the re-posts never happened; last: as if each answer had been the second.
    atol = 0.0 if method == "majority" else 1e-9
    assert_same(
        resolve(path, method, "first"), resolve(write_raw(tmp_path / "o.jsonl", rte), method), atol
    )
    changed = list(rte)
    for index in chosen:
        caption, video, annotator, label = changed[index]
        changed[index] = (caption, video, annotator, 1 - label)
    assert_same(
        resolve(path, method, "last"),
        resolve(write_raw(tmp_path / "c.jsonl", changed), method),
        atol,
    )
    if method == "majority":
        # all: every line a label; a brute-force count of the lines decides.
        got = resolve(path, method, "all")
        votes = Counter((c, v) for c, v, _, _ in lines)
        relevant = Counter((c, v) for c, v, _, label in lines if label)
        for pair, (label, count, _) in got.items():
            assert count == votes[pair]
            yes, no = relevant[pair], votes[pair] - relevant[pair]
            expected = "relevant" if yes > no else "irrelevant" if no > yes else "disagreement"
            assert label == expected, pair
        assert sum(count for _, count, _ in got.values()) == len(lines)


SMALL: list[Row] = [
    # item, annotator, label; w1 answered c0 three times (re-posted twice), w2 c3 twice.
    *[
        ("c0", "v", w, label)
        for w, label in (("w1", 1), ("w1", 1), ("w2", 0), ("w1", 0), ("w3", 1))
    ],
    *[("c1", "v", w, label) for w, label in (("w1", 0), ("w2", 0), ("w3", 1), ("w4", 0))],
    *[("c2", "v", w, label) for w, label in (("w2", 1), ("w3", 1), ("w4", 1), ("w2", 1))],
    *[
        ("c3", "v", w, label)
        for w, label in (("w2", 0), ("w2", 1), ("w2", 1), ("w4", 1), ("w1", 0))
    ],
    *[("c4", "v", w, label) for w, label in (("w3", 0), ("w4", 0), ("w1", 1), ("w4", 0))],
    *[("c5", "v", w, label) for w, label in (("w1", 1), ("w3", 1), ("w4", 0), ("w3", 1))],
]


def test_all_counts_each_line_as_crowdkit_does(tmp_path):
    path = write_raw(tmp_path / "small.jsonl", SMALL)
    data = pd.DataFrame(
        {
            "task": [r[0] for r in SMALL],
            "worker": [r[2] for r in SMALL],
            "label": [r[3] for r in SMALL],
        }
    )
    mv = MajorityVote().fit(data).probas_
    got = resolve(path, "majority", "all")
    for (caption, _), (label, count, confidence) in got.items():
        assert count == sum(r[0] == caption for r in SMALL)
        p_relevant = mv.loc[caption].get(1, 0.0)
        assert p_relevant != 0.5  # the file has no ties, where crowd-kit would pick at random
        assert label == ("relevant" if p_relevant > 0.5 else "irrelevant")
        assert confidence == (1.0 if label == "relevant" else 0.0)
    ds = DawidSkene(n_iter=1000, tol=1e-7).fit(data).probas_
    got = resolve(path, "dawid-skene", "all")
    assert set(caption for caption, _ in got) == set(ds.index)
    for (caption, _), (label, _, confidence) in got.items():
        assert confidence == pytest.approx(ds.loc[caption, 1], abs=1e-3)
        assert label == ("relevant" if ds.loc[caption, 1] > 0.5 else "irrelevant")
    # first and last read the same file differently: c0 by w1 is 1 first and 0 last.
    assert resolve(path, "majority", "first")[("c0", "v")][:2] == ("relevant", 3)
    assert resolve(path, "majority", "last")[("c0", "v")][:2] == ("irrelevant", 3)


def test_import_labels_offers_the_same_option(db, tmp_path):
    dataset, _, _ = query_dataset("dup", n=3)
    rows = [("c0", "v0", "a", 1), ("c0", "v0", "b", 1), ("c0", "v0", "a", 0), ("c1", "v1", "a", 0)]
    path = write_raw(tmp_path / "raw.jsonl", rows)
    with pytest.raises(CommandError, match=r"line 3.*on line 1.*--duplicates first, last, all"):
        call_command("import_labels", str(path), dataset="dup", format="raw")
    assert not LabelSet.objects.exists()
    for duplicates, relevance, votes in (("first", 1, 2), ("last", -1, 2), ("all", 1, 3)):
        call_command(
            "import_labels",
            str(path),
            dataset="dup",
            format="raw",
            name=duplicates,
            duplicates=duplicates,
            stdout=io.StringIO(),
        )
        back = load_judged(LabelSet.objects.get(name=duplicates))
        row = np.flatnonzero(back.caption_ids == dataset.captions.get(key="c0").pk)
        assert (back.relevance[row].tolist(), back.votes[row].tolist()) == ([relevance], [votes])
    with pytest.raises(CommandError, match="raw files only"):
        call_command("import_labels", str(path), dataset="dup", format="jsonl", duplicates="all")


def test_agreement_offers_the_same_option(tmp_path):
    path = write_raw(tmp_path / "small.jsonl", SMALL)
    with pytest.raises(CommandError, match=r"line 2.*on line 1.*--duplicates first, last, all"):
        call_command("agreement", labels=path, resamples=0, stdout=io.StringIO())
    for duplicates, lines in (("first", 19), ("last", 19), ("all", len(SMALL))):
        out = io.StringIO()
        call_command(
            "agreement",
            labels=path,
            resamples=0,
            format="json",
            duplicates=duplicates,
            stdout=out,
        )
        report = json.loads(out.getvalue())
        assert report["labels"] == lines, duplicates
    with pytest.raises(CommandError, match="--labels file only"):
        call_command("agreement", campaign="x", duplicates="all", stdout=io.StringIO())
