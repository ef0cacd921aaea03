"""One number format for scores: points with one decimal, on every page and in every table."""

import math

import pytest
from django.template import Context, Template

from retrieval.datasets.uploads import job_summary
from retrieval.scoring.leaderboard_formats import value_text
from retrieval.scoring.rescoring import points, table_cell


@pytest.mark.parametrize(
    ("value", "shown", "signed"),
    [
        (0.4312, "43.1", "+43.1"),
        (0.04349, "4.3", "+4.3"),
        (1.0, "100.0", "+100.0"),
        (0.0, "0.0", "+0.0"),
        (-0.215, "-21.5", "-21.5"),
        (None, "–", "–"),
        (math.nan, "–", "–"),
        ("", "–", "–"),
    ],
)
def test_points_and_the_template_filters_agree(value, shown, signed):
    assert points(value) == shown and points(value, signed=True) == signed
    template = Template("{% load firepool %}{{ v|points }}|{{ v|signed_points }}")
    assert template.render(Context({"v": value})) == f"{shown}|{signed}"


def test_the_leaderboard_the_report_cells_and_job_results_use_it():
    assert value_text("C@1", 0.4312) == points(0.4312) == "43.1"
    assert table_cell(0.61, 0.135) == "61.0 (13.5 + 47.5)"
    assert table_cell(0.369, 0.625) == "36.9 (62.5 − 25.6)"  # a loss, never "+ -25.6"
    assert table_cell(0.6249, 0.625) == "62.5 (62.5 + 0.0)"  # no minus sign on a zero
    summary = job_summary("score_run", {"scores": {"C@1": 0.4312, "C@10": 0.9}, "label_set": "h"})
    assert summary == "C@1 43.1, C@10 90.0 points (with h)"
