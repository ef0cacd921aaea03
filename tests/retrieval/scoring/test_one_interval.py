"""One interval per shown score: a corrected score the labels leave uncertain shows only the
labels' interval (an active estimate with its own value), an exact one its bootstrap interval."""

import numpy as np

from retrieval.scoring.leaderboard import Cell
from retrieval.scoring.leaderboard_formats import Column, DisplayCell, _one_interval, display_cell
from retrieval.scoring.rescoring import interval_legend
from retrieval.scoring.score_intervals import (
    ACTIVE,
    LABEL_NOISE,
    PREDICTION,
    ScoreInterval,
    query_key,
    stored_active,
)

CORRECTED = Column("corrected", "AP", "AP", True)
ORIGINAL = Column("original", "AP", "original:AP", True)


def _cell(labels: str = "") -> DisplayCell:
    return DisplayCell("43.1", "[40.0, 46.0]", False, False, "bootstrap interval", labels=labels)


def test_the_labels_interval_replaces_the_bootstrap_bracket():
    noisy = ScoreInterval("AP", 0.431, 0.419, 0.442, (LABEL_NOISE,))
    shown = _one_interval(_cell("[41.9–44.2]"), noisy, CORRECTED, 10)
    assert not shown.show_interval and shown.labels == "[41.9–44.2]" and shown.text == "43.1"
    assert "bootstrap interval" in shown.title


def test_an_active_estimate_shows_its_own_value_and_interval():
    active = ScoreInterval("AP", 0.4504, 0.44, 0.46, (ACTIVE,))
    shown = _one_interval(_cell("[44.0–46.0]"), active, CORRECTED, 10)
    assert (shown.text, shown.labels, shown.show_interval) == ("45.0", "[44.0–46.0]", False)
    assert "active estimate" in interval_legend([active])


def test_an_exact_score_keeps_its_bootstrap_interval_and_other_blocks_show_none():
    exact = ScoreInterval("AP", 0.431, 0.431, 0.431)
    assert _one_interval(_cell(), exact, CORRECTED, 10).show_interval
    assert not _one_interval(_cell(), None, ORIGINAL, 10).show_interval


def test_an_active_interval_says_which_part_dominates_its_variance():
    captions = np.array([3, 1, 2])
    value = {"estimate": 0.45, "low": 0.44, "high": 0.46}
    stored = {
        "key": query_key(captions),
        "estimates": {
            "a": {"AP": {**value, "labels_variance": 2e-5, "sampling_variance": 1e-5}},
            "b": {"AP": {**value, "labels_variance": 1e-5, "sampling_variance": 3e-5}},
            "c": {"AP": value},  # stored before the variances: no claim either way
        },
    }
    found = stored_active(stored, captions)
    assert [found[run]["AP"].dominant for run in "abc"] == [LABEL_NOISE, PREDICTION, None]
    assert found["a"]["AP"].as_dict()["dominant"] == LABEL_NOISE
    assert found["c"]["AP"].as_dict()["dominant"] is None
    assert stored_active(stored, np.array([1, 2])) == {}  # other queries: not these estimates
    legend = interval_legend([found["a"]["AP"], found["b"]["AP"]])
    assert "label noise holds most of the variance in 1 of these 2 intervals" in legend
    assert "every such interval" in interval_legend([found["a"]["AP"]])
    cell = Cell(0.45, 0.40, 0.50)
    assert "mostly label noise" in display_cell("AP", cell, 10, found["a"]["AP"]).title
