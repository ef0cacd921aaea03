"""One interval per shown score: a corrected score the labels leave uncertain shows only the
labels' interval (an active estimate with its own value), an exact one its bootstrap interval."""

from retrieval.scoring.leaderboard_formats import Column, DisplayCell, _one_interval
from retrieval.scoring.rescoring import interval_legend
from retrieval.scoring.score_intervals import ACTIVE, LABEL_NOISE, ScoreInterval

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
