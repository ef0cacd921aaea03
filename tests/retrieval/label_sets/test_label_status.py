"""The one label vocabulary: codes, names and the strict-majority rule."""

import numpy as np

from retrieval.label_sets import judged
from retrieval.label_sets.status import (
    CODES,
    FINAL,
    LABELS,
    NAMES,
    LabelStatus,
    has_majority,
    majority,
    names,
)


def test_codes_and_names_round_trip():
    codes = np.array([1, 0, -1, -2, 1])
    assert names(codes).tolist() == [
        "relevant",
        "irrelevant",
        "disagreement",
        "pending",
        "relevant",
    ]
    assert [CODES[name] for name in names(codes)] == codes.tolist()


def test_label_sets_store_the_same_codes():
    """Label-set arrays already on disk use 1/0/-1: the vocabulary must keep them."""
    assert (judged.RELEVANT, judged.IRRELEVANT, judged.DISAGREEMENT) == (1, 0, -1)
    assert judged.LABEL_NAMES == {1: "relevant", 0: "irrelevant", -1: "disagreement"}


def test_majority_by_hand():
    relevant = np.array([0, 1, 1, 2, 1, 0, 2, 3])
    total = np.array([0, 1, 2, 3, 3, 2, 4, 5])
    assert majority(relevant, total).tolist() == [-1, 1, -1, 1, 0, 0, -1, 1]
    assert has_majority(relevant, total).tolist() == [
        False, True, False, True, True, True, False, True,
    ]  # fmt: skip


def test_names_and_codes_are_one_vocabulary():
    """CODES and NAMES are inverses over every status, and the labels a person gives are the
    final statuses that are not a disagreement."""
    assert {int(status): status.label for status in LabelStatus} == NAMES
    assert {name: code for code, name in NAMES.items()} == CODES
    assert [CODES[NAMES[code]] for code in NAMES] == list(NAMES)
    assert names(np.array(list(NAMES))).tolist() == list(NAMES.values())
    assert LABELS == (LabelStatus.RELEVANT, LabelStatus.IRRELEVANT)
    assert set(LABELS) == set(FINAL) - {LabelStatus.DISAGREEMENT}
    assert {code: NAMES[code] for code in map(int, FINAL)} == judged.LABEL_NAMES
