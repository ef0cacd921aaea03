"""The SVG charts' layout: legend entries and line labels never run into each other."""

import math
import re
import xml.etree.ElementTree as ET

import pytest

from retrieval.scoring import plots

NS = {"svg": "http://www.w3.org/2000/svg"}


def _legend(svg: str) -> list[tuple[float, float, str]]:
    """(x, y, name) of each legend entry: its swatch, then its text."""
    root = ET.fromstring(svg)
    entries = []
    for rect in root.findall("svg:rect", NS):  # the legend's swatches sit at the top level
        entries.append((float(rect.get("x")), float(rect.get("y"))))
    names = [t.text for t in root.findall("svg:text", NS)][1:]  # after the title
    return [(x, y, name) for (x, y), name in zip(entries, names, strict=True)]


def test_text_width_follows_the_letters():
    assert plots.text_width("mme") > plots.text_width("iii")
    assert plots.text_width("mme", size=24) == 2 * plots.text_width("mme")
    assert plots.text_width("名前") > plots.text_width("ab")


def test_legend_entries_leave_room_for_their_names():
    """The names that ran together ("mme■random") each end before the next swatch."""
    names = ["jpose", "minilm", "mme", "random"]
    svg = plots.bar_chart(
        ["a", "b"], [plots.Series(n, [1.0, 2.0]) for n in names], title="Mean C@1"
    )
    entries = _legend(svg)
    assert [name for *_, name in entries] == names
    for (x, y, name), (next_x, next_y, _) in zip(entries, entries[1:], strict=False):
        assert y == next_y
        assert x + 14 + plots.text_width(name) < next_x


def test_a_long_legend_wraps_onto_more_rows_and_the_chart_grows():
    names = [f"a-rather-long-model-name-{i}" for i in range(6)]
    svg = plots.line_chart(
        [1, 2, 3], [plots.Series(n, [1.0, 2.0, 3.0]) for n in names], title="Budget"
    )
    entries = _legend(svg)
    rows = sorted({y for _, y, _ in entries})
    assert len(rows) > 1
    for x, _, name in entries:
        assert x + 14 + plots.text_width(name) <= plots.WIDTH - plots.MARGIN_RIGHT
    height = float(ET.fromstring(svg).get("viewBox").split()[3])
    assert height == plots.HEIGHT + (len(rows) - 1) * plots.LEGEND_ROW


def test_direct_labels_name_each_line_apart_in_distinct_colours():
    """Seven orders ending at the same point: seven names, at least a text line apart, each
    joined to its line in the line's own colour; no legend."""
    names = ["depth", "metric-first", "maxmean", "mtf", "rbp-adaptive", "rrf", "rbp"]
    svg = plots.line_chart(
        [0, 50, 100],
        [plots.Series(n, [0.0, 10.0 + i, 100.0]) for i, n in enumerate(names)],
        title="Pool positives found",
        y_max=100,
        direct_labels=True,
    )
    root = ET.fromstring(svg)
    labels = [
        t for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "line-label"
    ]
    assert sorted(t.text for t in labels) == sorted(names)
    ys = sorted(float(t.get("y")) for t in labels)
    assert all(b - a >= plots.FONT_SIZE for a, b in zip(ys, ys[1:], strict=False))
    assert all(y <= plots.HEIGHT for y in ys)
    assert not root.findall("svg:rect", NS), "no legend beside direct labels"
    strokes = re.findall(
        r'<polyline points="[^"]+" fill="none" stroke="(#[0-9a-f]{6})" stroke-width="2"', svg
    )
    assert len(set(strokes)) == len(names)
    assert len(set(plots.PALETTE)) == len(plots.PALETTE)


def test_crowded_category_names_are_thinned_not_overlapped():
    categories = [str(i) for i in range(30)] + ["30+"]
    svg = plots.bar_chart(categories, [plots.Series("queries", [1.0] * 31)], title="Positives")
    root = ET.fromstring(svg)
    y = str(plots.HEIGHT - plots.MARGIN_BOTTOM + 16)
    ticks = [t for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("y") == y]
    spans = [
        (
            float(t.get("x")) - plots.text_width(t.text) / 2,
            float(t.get("x")) + plots.text_width(t.text) / 2,
        )
        for t in ticks
    ]
    assert 1 < len(ticks) < len(categories)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_axis_ticks_are_round_numbers_inside_the_range():
    assert plots._ticks(0, 1845) == [0, 500, 1000, 1500]
    assert plots._ticks(369, 1772) == [500, 1000, 1500]
    assert plots._ticks(0, 1) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert plots._ticks(1, 3, whole=True) == [1, 2, 3]  # counts: no half ticks
    for low, high in ((0, 7), (3, 3000), (0.05, 0.9), (10, 10_000_000)):
        ticks = plots._ticks(low, high)
        assert 2 <= len(ticks) <= 6 and low <= ticks[0] and ticks[-1] <= high
        step = ticks[1] - ticks[0]
        mantissa = step / 10 ** math.floor(math.log10(step))
        assert round(mantissa, 9) in (1, 2, 5, 10)
    svg = plots.line_chart([0, 369, 1845], [plots.Series("a", [1, 2, 3])], title="t")
    assert ">369<" not in svg and ">1,000<" in svg
