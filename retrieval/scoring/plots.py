"""Small, dependency-free SVG charts for report pages, every text escaped (``|safe``). Static, with
``<title>`` and ``<desc>`` for screen readers; Okabe and Ito's (2008) palette and dash patterns tell
series apart under colour-vision deficiencies; legends wrap by text width.

Hand-written, not matplotlib, for a measured reason (``bench/charts_bench.py``): the report's
charts take 0.3-0.8 ms each here against 67-319 ms from matplotlib's SVG backend, are a third
to a quarter of its bytes, name every mark's value in a tooltip and describe the chart to a
screen reader (matplotlib's SVG does neither), and cost no 0.8 s import in each process."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 640
HEIGHT = 260
MARGIN_LEFT = 56
MARGIN_RIGHT = 16
MARGIN_TOP = 40
MARGIN_BOTTOM = 44
PLOT_W = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
PLOT_H = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
# Okabe & Ito (2008), "Color Universal Design", yellow last: it is faint on white.
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442")
DASHES = ("", "6 3", "2 3", "8 3 2 3", "4 4", "1 3", "10 4", "3 2 1 2")
FONT_SIZE = 12
LEGEND_ROW = 14
# Advance widths of DejaVu Sans (a wide sans-serif, so estimates err on the roomy side) for
# the characters " " to "~", in hundredths of an em; anything else counts as 0.7 em, or 1 em
# from the CJK blocks on.
_WIDTHS = (
    32, 40, 46, 84, 64, 95, 78, 27, 39, 39, 50, 84, 32, 36, 32, 34, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 64, 34, 34, 84, 84, 84, 53, 100, 68, 69, 70, 77, 63, 58, 77, 75, 29, 29, 66, 56, 86,
    75, 79, 60, 79, 69, 63, 61, 73, 68, 99, 69, 61, 69, 39, 34, 39, 84, 50, 50, 61, 63, 55, 63,
    62, 35, 63, 63, 28, 28, 58, 28, 97, 63, 61, 63, 63, 41, 52, 39, 63, 59, 82, 59, 59, 52, 64,
    34, 64, 84,
)  # fmt: skip


def text_width(text: str, size: float = FONT_SIZE) -> float:
    """Estimated width of ``text`` in a sans-serif at ``size`` px (charts are drawn server-side)."""
    codes = [ord(char) for char in text]
    widths = (_WIDTHS[c - 32] if 32 <= c < 127 else 100 if c >= 0x2E80 else 70 for c in codes)
    return sum(widths) * size / 100


@dataclass(frozen=True)
class Series:
    """A named sequence of values, one per category (None: no value)."""

    name: str
    values: Sequence[float | None]


def nice_max(value: float) -> float:
    """A round upper bound for an axis: 1, 2 or 5 times a power of ten, at least ``value``."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if value <= step * power)


def _fmt(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def bar_chart(
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    x_label: str = "",
    y_label: str = "",
    y_max: float | None = None,
) -> str:
    """Grouped vertical bars: one group per category, one bar per series."""
    top = _axis_top(series, y_max)
    n = max(len(categories), 1)
    group_w = PLOT_W / n
    bar_w = group_w * 0.8 / max(len(series), 1)
    parts = _open(title, title, _legend(series))
    parts.extend(_grid(y_label, top))
    # Name every category whose name fits its group, else every second (third...) one.
    widest = max((text_width(str(c)) for c in categories), default=0.0)
    every = max(1, math.ceil((widest + 4) / group_w))
    for i, category in enumerate(categories):
        x0 = MARGIN_LEFT + i * group_w + group_w * 0.1
        for j, s in enumerate(series):
            value = s.values[i]
            if value is None:
                continue
            h = PLOT_H * min(max(value / top, 0.0), 1.0)
            x = x0 + j * bar_w
            y = MARGIN_TOP + PLOT_H - h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w * 0.92:.1f}" height="{h:.1f}" '
                f'fill="{_colour(j)}"><title>{escape(s.name)} · '
                f"{escape(str(category))}: {_fmt(value)}</title></rect>"
            )
        if i % every == 0:
            parts.append(_tick(MARGIN_LEFT + (i + 0.5) * group_w, escape(str(category))))
    parts.extend(_axis_labels(x_label, ""))
    return _close(parts)


def line_chart(
    x_values: Sequence[float],
    series: Sequence[Series],
    *,
    title: str,
    x_label: str = "",
    y_label: str = "",
    y_max: float | None = None,
    description: str = "",
    direct_labels: bool = False,
) -> str:
    """Lines with point markers over a numeric x axis; ``direct_labels`` names each line at its
    right end instead of in a legend, names pushed apart."""
    top = _axis_top(series, y_max)
    low, high = (min(x_values), max(x_values)) if x_values else (0.0, 1.0)
    span = (high - low) or 1.0
    right = WIDTH - MARGIN_RIGHT
    if direct_labels and series:
        right -= 22 + max(text_width(s.name) for s in series)
    plot_w = right - MARGIN_LEFT
    parts = _open(title, description or title, [] if direct_labels else _legend(series))
    parts.extend(_grid(y_label, top, right))

    def xy(x: float, y: float) -> tuple[float, float]:
        return (
            MARGIN_LEFT + plot_w * (x - low) / span,
            MARGIN_TOP + PLOT_H - PLOT_H * min(max(y / top, 0.0), 1.0),
        )

    ends = []
    for j, s in enumerate(series):
        colour = _colour(j)
        known = [(x, y) for x, y in zip(x_values, s.values, strict=True) if y is not None]
        points = [xy(x, y) for x, y in known]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            dash = DASHES[j % len(DASHES)]
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"'
                + (f' stroke-dasharray="{dash}"' if dash else "")
                + "/>"
            )
        for (x, y), (xv, yv) in zip(points, known, strict=True):
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>'
                f"{escape(s.name)} at {_fmt(xv)}: {_fmt(yv)}</title></circle>"
            )
        if points:
            ends.append((points[-1][1], j, points[-1]))
    if direct_labels:
        parts.extend(_end_labels(series, ends, right))
    whole = all(float(x).is_integer() for x in x_values)
    for x in _ticks(low, high, whole=whole):
        px, _ = xy(x, 0)
        label = _fmt(x)
        # A label at the right edge ends there instead of running off the chart.
        anchor = "end" if px + text_width(label) / 2 > WIDTH - 2 else "middle"
        parts.append(_tick(px, label, anchor))
    parts.extend(_axis_labels(x_label, "", plot_w))
    return _close(parts)


def _end_labels(
    series: Sequence[Series], ends: list[tuple[float, int, tuple[float, float]]], right: float
) -> list[str]:
    """Each line's name right of the plot, level with its last point where it can be, a text line
    from its neighbours, joined to the point by a short stroke in the line's colour."""
    ends = sorted(ends)
    gap = FONT_SIZE + 1
    wanted = [y for y, _, _ in ends]
    placed: list[float] = []
    for y in wanted:  # top to bottom, each at least a line below the one before
        placed.append(max(y, placed[-1] + gap) if placed else y)
    bottom = HEIGHT - MARGIN_BOTTOM + 4
    if placed and placed[-1] > bottom:  # then back up from the bottom
        placed[-1] = bottom
        for i in range(len(placed) - 2, -1, -1):
            placed[i] = min(placed[i], placed[i + 1] - gap)
    parts = []
    for (_, j, (px, py)), y in zip(ends, placed, strict=True):
        parts.append(
            f'<polyline points="{px:.1f},{py:.1f} {right + 4:.1f},{y:.1f} {right + 10:.1f},{y:.1f}" '
            f'fill="none" stroke="{_colour(j)}" stroke-width="1.5"/>'
            f'<text x="{right + 13:.1f}" y="{y + 4:.1f}" class="line-label">'
            f"{escape(series[j].name)}</text>"
        )
    return parts


def _axis_top(series: Sequence[Series], y_max: float | None) -> float:
    if y_max is not None:
        return y_max
    return nice_max(max((v for s in series for v in s.values if v is not None), default=0.0))


def _ticks(low: float, high: float, count: int = 6, whole: bool = False) -> list[float]:
    """At most ``count`` round positions in [low, high] (1, 2 or 5 times a power of ten); whole
    numbers only when ``whole``."""
    if high <= low:
        return [low]
    step = nice_max((high - low) / (count - 1))
    if whole:
        step = max(step, 1.0)
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    return [i * step for i in range(first, last + 1)]


def _grid(y_label: str, top: float, right: float = WIDTH - MARGIN_RIGHT) -> list[str]:
    parts = []
    for i in range(5):
        value = top * i / 4
        y = MARGIN_TOP + PLOT_H - PLOT_H * i / 4
        parts.append(
            f'<line x1="{MARGIN_LEFT}" x2="{right:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#e3dfd9"/><text x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{_fmt(value)}</text>'
        )
    parts.extend(_axis_labels("", y_label))
    return parts


def _tick(x: float, text: str, anchor: str = "middle") -> str:
    """A label under the x axis at ``x``."""
    y = HEIGHT - MARGIN_BOTTOM + 16
    return f'<text x="{x:.1f}" y="{y}" text-anchor="{anchor}">{text}</text>'


def _axis_labels(x_label: str, y_label: str, plot_w: float = PLOT_W) -> list[str]:
    parts = []
    if x_label:
        parts.append(
            f'<text x="{MARGIN_LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle" '
            f'class="axis-label">{escape(x_label)}</text>'
        )
    if y_label:
        parts.append(
            f'<text transform="translate(14 {MARGIN_TOP + PLOT_H / 2:.1f}) rotate(-90)" '
            f'text-anchor="middle" class="axis-label">{escape(y_label)}</text>'
        )
    return parts


def _legend(series: Sequence[Series]) -> list[tuple[int, str, float, int]]:
    """Where each legend entry goes, ``(series index, name, x, row)``, wrapping rows by measured
    width; none for a single series."""
    if len(series) < 2:
        return []
    entries, x, row = [], float(MARGIN_LEFT), 0
    for j, s in enumerate(series):
        width = 14 + text_width(s.name)
        if x > MARGIN_LEFT and x + width > WIDTH - MARGIN_RIGHT:
            x, row = float(MARGIN_LEFT), row + 1
        entries.append((j, s.name, x, row))
        x += width + 14
    return entries


def _open(title: str, description: str, legend: list) -> list[str]:
    """The chart's start: its title, its legend rows, and the plot group, moved down by the
    rows the legend needs beyond the first (close it with :func:`_close`)."""
    extra = max((row for *_, row in legend), default=0) * LEGEND_ROW
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT + extra}" '
        f'class="chart" role="img" font-size="12" font-family="system-ui, sans-serif">'
        f"<title>{escape(title)}</title><desc>{escape(description or title)}</desc>",
        f'<text x="{MARGIN_LEFT}" y="16" font-weight="600">{escape(title)}</text>',
    ]
    for j, name, x, row in legend:
        y = 22 + row * LEGEND_ROW
        parts.append(
            f'<rect x="{x:.0f}" y="{y}" width="10" height="10" fill="{_colour(j)}"/>'
            f'<text x="{x + 14:.0f}" y="{y + 9}">{escape(name)}</text>'
        )
    parts.append(f'<g transform="translate(0 {extra})">')
    return parts


def _close(parts: list[str]) -> str:
    parts.append("</g></svg>")
    return "".join(parts)


def _colour(j: int) -> str:
    return PALETTE[j % len(PALETTE)]


def heatmap(
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    counts: Sequence[Sequence[float]],
    *,
    title: str,
    x_label: str = "",
    y_label: str = "",
    description: str = "",
) -> str:
    """A grid of cells shaded by value (darker is more), each cell labelled with its value."""
    n_rows, n_cols = len(row_labels), len(column_labels)
    top = max((max(row, default=0) for row in counts), default=0) or 1
    cell_w = PLOT_W / max(n_cols, 1)
    cell_h = PLOT_H / max(n_rows, 1)
    parts = _open(title, description, [])
    for i, label in enumerate(row_labels):
        # Row 0 at the bottom, like a y axis.
        y = MARGIN_TOP + PLOT_H - (i + 1) * cell_h
        parts.append(
            f'<text x="{MARGIN_LEFT - 6}" y="{y + cell_h / 2 + 4:.1f}" text-anchor="end">'
            f"{escape(str(label))}</text>"
        )
        for j in range(n_cols):
            value = counts[i][j]
            shade = value / top
            x = MARGIN_LEFT + j * cell_w
            fill = f"rgba(194, 65, 12, {0.08 + 0.92 * shade:.3f})" if value else "#f5f3f0"
            ink = "#fff" if shade > 0.55 else "#1d232a"
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell_w - 1:.1f}" height="{cell_h - 1:.1f}" '
                f'fill="{fill}"><title>{escape(str(label))} × {escape(str(column_labels[j]))}: '
                f"{_fmt(value)}</title></rect>"
            )
            if value:
                parts.append(
                    f'<text x="{x + cell_w / 2:.1f}" y="{y + cell_h / 2 + 4:.1f}" '
                    f'text-anchor="middle" fill="{ink}" font-size="10">{_fmt(value)}</text>'
                )
    for j, label in enumerate(column_labels):
        parts.append(_tick(MARGIN_LEFT + (j + 0.5) * cell_w, escape(str(label))))
    parts.extend(_axis_labels(x_label, y_label))
    return _close(parts)
