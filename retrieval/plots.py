"""Small, dependency-free SVG charts for report pages.

Charts are built from plain numbers and returned as SVG markup with every text escaped, so
templates can include them with ``|safe``. They are static pictures, readable without
JavaScript, and each carries a ``<title>`` and ``<desc>`` for screen readers.
"""

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
PALETTE = ("#c2410c", "#1d4ed8", "#15803d", "#7c3aed", "#b91c1c", "#0f766e", "#a16207")


@dataclass(frozen=True)
class Series:
    """A named sequence of values, one per category (None: no value)."""

    name: str
    values: Sequence[float | None]


def nice_max(value: float) -> float:
    """A round upper bound for an axis: 1, 2 or 5 times a power of ten, at least ``value``."""
    if value <= 0:
        return 1.0
    power = 10.0 ** _floor_log10(value)
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power


def _floor_log10(value: float) -> int:
    exponent = 0
    while value >= 10:
        value /= 10
        exponent += 1
    while value < 1:
        value *= 10
        exponent -= 1
    return exponent


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
    description: str = "",
) -> str:
    """Grouped vertical bars: one group per category, one bar per series."""
    top = _axis_top(series, y_max)
    n = max(len(categories), 1)
    group_w = PLOT_W / n
    bar_w = group_w * 0.8 / max(len(series), 1)
    parts = _frame(title, description or title, y_label, top)
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
                f'fill="{PALETTE[j % len(PALETTE)]}"><title>{escape(s.name)} · '
                f"{escape(str(category))}: {_fmt(value)}</title></rect>"
            )
        parts.append(
            f'<text x="{MARGIN_LEFT + (i + 0.5) * group_w:.1f}" y="{HEIGHT - MARGIN_BOTTOM + 16}" '
            f'text-anchor="middle">{escape(str(category))}</text>'
        )
    parts.extend(_axis_labels(x_label, ""))
    parts.extend(_legend(series))
    parts.append("</svg>")
    return "".join(parts)


def line_chart(
    x_values: Sequence[float],
    series: Sequence[Series],
    *,
    title: str,
    x_label: str = "",
    y_label: str = "",
    y_max: float | None = None,
    description: str = "",
) -> str:
    """Lines with point markers over a numeric x axis (one line per series)."""
    top = _axis_top(series, y_max)
    low, high = (min(x_values), max(x_values)) if x_values else (0.0, 1.0)
    span = (high - low) or 1.0
    parts = _frame(title, description or title, y_label, top)

    def xy(x: float, y: float) -> tuple[float, float]:
        return (
            MARGIN_LEFT + PLOT_W * (x - low) / span,
            MARGIN_TOP + PLOT_H - PLOT_H * min(max(y / top, 0.0), 1.0),
        )

    for j, s in enumerate(series):
        colour = PALETTE[j % len(PALETTE)]
        points = [xy(x, y) for x, y in zip(x_values, s.values, strict=True) if y is not None]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        for (x, y), (xv, yv) in zip(
            points,
            [(x, y) for x, y in zip(x_values, s.values, strict=True) if y is not None],
            strict=True,
        ):
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>'
                f"{escape(s.name)} at {_fmt(xv)}: {_fmt(yv)}</title></circle>"
            )
    for x in _ticks(low, high):
        px, _ = xy(x, 0)
        parts.append(
            f'<text x="{px:.1f}" y="{HEIGHT - MARGIN_BOTTOM + 16}" text-anchor="middle">'
            f"{_fmt(x)}</text>"
        )
    parts.extend(_axis_labels(x_label, ""))
    parts.extend(_legend(series))
    parts.append("</svg>")
    return "".join(parts)


def _axis_top(series: Sequence[Series], y_max: float | None) -> float:
    if y_max is not None:
        return y_max
    return nice_max(max((v for s in series for v in s.values if v is not None), default=0.0))


def _ticks(low: float, high: float, count: int = 6) -> list[float]:
    if high <= low:
        return [low]
    step = (high - low) / (count - 1)
    return [low + i * step for i in range(count)]


def _frame(title: str, description: str, y_label: str, top: float) -> list[str]:
    parts = _header(title, description)
    for i in range(5):
        value = top * i / 4
        y = MARGIN_TOP + PLOT_H - PLOT_H * i / 4
        parts.append(
            f'<line x1="{MARGIN_LEFT}" x2="{WIDTH - MARGIN_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#e3dfd9"/><text x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{_fmt(value)}</text>'
        )
    parts.extend(_axis_labels("", y_label))
    return parts


def _header(title: str, description: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'class="chart" role="img" font-size="12" font-family="system-ui, sans-serif">'
        f"<title>{escape(title)}</title><desc>{escape(description or title)}</desc>",
        f'<text x="{MARGIN_LEFT}" y="16" font-weight="600">{escape(title)}</text>',
    ]


def _axis_labels(x_label: str, y_label: str) -> list[str]:
    parts = []
    if x_label:
        parts.append(
            f'<text x="{MARGIN_LEFT + PLOT_W / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle" '
            f'class="axis-label">{escape(x_label)}</text>'
        )
    if y_label:
        parts.append(
            f'<text transform="translate(14 {MARGIN_TOP + PLOT_H / 2:.1f}) rotate(-90)" '
            f'text-anchor="middle" class="axis-label">{escape(y_label)}</text>'
        )
    return parts


def _legend(series: Sequence[Series]) -> list[str]:
    if len(series) < 2:
        return []
    parts = []
    x = WIDTH - MARGIN_RIGHT
    for j, s in reversed(list(enumerate(series))):
        width = 14 + 7 * len(s.name)
        x -= width + 10
        parts.append(
            f'<rect x="{x:.0f}" y="22" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>'
            f'<text x="{x + 14:.0f}" y="31">{escape(s.name)}</text>'
        )
    return parts


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
    parts = _header(title, description)
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
        parts.append(
            f'<text x="{MARGIN_LEFT + (j + 0.5) * cell_w:.1f}" y="{HEIGHT - MARGIN_BOTTOM + 16}" '
            f'text-anchor="middle">{escape(str(label))}</text>'
        )
    parts.extend(_axis_labels(x_label, y_label))
    parts.append("</svg>")
    return "".join(parts)
