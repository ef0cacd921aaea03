"""The adaptive policy's pure pieces (annotator confusions, posteriors, the rule) on hand-made
cases, and ``replay_labels`` on tiny files with hand-computed answers, on bad files, and on a
real crowd (Snow et al. 2008's RTE judgements, read in place)."""

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.policy import confusion
from annotation.policy import rules as policy
from annotation.simulation import crowd as crowd_replay
from retrieval.label_sets.status import LabelStatus
from tests.shared_data import crowd_rte

CROWD_RTE = crowd_rte()


# -- the pure pieces --------------------------------------------------------------------


def gold_answers(accuracy_on_relevant: float, accuracy_on_irrelevant: float, n: int = 40):
    """``n`` known items, half relevant, answered by annotator 0 with the given accuracies."""
    truth = np.r_[np.ones(n // 2, np.int64), np.zeros(n // 2, np.int64)]
    right = np.r_[
        np.arange(n // 2) < round(accuracy_on_relevant * n / 2),
        np.arange(n // 2) < round(accuracy_on_irrelevant * n / 2),
    ]
    labels = np.where(right, truth, 1 - truth)
    return truth, labels


def test_confusions_from_known_items_are_the_beta_posterior_means():
    truth, labels = gold_answers(0.9, 0.7)
    fit = confusion.fit(np.arange(40), np.zeros(40, np.int64), labels, 40, 1, known=truth)
    alpha = confusion.PRIOR_STRENGTH * confusion.PRIOR_ACCURACY
    beta = confusion.PRIOR_STRENGTH * (1 - confusion.PRIOR_ACCURACY)
    assert fit.confusion.sensitivity[0] == pytest.approx((18 + alpha) / (20 + alpha + beta))
    assert fit.confusion.specificity[0] == pytest.approx((14 + alpha) / (20 + alpha + beta))
    assert fit.confusion.evidence[0] == 40
    np.testing.assert_array_equal(fit.posterior, truth)


def careful_and_spammers(new_labels: list[tuple[int, int]]):
    """Annotator 0 careful (every known answer right), 1 and 2 spammers (half right), then
    ``new_labels`` (annotator, label) on one new item; returns that item's posterior."""
    truth, careful = gold_answers(1.0, 1.0)
    _, spam = gold_answers(0.5, 0.5)
    items = [np.arange(40)] * 3 + [np.full(len(new_labels), 40)]
    annotators = [np.full(40, a) for a in range(3)] + [np.array([a for a, _ in new_labels])]
    labels = [careful, spam, 1 - spam, np.array([label for _, label in new_labels])]
    known = np.r_[truth, -1]
    fit = confusion.fit(
        np.concatenate(items),
        np.concatenate(annotators),
        np.concatenate(labels),
        41,
        3,
        known=known,
        strata=np.r_[np.ones(40, np.int64), 0],  # the new item's prior is its own stratum's
    )
    return fit.posterior[40]


def test_a_careful_annotator_settles_a_pair_alone():
    for label in (0, 1):
        p = careful_and_spammers([(0, label)])
        assert policy.certainty(p) >= policy.DEFAULT_CONFIDENCE
        assert policy.adaptive_needed(1, p, policy.DEFAULT_CONFIDENCE, 5) == 0
        assert policy.adaptive_resolve(1, p) == (
            LabelStatus.RELEVANT if label else LabelStatus.IRRELEVANT
        )


def test_two_spammers_never_settle_a_pair_and_the_cap_holds():
    p = careful_and_spammers([(1, 1), (2, 1)])
    assert policy.certainty(p) < policy.DEFAULT_CONFIDENCE
    assert policy.adaptive_needed(2, p, 0.95, 5) == 1
    assert policy.adaptive_needed(5, p, 0.95, 5) == 0  # the cap
    assert policy.adaptive_needed(0, 0.999, 0.95, 5) == 1  # every pair gets its first label


def test_posteriors_add_one_log_ratio_per_label():
    sens, spec = np.array([0.9, 0.6]), np.array([0.8, 0.7])
    p = confusion.posterior(0.3, sens, spec, np.array([1, 0]))
    odds = 0.3 / 0.7 * (0.9 / 0.2) * (0.4 / 0.7)
    assert p == pytest.approx(odds / (1 + odds))
    assert confusion.posterior(0.3, [], [], np.array([], np.int64)) == pytest.approx(0.3)


def test_a_pairs_first_label_never_informs_its_annotator():
    # One item labelled once: nothing is learnt about its annotator.
    fit = confusion.fit(np.array([0]), np.array([0]), np.array([1]), 1, 1)
    assert fit.confusion.evidence[0] == 0
    assert fit.confusion.sensitivity[0] == pytest.approx(confusion.PRIOR_ACCURACY)
    np.testing.assert_array_equal(
        confusion.first_labels(np.array([2, 0, 2, 0]), np.array([5, 9, 1, 3])),
        [False, False, True, True],
    )


def test_label_positions_are_a_seeded_permutation_within_each_item():
    items = np.array([3, 0, 3, 3, 0, 1])
    positions = crowd_replay.label_positions(items, seed=4)
    for item in (0, 1, 3):
        assert sorted(positions[items == item]) == list(range((items == item).sum()))
    np.testing.assert_array_equal(positions, crowd_replay.label_positions(items, seed=4))


# -- replay_labels on files --------------------------------------------------------------


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def raw(caption, annotator, label, video="v"):
    return {
        "caption_id": caption,
        "video_id": video,
        "annotator": annotator,
        "label": "relevant" if label else "irrelevant",
    }


def run(tmp_path: Path, labels: list[dict], gold: list[dict], **options) -> str:
    """What ``replay_labels`` prints for these files."""
    out = io.StringIO()
    call_command(
        "replay_labels",
        labels=write_jsonl(tmp_path / "raw.jsonl", labels),
        gold=write_jsonl(tmp_path / "gold.jsonl", gold),
        stdout=out,
        verbosity=0,
        **options,
    )
    return out.getvalue()


def replay(tmp_path: Path, labels: list[dict], gold: list[dict], **options) -> dict:
    return json.loads(run(tmp_path, labels, gold, format="json", **options))


AGREEING = [
    raw("a", "ann", 1),
    raw("a", "bob", 1),
    raw("b", "ann", 0),
    raw("c", "ann", 0),
    raw("c", "bob", 0),
    raw("c", "cat", 0),
]
GOLD = [
    {"caption_id": "a", "video_id": "v", "label": "relevant"},
    {"caption_id": "c", "video_id": "v", "label": "relevant"},  # the crowd got c wrong
    {"caption_id": "zz", "video_id": "v", "label": "relevant"},  # no labels at all
]


def test_fire_replay_of_a_tiny_file(tmp_path):
    # FIRE: one label each (10% of 3 pairs rounds to no second label); every pair's labels
    # agree, so any order resolves a relevant, b and c irrelevant: a right, c wrong.
    result = replay(tmp_path, AGREEING, GOLD, policy="fire", seeds=3)
    assert result["policy"] == "fire"
    assert (result["pairs"], result["labels_available"], result["labels_used"]) == (3, 6, 3)
    assert result["gold_pairs"] == 2 and result["gold_without_labels"] == 1
    assert result["accuracy"] == 0.5 and result["accuracy_all_labels"] == 0.5
    assert result["seeds"] == 3 and [s["seed"] for s in result["per_seed"]] == [0, 1, 2]


def test_adaptive_replay_asks_as_long_as_the_target_and_the_cap_say(tmp_path):
    # A target of one half: any single label settles its pair.
    first = replay(tmp_path, AGREEING, GOLD, policy="adaptive", confidence=0.5, seeds=2)
    assert first["labels_used"] == 3 and first["accuracy"] == 0.5
    # An unreachable target with a cap of 2: two labels wherever two exist (a 2, b 1, c 2).
    capped = replay(
        tmp_path, AGREEING, GOLD, policy="adaptive", confidence=0.9999, max_labels=2, seeds=2
    )
    assert capped["labels_used"] == 5 and capped["max_labels"] == 2
    # And without a cap below what exists: every label.
    everything = replay(
        tmp_path, AGREEING, GOLD, policy="adaptive", confidence=0.9999, max_labels=10
    )
    assert everything["labels_used"] == 6


@pytest.mark.parametrize(
    ("labels", "gold", "message"),
    [
        ([{**raw("a", "ann", 1), "label": "maybe"}], GOLD, "raw.jsonl, line 1, field 'label'"),
        (AGREEING, [{"caption_id": "a", "label": "relevant"}], "gold.jsonl, line 1"),
        (
            AGREEING,
            [{"caption_id": "a", "video_id": "v", "label": "disagreement"}],
            "gold.jsonl, line 1, field 'label'",
        ),
        (AGREEING, [{"caption_id": "x", "video_id": "v", "label": "relevant"}], "nothing to score"),
        ([raw("a", "ann", 1), raw("a", "ann", 0)], GOLD, "line 2, field 'annotator'"),
    ],
)
def test_a_bad_file_names_file_line_and_field(tmp_path, labels, gold, message):
    with pytest.raises(CommandError) as failure:
        replay(tmp_path, labels, gold, policy="fire")
    assert message in str(failure.value)


def test_duplicates_and_bounds_are_refused_or_honoured(tmp_path):
    twice = [raw("a", "ann", 1), raw("a", "ann", 0), raw("b", "bob", 0)]
    gold = [{"caption_id": "a", "video_id": "v", "label": "irrelevant"}]
    assert replay(tmp_path, twice, gold, policy="fire", duplicates="last")["accuracy"] == 1.0
    assert replay(tmp_path, twice, gold, policy="fire", duplicates="first")["accuracy"] == 0.0
    with pytest.raises(CommandError, match="seeds must be between"):
        replay(tmp_path, AGREEING, GOLD, policy="fire", seeds=0)
    with pytest.raises(CommandError, match="confidence must be between"):
        replay(tmp_path, AGREEING, GOLD, policy="adaptive", confidence=1.5)


def test_the_table_names_what_it_measured(tmp_path):
    text = run(tmp_path, AGREEING, GOLD, policy="adaptive")
    assert "adaptive (max 5 labels, confidence 0.95)" in text
    assert "Dawid-Skene, every label" in text and "gold pairs with no label  1" in text


@pytest.mark.skipif(not CROWD_RTE.is_dir(), reason="the shared RTE crowd is not beside the tree")
def test_on_a_real_crowd_adaptive_uses_half_the_labels_near_dawid_skene_on_all(tmp_path):
    labels, gold = [], {}
    with (CROWD_RTE / "rte.standardized.tsv").open(newline="") as source:
        for row in csv.DictReader(source, delimiter="\t"):
            labels.append(raw(row["orig_id"], row["!amt_worker_ids"], row["response"] == "1"))
            gold[row["orig_id"]] = "relevant" if row["gold"] == "1" else "irrelevant"
    gold_rows = [{"caption_id": c, "video_id": "v", "label": label} for c, label in gold.items()]
    fire = replay(tmp_path, labels, gold_rows, policy="fire", seeds=2)
    adaptive = replay(tmp_path, labels, gold_rows, policy="adaptive", max_labels=10, seeds=2)
    assert fire["labels_available"] == 8000 and fire["pairs"] == 800
    assert adaptive["labels_used_share"] <= 0.5
    assert adaptive["accuracy"] > fire["accuracy"] + 0.1
    assert adaptive["accuracy"] >= adaptive["accuracy_all_labels"] - 0.015
