"""Pure: a :class:`~retrieval.scoring.leaderboard.Leaderboard` as text, CSV, JSON, LaTeX and the
page's display cells, so every output reads the numbers the same way. Scores show in points, MedR as
a rank; CSV and JSON carry raw fractions. LaTeX has a row per run or FIRE Table 1's layout
(Rodriguez et al. 2022, §2.2.1: "A (B + C)" cells). The labels' 95% intervals (``Row.intervals``)
follow the scores: ``[low–high]`` on the page and in text, CSV columns after ``notes`` (so no column
moves), ``\\scriptsize`` in LaTeX, a legend once per table. A run judged partly by a machine
assessor of its own family says so (the CSV's last column, a note in text, a flag in JSON)."""

import json
import math
from collections import Counter
from dataclasses import dataclass, replace

from retrieval.formats.csv_safety import csv_line
from retrieval.scoring.leaderboard import (
    ADJUSTED_METRICS,
    BLOCKS,
    JUDGED,
    JUDGED_ENOUGH,
    MEDR,
    SCORE_METRICS,
    Cell,
    Leaderboard,
    Row,
)
from retrieval.scoring.rescoring import (
    interval_legend,
    interval_text,
    points,
    shown_value,
    table_cell,
)
from retrieval.scoring.score_intervals import ACTIVE, ScoreInterval

FORMATS = ("table", "csv", "json", "latex")
LATEX_LAYOUTS = ("rows", "fire")
BLOCK_TITLES = {"corrected": "Corrected", "original": "Original"}


def value_text(metric: str, value: float | None, depth: int | None = None) -> str:
    """A score as shown: points with one decimal, MedR as a rank ("> depth" past the list)."""
    if value is None or math.isnan(value):
        return "–"
    if metric == MEDR:
        if depth is not None and value > depth:
            return f"> {depth}"
        return f"{round(value, 1):g}"
    return points(value)


def row_label(row: Row) -> str:
    """The model's name, with the run's in parentheses when they differ."""
    return row.model if row.model == row.run else f"{row.model} ({row.run})"


def pooled_text(pooled: bool | None) -> str:
    return "unknown" if pooled is None else ("yes" if pooled else "no")


@dataclass(frozen=True)
class DisplayCell:
    """A cell of the page: its text, interval text and marks."""

    text: str
    interval: str
    best: bool
    tied: bool
    title: str
    first: bool = False
    """The first column of its block (the page draws a rule before it)."""
    show_interval: bool = True
    """Whether the interval is printed under the value (else only in the tooltip)."""
    labels: str = ""
    """The corrected score's interval from the labels, ``[low–high]``; empty where exact or none."""


def display_cell(
    metric: str, cell: Cell | None, depth: int, labels: ScoreInterval | None = None
) -> DisplayCell:
    """How the page shows ``cell``: value, ``[low, high]``, the labels' interval and a tooltip."""
    if cell is None:
        return DisplayCell("–", "", False, False, "")
    low, high = value_text(metric, cell.low, depth), value_text(metric, cell.high, depth)
    interval = f"[{low}, {high}]" if not math.isnan(cell.low) else ""
    title = f"bootstrap interval {interval}" if interval else ""
    label_text = interval_text(labels)
    if label_text:
        mostly = f"; mostly {labels.dominant}" if labels.dominant else ""
        title += f"; interval from the labels {label_text} ({', '.join(labels.parts)}{mostly})"
    elif labels is not None:
        title += "; exact under the labels"
    if cell.best:
        title += "; best in this column"
    elif cell.tied:
        title += (
            f"; not significantly different from the best (Holm-adjusted p = {cell.p_holm:.3f})"
        )
    elif cell.p_holm is not None:
        title += f"; significantly worse than the best (Holm-adjusted p = {cell.p_holm:.3f})"
    return DisplayCell(
        value_text(metric, cell.value, depth),
        interval,
        cell.best,
        cell.tied,
        title.removeprefix("; "),
        labels=label_text,
    )


@dataclass(frozen=True)
class Column:
    """A score column of the page: its block, metric, title and sort key."""

    block: str
    metric: str
    key: str
    first: bool = False


@dataclass(frozen=True)
class DisplayRow:
    """A row of the page: the run's row and its cells as text, corrected block first."""

    row: Row
    label: str
    pooled: str
    judged: str
    judged_low: bool
    cells: tuple[DisplayCell, ...]
    estimates: tuple[tuple[str, str, str], ...]
    """Per adjusted metric: (metric, Webber & Park estimate, bias in signed points)."""
    true: tuple[tuple[str, str], ...] = ()
    """Per adjusted metric: (metric, score under exhaustive relevance), synthetic data only."""


@dataclass(frozen=True)
class Display:
    """The page's table: score columns (corrected, then original when known) and rows."""

    columns: tuple[Column, ...]
    rows: tuple[DisplayRow, ...]
    loo_errors: tuple[tuple[str, str], ...]
    """Per pooled run, its leave-one-run-out errors as text."""
    legend: str = ""
    """What the labels' intervals under the corrected scores hold, once for the table."""

    @property
    def labels_shown(self) -> bool:
        """Whether some corrected score shows an interval from the labels (not exact)."""
        return any(cell.labels for row in self.rows for cell in row.cells)

    def blocks(self) -> list[tuple[str, int]]:
        """(title, column count) per block, for the header's first line."""
        counts = Counter(column.block for column in self.columns)
        return [(BLOCK_TITLES[block], n) for block, n in counts.items()]


def leaderboard_columns(board: Leaderboard) -> Display:
    """The page's view of ``board``: every score as text with its interval and marks."""
    columns = tuple(
        Column(block, m, m if block == "corrected" else f"{block}:{m}", i == 0)
        for block in _blocks(board)
        for i, m in enumerate(SCORE_METRICS)
    )
    rows = []
    for row in board.rows:
        cells = tuple(_page_cell(row, column) for column in columns)
        rows.append(
            DisplayRow(
                row=row,
                label=row_label(row),
                pooled=pooled_text(row.pooled),
                judged=value_text(JUDGED, row.judged),
                judged_low=not math.isnan(row.judged) and row.judged < JUDGED_ENOUGH,
                cells=cells,
                estimates=tuple(
                    (m, value_text(m, row.adjusted[m]), points(row.bias[m], signed=True))
                    for m in ADJUSTED_METRICS
                    if row.adjusted and row.bias
                ),
                true=tuple((m, value_text(m, row.true[m])) for m in ADJUSTED_METRICS if row.true),
            )
        )
    errors = tuple((run, _signed(error)) for run, error in (board.loo_errors or {}).items())
    shown = _label_intervals(board)
    return Display(columns, tuple(rows), errors, interval_legend(shown) if shown else "")


def _page_cell(row: Row, column: Column) -> DisplayCell:
    """The page's cell of ``row`` in ``column``, the labels' interval under corrected scores."""
    labels = row.intervals.get(column.metric) if column.block == "corrected" else None
    scored = (getattr(row, column.block) or {}).get(column.metric)
    cell = display_cell(column.metric, scored, row.depth, labels)
    return _one_interval(cell, labels, column, row.depth)


def _one_interval(
    cell: DisplayCell, labels: ScoreInterval | None, column: Column, depth: int
) -> DisplayCell:
    """One bracket per score: a corrected score the labels leave uncertain shows only the
    labels' interval (the bootstrap's stays in the tooltip), and an active estimate shows its
    own value; an exact one shows its bootstrap interval; other blocks show none."""
    if labels is not None and ACTIVE in labels.parts:
        cell = replace(cell, text=value_text(column.metric, labels.value, depth))
    shown = column.block == "corrected" and not cell.labels
    return replace(cell, first=column.first, show_interval=shown)


def render(board: Leaderboard, fmt: str, *, layout: str = "rows") -> str:
    """``board`` in one of :data:`FORMATS` (``layout`` is LaTeX's)."""
    writers = {
        "table": to_text,
        "csv": to_csv,
        "json": lambda board: json.dumps(board.to_json(), indent=2),
        "latex": lambda board: to_latex(board, layout=layout),
    }
    if fmt not in writers:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    return writers[fmt](board)


def _number(value: float | None) -> float | str:
    """A float for the CSV writer to write as a number (never escaped), empty if unknown."""
    return "" if value is None or math.isnan(value) else float(value)


def csv_header() -> list[str]:
    header = ["run", "model", "pooled", JUDGED]
    ends = ("", " low", " high", " mark")
    header += [f"{block} {m}{end}" for block in BLOCKS for m in SCORE_METRICS for end in ends]
    for name in ("bias {}", "adjusted {} (estimate)", "true {}"):
        header += [name.format(m) for m in ADJUSTED_METRICS]
    labels = [f"corrected {m} labels {end}" for m in ADJUSTED_METRICS for end in LABEL_ENDS]
    return [*header, "notes", *labels, "circular families"]


LABEL_ENDS = ("low", "high", "parts")
"""The CSV's columns per metric for the labels' 95% interval, after ``notes``."""


def to_csv(board: Leaderboard) -> str:
    """One line per run, raw fractions (MedR a rank), blank where unknown, formula-like names
    neutralised (:mod:`retrieval.formats.csv_safety`)."""
    lines = [csv_line(csv_header())]
    for row in board.rows:
        line = [row.run, row.model, pooled_text(row.pooled), _number(row.judged)]
        for block in BLOCKS:
            cells = getattr(row, block) or {}
            for m in SCORE_METRICS:
                cell = cells.get(m)
                values = (cell.value, cell.low, cell.high) if cell else (None, None, None)
                mark = "best" if cell and cell.best else ("tied" if cell and cell.tied else "")
                line += [*map(_number, values), mark]
        for values in (row.bias, row.adjusted, row.true):
            line += [_number(values[m]) if values else "" for m in ADJUSTED_METRICS]
        line.append(" ".join(row.notes))
        for m in ADJUSTED_METRICS:
            interval = row.intervals.get(m)
            ends = (interval.low, interval.high) if interval else (None, None)
            line += [*map(_number, ends), "; ".join(interval.parts) if interval else ""]
        lines.append(csv_line([*line, " ".join(row.circular_families)]))
    return "".join(lines)


def _blocks(board: Leaderboard) -> list[str]:
    """The blocks (:data:`BLOCKS` order) some row has scores in."""
    return [block for block in BLOCKS if any(getattr(row, block) for row in board.rows)]


def _label_intervals(board: Leaderboard) -> list[ScoreInterval]:
    return [interval for row in board.rows for interval in row.intervals.values()]


def _listed(scores: dict[str, float]) -> str:
    return ", ".join(f"{m} {value_text(m, scores[m])}" for m in ADJUSTED_METRICS)


def _signed(errors: dict[str, float]) -> str:
    return ", ".join(f"{m} {points(errors[m], signed=True)}" for m in ADJUSTED_METRICS)


def to_text(board: Leaderboard) -> str:
    """A plain-text table for the terminal ("*" best, "~" not significantly different from it)."""
    lines = [
        f"{board.dataset}, label set {board.label_set or '(none)'}: {board.queries} queries; "
        f"{100 * board.level:g}% bootstrap intervals; * best, ~ not significantly different "
        f"(Holm, alpha {board.alpha:g}); sorted by {board.sort}"
    ]
    width = max([len("run"), *(len(row.run) for row in board.rows)]) + 2
    for block in _blocks(board):
        lines += ["", f"{BLOCK_TITLES[block]} positives"]
        head = "run".ljust(width) + "pooled   " + f"{JUDGED:>10}"
        lines.append(head + "".join(f"{m:>22}" for m in SCORE_METRICS))
        for row in board.rows:
            cells = getattr(row, block) or {}
            text = row.run.ljust(width) + f"{pooled_text(row.pooled):9}"
            text += f"{value_text(JUDGED, row.judged):>10}"
            for m in SCORE_METRICS:
                shown = display_cell(m, cells.get(m), row.depth)
                mark = "*" if shown.best else ("~" if shown.tied else " ")
                text += f"{shown.text + mark + ' ' + shown.interval:>22}"
            lines.append(text)
    shown = _label_intervals(board)
    if any(interval.parts for interval in shown):
        lines += [
            "",
            f"Corrected scores with their intervals [low–high] from the labels. {interval_legend(shown)}",
        ]
        lines += [
            row.run.ljust(width)
            + "; ".join(
                f"{m} {value_text(m, i.value)} {interval_text(i) or 'exact'}"
                for m, i in row.intervals.items()
            )
            for row in board.rows
        ]
    if board.bias is not None:
        runs = ", ".join(board.bias_runs)
        lines += [
            "",
            f"Pooling bias (mean leave-one-run-out error of {runs}): {_signed(board.bias)}",
        ]
        lines += [
            f"{row.run}: adjusted estimate (Webber & Park 2009) {_listed(row.adjusted)}"
            for row in board.rows
            if row.adjusted
        ]
    lines += [
        f"{row.run}: true (exhaustive ground truth) {_listed(row.true)}"
        for row in board.rows
        if row.true
    ]
    for row in board.rows:
        lines += [f"note on {row.run}: {note}" for note in row.notes]
        if row.circular:
            lines.append(f"note on {row.run}: {row.circular_warning}")
    lines += [f"note: {note}" for note in board.notes]
    return "\n".join(lines) + "\n"


LATEX_SPECIALS = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
        **{char: "\\" + char for char in "&%$#_{}"},
    }
)


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return text.translate(LATEX_SPECIALS)


def to_latex(board: Leaderboard, *, layout: str = "rows") -> str:
    """A booktabs table (needs ``\\usepackage{booktabs}``) in one of :data:`LATEX_LAYOUTS`."""
    if layout not in LATEX_LAYOUTS:
        raise ValueError(
            f"unknown LaTeX layout {layout!r} (choose from {', '.join(LATEX_LAYOUTS)})"
        )
    body = _latex_fire(board) if layout == "fire" else _latex_rows(board)
    caption = (
        f"{latex_escape(board.dataset)}, label set {latex_escape(board.label_set or '(none)')}, "
        f"{board.queries} queries."
    )
    if layout == "fire":
        caption += (
            r" ``A (B + C)'': score with the corrected positives (A), with the original "
            r"positives only (B), and the difference (C), in \%."
        )
    shown = _label_intervals(board)
    if any(i.parts for i in shown):
        caption += " Brackets: " + latex_escape(interval_legend(shown)).replace("–", "--")
    else:
        caption += (
            r" Scores in \%, MedR in ranks. Bold: best in the column; underlined: not "
            r"significantly different from the best (paired randomization test, Holm, "
            f"$\\alpha = {board.alpha:g}$)."
        )
    preamble = ["% requires \\usepackage{booktabs}", "\\begin{table}[t]", "\\centering"]
    return "\n".join([*preamble, *body, f"\\caption{{{caption}}}", "\\end{table}", ""])


def _latex_value(
    metric: str, cell: Cell | None, depth: int, interval: ScoreInterval | None = None
) -> str:
    """A cell's score, bold when best, underlined when tied, then its labels' interval, small."""
    if cell is None:
        return "--"
    value = shown_value(cell.value, interval)
    text = value_text(metric, value, depth).replace("–", "--").replace(">", "$>$")
    if cell.best:
        text = f"\\textbf{{{text}}}"
    elif cell.tied:
        text = f"\\underline{{{text}}}"
    return text + _latex_interval(interval)


def _latex_interval(interval: ScoreInterval | None) -> str:
    bracket = interval_text(interval).replace("–", "--")
    return f" {{\\scriptsize {bracket}}}" if bracket else ""


def _latex_rows(board: Leaderboard) -> list[str]:
    blocks = _blocks(board)[::-1]
    n = len(SCORE_METRICS)
    spec = "l" + "r" * (n * len(blocks)) + "rr"
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule"]
    groups, rules = [""], []
    for i, block in enumerate(blocks):
        groups.append(f"\\multicolumn{{{n}}}{{c}}{{{BLOCK_TITLES[block]}}}")
        rules.append(f"\\cmidrule(lr){{{2 + i * n}-{1 + (i + 1) * n}}}")
    lines += [" & ".join([*groups, "", ""]) + " \\\\", " ".join(rules)]
    names = [latex_escape(m) for m in SCORE_METRICS] * len(blocks)
    lines += [" & ".join(["Model", *names, "Judged@10", "Pooled"]) + " \\\\", "\\midrule"]
    for row in board.rows:
        cells = [latex_escape(row_label(row))]
        for block in blocks:
            scored = getattr(row, block) or {}
            held = row.intervals if block == "corrected" else {}
            cells += [_latex_value(m, scored.get(m), row.depth, held.get(m)) for m in SCORE_METRICS]
        cells += [value_text(JUDGED, row.judged).replace("–", "--"), pooled_text(row.pooled)]
        lines.append(" & ".join(cells) + " \\\\")
    return [*lines, "\\bottomrule", "\\end{tabular}"]


def _latex_fire(board: Leaderboard) -> list[str]:
    """FIRE Table 1: metrics down, runs across, "A (B + C)" cells (no MedR: a rank has no gain)."""
    header = " & ".join(["Metric", *(latex_escape(row_label(row)) for row in board.rows)])
    lines = [f"\\begin{{tabular}}{{l{'r' * len(board.rows)}}}", "\\toprule"]
    lines += [header + " \\\\", "\\midrule"]
    for m in ADJUSTED_METRICS:
        cells = [latex_escape(m)]
        for row in board.rows:
            corrected = row.corrected.get(m)
            original = row.original.get(m) if row.original else None
            if corrected is None or math.isnan(corrected.value):
                cells.append("--")
                continue
            base = None if original is None or math.isnan(original.value) else original.value
            text = table_cell(corrected.value, base).replace("− ", "$-$ ")
            cells.append(text + "\\%" + _latex_interval(row.intervals.get(m)))
        lines.append(" & ".join(cells) + " \\\\")
    return [*lines, "\\bottomrule", "\\end{tabular}"]
