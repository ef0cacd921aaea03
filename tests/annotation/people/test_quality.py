"""Annotator scores, the pause rule and label aggregation (annotation.people.quality), and the
resolve_labels command; Dawid-Skene is checked against crowd-kit and a hand-worked case."""

import json

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene
from django.core.management import CommandError, call_command
from scipy.stats import binomtest

from annotation.people import quality
from annotation.policy import rules as policy
from retrieval.label_sets import status as label_status
from retrieval.label_sets.status import LabelStatus

# crowd-kit 1.4.2 uses pandas keywords that pandas 3 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crowdkit")

# Wilson intervals and the pause rule.


def test_wilson_matches_hand_values():
    """8/10: centre (0.8 + 1.9208/10) / 1.38416 = 0.71674, half-width 1.41602 x 0.16001."""
    low, high = quality.wilson_interval(np.array([8, 0, 10]), np.array([10, 10, 10]))
    np.testing.assert_allclose(low, [0.49016, 0.0, 0.72247], atol=1e-5)
    np.testing.assert_allclose(high, [0.94332, 0.27753, 1.0], atol=1e-5)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 3), (7, 12), (49, 50), (123, 400)])
def test_wilson_matches_scipy(k, n):
    reference = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = quality.wilson_interval(k, n)
    assert float(low) == pytest.approx(reference.low, abs=1e-9)
    assert float(high) == pytest.approx(reference.high, abs=1e-9)


def test_wilson_without_trials_knows_nothing():
    low, high = quality.wilson_interval(np.array([0]), np.array([0]))
    assert (low[0], high[0]) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes <= trials"):
        quality.wilson_interval(3, 2)


def test_pause_rule():
    """2/10 has upper bound 0.51 (< 0.7): paused; 5/10 reaches 0.76; 0/9 is too few gold."""
    paused = quality.should_pause(
        gold_correct=np.array([2, 5, 0, 9, 9]),
        gold_total=np.array([10, 10, 9, 10, 10]),
        median_seconds=np.array([5.0, 5.0, 5.0, 0.5, np.nan]),
        threshold=0.7,
    )
    assert paused.tolist() == [True, False, False, True, False]
    assert not quality.should_pause(0, 9, 5.0, 0.7)
    assert quality.should_pause(0, 9, 5.0, 0.7, min_gold=9)
    assert not quality.should_pause(9, 10, 0.5, 0.7, floor_seconds=0.4)


# Annotator scores.


def _scored(window=quality.ROLLING_GOLD):
    """Annotator a labels items 0-5 (given here in reverse time order), b items 0-2.

    Gold: items 0, 1 relevant, 2, 3, 4 irrelevant, 5 not gold. a answers 1,0,0,0,1,1 at
    times 0, 10, 20, 1000, 1004, 1010 (the 980 s gap is a break); b answers 1,1,0 with
    recorded seconds 2, 3 and 400 (idle: left out).
    """
    a_times = [0.0, 10.0, 20.0, 1000.0, 1004.0, 1010.0]
    return quality.annotator_scores(
        item_index=np.array([5, 4, 3, 2, 1, 0, 0, 1, 2]),
        annotator_index=np.array([0] * 6 + [1] * 3),
        labels=np.array([1, 1, 0, 0, 0, 1, 1, 1, 0]),
        annotators=["a", "b", "c"],
        n_items=6,
        known=np.array([1, 1, 0, 0, 0, -1]),
        times=np.array([*a_times[::-1], 5.0, 6.0, 7.0]),
        seconds=np.array([np.nan] * 6 + [2.0, 3.0, 400.0]),
        window=window,
    )


def test_annotator_gold_scores():
    a, b, c = _scored()
    assert (a.gold, a.gold_correct) == (5, 3)
    low, high = quality.wilson_interval(3, 5)
    assert a.gold_accuracy.estimate == pytest.approx(0.6)
    assert (a.gold_accuracy.low, a.gold_accuracy.high) == (pytest.approx(low), pytest.approx(high))
    assert a.gold_accuracy.level == pytest.approx(0.95)
    assert a.sensitivity == pytest.approx(1 / 2)  # relevant gold 0, 1: one judged relevant
    assert a.specificity == pytest.approx(2 / 3)  # irrelevant gold 2, 3, 4: two judged so
    assert (b.gold, b.gold_correct, b.sensitivity, b.specificity) == (3, 3, 1.0, 1.0)
    assert c.labels == 0 and c.gold_accuracy is None and c.sensitivity is None


def test_rolling_gold_accuracy_follows_time_order():
    """a's gold answers in time order are right, wrong, right, right, wrong."""
    a = _scored()[0]
    assert a.rolling_gold_accuracy == pytest.approx((1.0, 0.5, 2 / 3, 0.75, 0.6))
    assert a.recent_gold_accuracy == pytest.approx(0.6)
    a = _scored(window=2)[0]
    assert a.rolling_gold_accuracy == pytest.approx((1.0, 0.5, 0.5, 1.0, 0.5))
    assert _scored()[2].rolling_gold_accuracy == ()


def test_annotator_time_leaves_out_breaks():
    a, b, c = _scored()
    assert a.median_seconds == pytest.approx(8.0)  # gaps 10, 10, 4, 6; 980 is a break
    assert a.labels_per_hour == pytest.approx(4 / (30 / 3600))
    assert b.median_seconds == pytest.approx(2.5)  # 400 s is idle
    assert b.labels_per_hour == pytest.approx(2 / (5 / 3600))
    assert c.median_seconds is None and c.labels_per_hour is None


def test_annotator_agreement():
    """On items 0-2 a says 1,0,0 and b 1,1,0: each agrees with the other on 2 of 3.

    The strict majority leaves item 1 a disagreement, so both agree with every resolved label.
    """
    a, b, _ = _scored()
    assert a.agreement_with_coannotators == pytest.approx(2 / 3)
    assert b.agreement_with_coannotators == pytest.approx(2 / 3)
    assert a.agreement_with_resolved == b.agreement_with_resolved == 1.0


# Aggregation.

HAND_ITEMS = np.repeat(np.arange(4), 3)
HAND_ANNOTATORS = np.tile(np.arange(3), 4)
HAND_LABELS = np.array([1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1])


def test_dawid_skene_one_iteration_by_hand():
    """Annotators A, B, C label items 0-3 as (1,1,1), (0,0,0), (1,1,0), (0,0,1).

    Start: vote shares T = (1, 0, 2/3, 1/3), prior 0.5. M-step: A (and B) answered 1 on
    items 0, 2 and 0 on 1, 3, so P(1 | rel) = (1 + 2/3) / 2 = 5/6 and P(0 | irr) =
    (1 + 2/3) / 2 = 5/6; C answered 1 on 0, 3, so P(1 | rel) = (1 + 1/3) / 2 = 2/3 and
    P(0 | irr) = 2/3. E-step, item 2 (1,1,0): relevant 5/6 x 5/6 x 1/3 = 25/108, irrelevant
    1/6 x 1/6 x 2/3 = 2/108, so 25/27; item 3 is its mirror, 2/27; item 0: 50/108 against
    1/108, so 50/51; item 1: 1/51.
    """
    fit = quality.dawid_skene(HAND_ITEMS, HAND_ANNOTATORS, HAND_LABELS, 4, max_iter=1)
    np.testing.assert_allclose(fit.confidence, [50 / 51, 1 / 51, 25 / 27, 2 / 27])
    assert (fit.iterations, fit.converged) == (1, False)
    # The confusions are refitted from these posteriors; A's is symmetric by construction.
    assert fit.confusion[0, 1, 1] == pytest.approx(fit.confusion[0, 0, 0])
    reference = _crowdkit(HAND_ITEMS, HAND_ANNOTATORS, HAND_LABELS, n_iter=1)
    np.testing.assert_allclose(fit.confidence, reference, atol=1e-9)
    assert fit.status.tolist() == [LabelStatus.RELEVANT, LabelStatus.IRRELEVANT] * 2


def _crowdkit(items, annotators, labels, n_iter=1000, tol=1e-12, true_labels=None):
    """crowd-kit's posterior probability of relevance per item (NaN where it has none)."""
    data = pd.DataFrame({"task": items, "worker": annotators, "label": labels})
    gold = None if true_labels is None else pd.Series(true_labels)
    model = DawidSkene(n_iter=n_iter, tol=tol).fit(data, true_labels=gold)
    return model.probas_[1].reindex(range(int(items.max()) + 1)).to_numpy()


def _simulate(seed, n_items=300, n_annotators=7, per_item=3, relevant=0.2, spammers=0):
    """Labels of annotators with their own sensitivity and specificity; the first
    ``spammers`` answer at random. Returns (truth, items, annotators, labels)."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n_items) < relevant).astype(np.int64)
    sensitivity = rng.uniform(0.6, 0.95, n_annotators)
    specificity = rng.uniform(0.7, 0.98, n_annotators)
    sensitivity[:spammers] = specificity[:spammers] = 0.5
    annotators = np.concatenate(
        [rng.choice(n_annotators, per_item, replace=False) for _ in range(n_items)]
    )
    items = np.repeat(np.arange(n_items), per_item)
    p_relevant = np.where(truth[items] == 1, sensitivity[annotators], 1 - specificity[annotators])
    labels = (rng.random(len(items)) < p_relevant).astype(np.int64)
    return truth, items, annotators, labels


STEPS = 40
"""EM iterations both implementations run when compared step for step (tolerances off)."""


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dawid_skene_equals_crowdkit(seed):
    truth, items, annotators, labels = _simulate(seed)
    fit = quality.dawid_skene(items, annotators, labels, 300, tol=0.0, max_iter=STEPS)
    reference = _crowdkit(items, annotators, labels, n_iter=STEPS, tol=-np.inf)
    assert fit.iterations == STEPS
    np.testing.assert_allclose(fit.confidence, reference, atol=1e-9)
    assert ((fit.confidence > 0.5) == (reference > 0.5)).all()
    assert (fit.status == truth).mean() > 0.8  # the simulated crowd is decent


def test_dawid_skene_converged_labels_equal_crowdkit():
    _, items, annotators, labels = _simulate(6)
    fit = quality.dawid_skene(items, annotators, labels, 300)
    reference = _crowdkit(items, annotators, labels, n_iter=1000, tol=1e-7)
    assert fit.converged
    np.testing.assert_allclose(fit.confidence, reference, atol=1e-3)
    clear = np.abs(reference - 0.5) > 0.01
    assert ((fit.confidence > 0.5) == (reference > 0.5))[clear].all()


def test_dawid_skene_with_gold_equals_crowdkit():
    truth, items, annotators, labels = _simulate(3)
    known = np.full(300, -1)
    known[:40] = truth[:40]
    fit = quality.dawid_skene(items, annotators, labels, 300, known=known, tol=0.0, max_iter=STEPS)
    reference = _crowdkit(
        items,
        annotators,
        labels,
        n_iter=STEPS,
        tol=-np.inf,
        true_labels=dict(enumerate(truth[:40])),
    )
    np.testing.assert_allclose(fit.confidence, reference, atol=1e-9)
    np.testing.assert_array_equal(fit.confidence[:40], truth[:40])


def test_dawid_skene_beats_majority_with_spammers():
    """Four of seven annotators answer at random: majority suffers, Dawid-Skene finds them."""
    truth, items, annotators, labels = _simulate(4, n_items=2000, per_item=5, spammers=4)
    fit = quality.dawid_skene(items, annotators, labels, 2000)
    vote = quality.majority(items, labels, 2000)
    ds_accuracy = (fit.status == truth).mean()
    majority_accuracy = (vote.status == truth).mean()
    assert ds_accuracy > majority_accuracy + 0.05
    spammer_accuracy = (fit.confusion[:4, 1, 1] + fit.confusion[:4, 0, 0]) / 2
    careful_accuracy = (fit.confusion[4:, 1, 1] + fit.confusion[4:, 0, 0]) / 2
    assert spammer_accuracy.max() < careful_accuracy.min()


def test_gold_clamping_rescues_an_adversarial_crowd():
    """Two of three annotators always answer the opposite: majority and unsupervised
    Dawid-Skene follow them; gold pairs reveal them as inverted and every label comes out right."""
    rng = np.random.default_rng(5)
    truth = (rng.random(60) < 0.3).astype(np.int64)
    items = np.repeat(np.arange(60), 3)
    annotators = np.tile(np.arange(3), 60)
    labels = np.where(annotators == 0, truth[items], 1 - truth[items])
    unsupervised = quality.dawid_skene(items, annotators, labels, 60)
    assert (unsupervised.status == 1 - truth).all()
    known = np.full(60, -1)
    known[:10] = truth[:10]
    fit = quality.dawid_skene(items, annotators, labels, 60, known=known)
    assert (fit.status == truth).all()
    np.testing.assert_array_equal(fit.confidence[:10], truth[:10])
    assert fit.confusion[1, 1, 0] > 0.99  # annotator 1 says irrelevant when it is relevant
    assert (quality.majority(items, labels, 60, known).status[10:] == 1 - truth[10:]).all()


def test_dawid_skene_degenerate_cases():
    """An annotator who only says irrelevant carries no information (as in crowd-kit); an
    item with one label still gets a posterior; unlabelled items stay pending."""
    items = np.array([0, 0, 1, 1, 2, 2, 3])
    annotators = np.array([0, 1, 0, 1, 0, 2, 2])
    labels = np.array([1, 0, 0, 0, 1, 0, 0])
    fit = quality.dawid_skene(items, annotators, labels, 5, tol=1e-12, max_iter=1000)
    np.testing.assert_allclose(fit.confidence[:4], _crowdkit(items, annotators, labels), atol=1e-6)
    assert fit.confusion[2, :, 0] == pytest.approx([1.0, 1.0])  # always "irrelevant"
    assert fit.confidence[3] == pytest.approx(fit.prior)  # only the uninformative one
    assert fit.status[4] == LabelStatus.PENDING and np.isnan(fit.confidence[4])
    assert np.isfinite(fit.confusion).all()

    empty = quality.dawid_skene(np.array([], int), np.array([], int), np.array([], int), 0)
    assert empty.status.shape == empty.confidence.shape == (0,) and empty.converged
    nobody = quality.dawid_skene(np.array([], int), np.array([], int), np.array([], int), 2)
    assert nobody.status.tolist() == [LabelStatus.PENDING] * 2


def test_majority_is_the_policy_rule():
    items = np.array([0, 0, 1, 1, 1, 2, 2, 3])
    labels = np.array([1, 1, 1, 0, 0, 1, 0, 0])
    vote = quality.majority(items, labels, 5)
    expected = [
        resolve_one([True, True]),
        resolve_one([True, False, False]),
        resolve_one([True, False]),
        resolve_one([False]),
        "pending",
    ]
    assert label_status.names(vote.status).tolist() == expected
    np.testing.assert_array_equal(vote.confidence, [1.0, 0.0, 0.5, 0.0, np.nan])
    assert quality.majority(items, labels, 5, np.array([0, -1, 1, -1, 1])).status.tolist() == [
        LabelStatus.IRRELEVANT,
        LabelStatus.IRRELEVANT,
        LabelStatus.RELEVANT,
        LabelStatus.IRRELEVANT,
        LabelStatus.RELEVANT,
    ]


def test_aggregate_rejects_unknown_method():
    with pytest.raises(ValueError, match="unknown aggregation method"):
        quality.aggregate("mean", np.array([0]), np.array([0]), np.array([1]), 1)


# The resolve_labels command.

RAW = [
    ("c1", "v1", "ann", "relevant"),
    ("c1", "v1", "bob", "relevant"),
    ("c1", "v2", "ann", "irrelevant"),
    ("c1", "v2", "bob", "relevant"),
    ("c2", "v1", "cat", "irrelevant"),
    ("c2", "v1", "ann", "irrelevant"),
    ("c2", "v1", "bob", "relevant"),
]


def _raw_file(tmp_path, rows=RAW):
    path = tmp_path / "raw.jsonl"
    path.write_text(
        "".join(
            json.dumps({"caption_id": c, "video_id": v, "annotator": a, "label": label}) + "\n"
            for c, v, a, label in rows
        )
    )
    return path


def test_resolve_labels_majority_csv(tmp_path):
    out = tmp_path / "resolved.csv"
    call_command(
        "resolve_labels", labels=_raw_file(tmp_path), method="majority", format="csv", output=out
    )
    assert out.read_text().splitlines() == [
        "caption_id,video_id,label,labels,confidence",
        "c1,v1,relevant,2,1.0",
        "c1,v2,disagreement,2,0.5",
        "c2,v1,irrelevant,3,0.0",
    ]


def test_resolve_labels_dawid_skene_jsonl(tmp_path):
    out = tmp_path / "resolved.jsonl"
    call_command(
        "resolve_labels", "--labels", str(_raw_file(tmp_path)), "--method", "dawid-skene", "-o", out
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    items = np.array([0, 0, 1, 1, 2, 2, 2])
    annotators = np.array([0, 1, 0, 1, 2, 0, 1])
    labels = np.array([1, 1, 0, 1, 0, 0, 1])
    fit = quality.dawid_skene(items, annotators, labels, 3)
    assert [(r["caption_id"], r["video_id"], r["labels"]) for r in rows] == [
        ("c1", "v1", 2),
        ("c1", "v2", 2),
        ("c2", "v1", 3),
    ]
    assert [r["confidence"] for r in rows] == fit.confidence.tolist()
    assert [r["label"] for r in rows] == label_status.names(fit.status).tolist()


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"caption_id": "c3", "video_id": "v1", "annotator": "ann", "label": "maybe"}', "label"),
        ('{"caption_id": "c3", "video_id": "v1", "label": "relevant"}', "annotator"),
    ],
)
def test_resolve_labels_bad_input_writes_nothing(tmp_path, line, field):
    path = _raw_file(tmp_path)
    path.write_text(path.read_text() + line + "\n")
    out = tmp_path / "out" / "resolved.jsonl"
    out.parent.mkdir()
    out.write_text("earlier\n")
    with pytest.raises(CommandError) as error:
        call_command("resolve_labels", labels=path, method="dawid-skene", output=out)
    message = str(error.value)
    assert str(path) in message and "line 8" in message and repr(field) in message
    assert out.read_text() == "earlier\n"
    assert [p.name for p in out.parent.iterdir()] == ["resolved.jsonl"]  # no partial file


def test_resolve_labels_unwritable_output(tmp_path):
    with pytest.raises(CommandError, match="cannot write"):
        call_command(
            "resolve_labels", labels=_raw_file(tmp_path), output=tmp_path / "missing" / "out.csv"
        )


def resolve_one(labels: list[bool]) -> str:
    """The policy's status name for one pair labelled ``labels`` (no label cap)."""
    relevant, total = policy.tally(labels)
    code = policy.resolve(np.array([relevant]), np.array([total]), False, cap=1)[0]
    return LabelStatus(int(code)).label
