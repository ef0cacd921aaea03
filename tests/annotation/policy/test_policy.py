"""The FIRE §3.1 labelling policy: hand cases per rule and a simulated campaign."""

import numpy as np
import pytest

from annotation.policy.rules import (
    NOT_ADJUDICATED,
    labels_needed,
    needed_for,
    resolve,
    second_label_count,
    second_label_sample,
    summary,
    tally,
)
from retrieval.label_sets.status import LabelStatus, names

REL, IRR = True, False


def resolve_labels(labels, double=False, cap=3, adjudicated=NOT_ADJUDICATED) -> str:
    """Status name of one pair: :func:`resolve` for a single pair (hand cases read better)."""
    relevant, total = tally(labels)
    code = resolve(
        np.array([relevant]), np.array([total]), np.array([double]), cap, np.array([adjudicated])
    )[0]
    return LabelStatus(int(code)).label


def test_single_label_pair_is_done_after_one():
    assert needed_for([]) == 1
    assert needed_for([REL]) == 0
    assert resolve_labels([REL]) == "relevant"
    assert resolve_labels([IRR]) == "irrelevant"
    assert resolve_labels([]) == "pending"


def test_double_pair_needs_two():
    assert needed_for([], double=True) == 2
    assert needed_for([IRR], double=True) == 1
    assert resolve_labels([IRR], double=True) == "pending"
    assert needed_for([IRR, IRR], double=True) == 0
    assert resolve_labels([IRR, IRR], double=True) == "irrelevant"


def test_disagreement_gets_a_third_and_strict_majority_resolves():
    assert needed_for([REL, IRR], double=True) == 1
    assert resolve_labels([REL, IRR], double=True) == "pending"
    assert needed_for([REL, IRR, REL], double=True) == 0
    assert resolve_labels([REL, IRR, REL], double=True) == "relevant"
    assert resolve_labels([REL, IRR, IRR], double=True) == "irrelevant"


def test_unplanned_second_label_that_disagrees_also_gets_a_third():
    assert needed_for([REL, IRR], double=False) == 1


def test_tie_at_the_cap_is_a_disagreement():
    assert needed_for([REL, IRR], double=True, cap=2) == 0
    assert resolve_labels([REL, IRR], double=True, cap=2) == "disagreement"
    assert needed_for([REL, IRR, REL, IRR], cap=3) == 0
    assert resolve_labels([REL, IRR, REL, IRR]) == "disagreement"
    assert needed_for([REL, IRR, REL, IRR], cap=5) == 1


def test_escalations_are_not_labels():
    assert tally([None, REL, None]) == (1, 1)
    assert needed_for([None]) == 1
    assert needed_for([None, IRR], double=True) == 1


def test_adjudication_wins():
    assert resolve_labels([REL, IRR], cap=2, adjudicated=0) == "irrelevant"
    assert resolve_labels([REL, REL], adjudicated=0) == "irrelevant"
    assert resolve_labels([], adjudicated=1) == "relevant"
    status = resolve(
        np.array([1, 1, 2]), np.array([2, 2, 2]), True, cap=2, adjudicated=np.array([-1, 1, 0])
    )
    assert status.tolist() == [
        LabelStatus.DISAGREEMENT,
        LabelStatus.RELEVANT,
        LabelStatus.IRRELEVANT,
    ]
    with pytest.raises(ValueError):
        resolve(np.array([0]), np.array([1]), adjudicated=np.array([2]))


def test_vectorised_rules_table():
    relevant = np.array([0, 1, 0, 1, 1, 2, 1, 2, 0])
    total = np.array([0, 1, 1, 1, 2, 2, 2, 3, 2])
    double = np.array([False, False, True, True, True, True, False, True, False])
    assert labels_needed(relevant, total, double).tolist() == [1, 0, 1, 1, 1, 0, 1, 0, 0]
    codes = resolve(relevant, total, double)
    assert codes.dtype == np.int8
    assert names(codes).tolist() == [
        "pending",
        "relevant",
        "pending",
        "pending",
        "pending",
        "relevant",
        "pending",
        "relevant",
        "irrelevant",
    ]


def test_invalid_counts_rejected():
    with pytest.raises(ValueError):
        labels_needed(np.array([2]), np.array([1]), np.array([False]))
    with pytest.raises(ValueError):
        labels_needed(np.array([0]), np.array([1]), np.array([False]), cap=0)


@pytest.mark.parametrize(
    ("n", "rate", "expected"),
    [(1000, 0.1, 100), (5, 0.1, 1), (25, 0.1, 3), (50, 0.29, 15), (14, 0.1, 1), (0, 0.1, 0)],
)
def test_second_label_count_rounds_half_up(n, rate, expected):
    assert second_label_count(n, rate) == expected
    assert second_label_sample(n, rate, seed=3).sum() == expected


def test_second_label_sample_is_seeded():
    first = second_label_sample(5000, 0.1, seed=11)
    assert first.dtype == bool and first.sum() == 500
    assert np.array_equal(first, second_label_sample(5000, 0.1, seed=11))
    assert not np.array_equal(first, second_label_sample(5000, 0.1, seed=12))
    assert second_label_sample(10, 1.0).all() and not second_label_sample(10, 0.0).any()
    with pytest.raises(ValueError):
        second_label_sample(10, 1.5)


def test_summary_counts_like_table_2():
    codes = np.array(
        [
            LabelStatus.RELEVANT,
            LabelStatus.IRRELEVANT,
            LabelStatus.IRRELEVANT,
            LabelStatus.DISAGREEMENT,
        ]
    )
    result = summary(np.append(codes, LabelStatus.PENDING))
    assert result == {
        "pairs": 5,
        "irrelevant": 2,
        "relevant": 1,
        "disagreement": 1,
        "pending": 1,
        "resolved_share": 0.75,
    }


def test_simulated_campaign_follows_the_policy_exactly():
    """Annotators with a 15% error rate label 5,000 pairs until the policy asks for nothing."""
    n = 5000
    rng = np.random.default_rng(2024)
    truth = rng.random(n) < 0.1
    double = second_label_sample(n, 0.1, seed=5)
    labels: list[list[bool]] = [[] for _ in range(n)]
    relevant = np.zeros(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.int64)
    for _ in range(10):
        needed = labels_needed(relevant, total, double)
        if not needed.any():
            break
        # one label per pair per round, as annotators take pairs one at a time
        todo = np.flatnonzero(needed)
        votes = truth[todo] ^ (rng.random(todo.size) < 0.15)
        relevant[todo] += votes
        total[todo] += 1
        for pair, vote in zip(todo.tolist(), votes.tolist(), strict=True):
            labels[pair].append(vote)
    assert not labels_needed(relevant, total, double).any()

    first_two_disagree = np.array([len(x) >= 2 and x[0] != x[1] for x in labels])
    n_sampled = int(double.sum())
    assert n_sampled == 500
    assert (total >= 1).all()
    assert np.array_equal(total >= 2, double)
    assert np.array_equal(total == 3, double & first_two_disagree)
    assert total.max() == 3
    assert total.sum() == n + n_sampled + int((double & first_two_disagree).sum())
    assert (double & first_two_disagree).sum() > 0

    status = resolve(relevant, total, double)
    assert not np.isin(status, [LabelStatus.PENDING, LabelStatus.DISAGREEMENT]).any()
    assert summary(status)["resolved_share"] == 1.0
    # the scalar helpers agree with the vectorised ones on every simulated pair
    sample = rng.choice(n, size=300, replace=False)
    for pair in sample.tolist():
        assert needed_for(labels[pair], bool(double[pair])) == 0
        assert resolve_labels(labels[pair], bool(double[pair])) == names(status[pair])
