"""Pure: one dataset's runs ranked under one label set, with intervals, marks and reliability. Per
run, from a :class:`~retrieval.scoring.rescoring.Rescoring`: original and corrected scores with
seeded bootstrap intervals, Judged@10, best and not-significantly-different marks (sign-flip test
with Holm's correction, among comparable runs), the labels' 95% intervals
(:mod:`retrieval.scoring.score_intervals`) and, for unpooled runs, the pooling bias (FIRE §4.2,
Table 4) and Webber & Park's (2009) adjusted estimate. Exports: :mod:`.leaderboard_formats`."""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from retrieval.json_data import JsonData, omitted_if_none
from retrieval.scoring import analysis, metrics
from retrieval.scoring.circularity import normalised_families, shared_families
from retrieval.scoring.rescoring import Rescoring, Scores
from retrieval.scoring.score_intervals import ScoreInterval

MEDR = "MedR"
SCORE_METRICS = ("C@1", "C@5", "C@10", "AP", "nDCG@10", MEDR)
"""The scored columns, in each block (original, corrected)."""
ADJUSTED_METRICS = ("C@1", "C@5", "C@10", "AP", "nDCG@10")
"""The columns Webber & Park's adjustment applies to (fractions; MedR is a rank)."""
LOWER_IS_BETTER = frozenset({MEDR})
JUDGED = "Judged@10"
JUDGED_ENOUGH = 0.9
"""Below this Judged@10 a row says in words that its corrected scores rest on few labels."""
BLOCKS = ("corrected", "original")
DEFAULT_RESAMPLES = 2_000
DEFAULT_PERMUTATIONS = 10_000
DEFAULT_LEVEL = 0.95
DEFAULT_ALPHA = 0.05
CIRCULAR_WARNING = "judged with help of a machine assessor of the same family: "


class SortError(ValueError):
    """A sort key that names no column."""


@dataclass(frozen=True)
class Cell:
    """One score with its bootstrap interval and marks: ``best`` (ties all marked), ``tied`` (Holm-
    adjusted p above alpha) and ``p_holm`` against the best run (None for a best run)."""

    value: float
    low: float
    high: float
    best: bool = False
    tied: bool = False
    p_holm: float | None = None


@dataclass(frozen=True)
class Row:
    """A run's row: ``bias`` and ``adjusted`` (an estimate) for measurable unpooled runs, ``true``
    under exhaustive relevance, ``intervals`` the labels' 95% interval per adjusted metric."""

    run: str
    model: str
    depth: int
    judged: float
    pooled: bool | None
    corrected: dict[str, Cell]
    original: dict[str, Cell] | None = omitted_if_none()
    bias: dict[str, float] | None = omitted_if_none()
    adjusted: dict[str, float] | None = omitted_if_none()
    true: dict[str, float] | None = omitted_if_none()
    notes: tuple[str, ...] = ()
    intervals: dict[str, ScoreInterval] = field(default_factory=dict)
    circular: bool = False
    """Judged partly by a machine assessor of the run's own model family (see
    :mod:`retrieval.scoring.circularity`); ``circular_families`` names them."""
    circular_families: tuple[str, ...] = ()

    @property
    def circular_warning(self) -> str:
        """The warning a circular row carries, empty otherwise."""
        if not self.circular:
            return ""
        return CIRCULAR_WARNING + ", ".join(self.circular_families)


@dataclass(frozen=True)
class Leaderboard(JsonData):
    """Every row, in the order asked for; ``bias`` is the mean leave-one-run-out error over
    ``bias_runs``, each run's own in ``loo_errors``."""

    dataset: str
    label_set: str | None
    queries: int
    sort: str
    level: float
    resamples: int
    permutations: int
    alpha: float
    seed: int
    rows: tuple[Row, ...]
    bias: dict[str, float] | None = omitted_if_none()
    loo_errors: dict[str, dict[str, float]] | None = omitted_if_none()
    bias_runs: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    assessor_families: tuple[str, ...] = ()
    """The model families of the machine assessors that fed the label set's campaigns."""

    def sorted_by(self, key: str) -> "Leaderboard":
        """The same board with its rows in ``key``'s order (see :func:`sort_rows`)."""
        return replace(self, rows=tuple(sort_rows(self.rows, key)), sort=key)


def mark_circular(
    board: Leaderboard, families: Sequence[str], run_models: Mapping[str, tuple[str, str]]
) -> Leaderboard:
    """``board`` with each row flagged whose run's model is of one of ``families`` (the label
    set's machine assessors'; :func:`~retrieval.scoring.circularity.shared_families`):
    ``run_models`` maps a run to its model's (encoder, name), the row's model name and no
    encoder where missing. LLM judges favour their own kind (Clarke & Dietz 2024)."""
    families = normalised_families(families)
    rows = []
    for row in board.rows:
        encoder, name = run_models.get(row.run, ("", row.model))
        shared = shared_families(families, encoder, name)
        rows.append(replace(row, circular=bool(shared), circular_families=shared))
    return replace(board, rows=tuple(rows), assessor_families=tuple(families))


def per_query(scores: Scores, metric: str) -> np.ndarray:
    """A run's per-query ``metric`` over its means' queries (R > 0); MedR: depth + 1 where none."""
    eligible = np.asarray(scores.judgements.n_relevant) > 0
    if metric == MEDR:
        ranks = scores.per_query[metrics.FIRST_POSITIVE][eligible]
        return np.where(np.isnan(ranks), scores.judgements.depth + 1.0, ranks)
    return np.asarray(scores.per_query[metric], dtype=np.float64)[eligible]


def mark_column(
    values: Mapping[str, np.ndarray],
    estimates: Mapping[str, float],
    *,
    lower_is_better: bool = False,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    alpha: float = DEFAULT_ALPHA,
) -> dict[str, tuple[bool, bool, float | None]]:
    """Per run: (best, not significantly different from the best, Holm-adjusted p). Each non-best
    run is compared with the first best one by a paired sign-flip randomization test on ``values``,
    Holm-corrected over those comparisons; a NaN estimate gets no mark."""
    sign = -1.0 if lower_is_better else 1.0
    scored = [run for run in estimates if not math.isnan(estimates[run])]
    marks: dict[str, tuple[bool, bool, float | None]] = dict.fromkeys(
        estimates, (False, False, None)
    )
    if not scored:
        return marks
    top = max(sign * estimates[run] for run in scored)
    best = [run for run in scored if sign * estimates[run] >= top - 1e-12]
    others = [run for run in scored if run not in best]
    leader = np.asarray(values[best[0]], dtype=np.float64)
    raw = [analysis.randomization_test(leader, values[run], permutations, seed) for run in others]
    marks.update(dict.fromkeys(best, (True, False, None)))
    for run, adjusted in zip(others, analysis.holm(raw), strict=True):
        marks[run] = (False, bool(adjusted > alpha), float(adjusted))
    return marks


def leave_one_out_errors(
    corrected: Mapping[str, Mapping[str, float]],
    left_out: Mapping[str, Mapping[str, float]],
    names: Sequence[str] = ADJUSTED_METRICS,
) -> dict[str, dict[str, float]]:
    """Per pooled run and metric, corrected minus leave-one-run-out score (FIRE Table 4)."""
    return {
        run: {m: float(corrected[run][m]) - float(left_out[run][m]) for m in names}
        for run in left_out
        if run in corrected
    }


def mean_error(errors: Mapping[str, Mapping[str, float]]) -> dict[str, float] | None:
    """The mean leave-one-run-out error per metric over the pooled runs (None without any)."""
    if not errors:
        return None
    names = next(iter(errors.values())).keys()
    return {m: float(np.mean([run[m] for run in errors.values()])) for m in names}


def webber_park(scores: Mapping[str, float], bias: Mapping[str, float]) -> dict[str, float]:
    """Webber & Park's (2009) adjusted estimate: the score plus the pooled runs' mean leave-one-out
    error (:func:`mean_error`), clipped to [0, 1]."""
    return {m: min(1.0, max(0.0, float(scores[m]) + float(bias[m]))) for m in bias}


def build(
    result: Rescoring,
    *,
    dataset: str,
    label_set: str | None,
    models: Mapping[str, str] | None = None,
    pooled_runs: Sequence[str] | None = None,
    sort: str = "C@1",
    resamples: int = DEFAULT_RESAMPLES,
    permutations: int = DEFAULT_PERMUTATIONS,
    level: float = DEFAULT_LEVEL,
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
) -> Leaderboard:
    """The leaderboard of ``result``'s runs, seeded from ``seed``, block and metric. ``models``: run
    -> model name (the run's name where missing); ``pooled_runs``: None when the label set does not
    say (pooled reads "unknown", no bias shown)."""
    sort_key(sort)  # refuse a bad key before the work
    runs = list(result.blocks.get("corrected", {}))
    pooled_set = None if pooled_runs is None else set(pooled_runs)
    # Corrected scores of unpooled runs are biased low (FIRE §4.2): ranked among pooled only.
    comparable = {
        "corrected": runs if pooled_set is None else [run for run in runs if run in pooled_set],
        "original": runs,
    }
    cells = _cells(result, runs, comparable, resamples, permutations, level, alpha, seed)
    errors = leave_one_out_errors(result.means("corrected"), result.means("leave_one_out"))
    bias = mean_error(errors)
    unpooled = [run for run in runs if run not in comparable["corrected"]]
    board = Leaderboard(
        dataset=dataset,
        label_set=label_set,
        queries=result.n_queries,
        sort=sort,
        level=level,
        resamples=resamples,
        permutations=permutations,
        alpha=alpha,
        seed=seed,
        rows=tuple(_rows(result, runs, cells, models or {}, pooled_set, bias)),
        bias=bias,
        bias_runs=tuple(errors),
        loo_errors=errors or None,
        notes=(*_board_notes(unpooled, pooled_set is None, bias), *result.notes),
    )
    return board.sorted_by(sort)


def _cells(
    result: Rescoring,
    runs: list[str],
    comparable: dict[str, list[str]],
    resamples: int,
    permutations: int,
    level: float,
    alpha: float,
    seed: int,
) -> dict[str, dict[str, dict[str, Cell]]]:
    """Every block's, run's and metric's cell, marked among the block's comparable runs."""
    cells: dict[str, dict[str, dict[str, Cell]]] = {
        block: {run: {} for run in runs} for block in BLOCKS
    }
    for b, block in enumerate(BLOCKS):
        scores = result.blocks.get(block, {})
        if not scores:
            continue
        for m, metric in enumerate(SCORE_METRICS):
            stream = int(np.random.SeedSequence([seed, b, m]).generate_state(1)[0])
            values = {run: per_query(scores[run], metric) for run in runs}
            if not all(len(v) for v in values.values()):
                for run in runs:
                    cells[block][run][metric] = Cell(math.nan, math.nan, math.nan)
                continue
            statistic = "median" if metric == MEDR else "mean"
            intervals = analysis.bootstrap_intervals(values, statistic, resamples, stream, level)
            tested = values
            if metric == MEDR:  # compare ranks on the depth every run reaches
                cap = min(scores[run].judgements.depth for run in runs) + 1.0
                tested = {run: np.minimum(v, cap) for run, v in values.items()}
            ranked = comparable[block]
            marks = mark_column(
                {run: tested[run] for run in ranked},
                {run: intervals[run].estimate for run in ranked},
                lower_is_better=metric in LOWER_IS_BETTER,
                permutations=permutations,
                seed=stream,
                alpha=alpha,
            )
            for run, interval in intervals.items():
                best, tied, p_holm = marks.get(run, (False, False, None))
                cells[block][run][metric] = Cell(
                    interval.estimate, interval.low, interval.high, best, tied, p_holm
                )
    return cells


def _board_notes(unpooled: list[str], pooled_unknown: bool, bias: dict | None) -> list[str]:
    """What the board says under its table about pooling and its bias."""
    notes = []
    if unpooled:
        notes.append(
            "Best and not-significantly-different marks in the corrected columns are among the "
            f"pooled runs only; {', '.join(unpooled)} "
            f"{'was' if len(unpooled) == 1 else 'were'} not pooled, so "
            f"{'its' if len(unpooled) == 1 else 'their'} corrected scores count only positives "
            "the pooled runs found and are biased low (FIRE §4.2): not comparable, and not "
            "marked (the adjusted estimate beside them corrects for it)."
        )
    if pooled_unknown:
        notes.append(
            "The label set does not record which runs were pooled, so no run is known to be "
            "unpooled and no pooling bias is shown."
        )
    elif bias is None:
        notes.append(
            "No pooled run could be left out (the label set records no pool depth, or its "
            "pooled runs are not among this dataset's runs), so the pooling bias is unknown."
        )
    return notes


def _rows(
    result: Rescoring,
    runs: list[str],
    cells: dict[str, dict[str, dict[str, Cell]]],
    models: Mapping[str, str],
    pooled_set: set[str] | None,
    bias: dict[str, float] | None,
) -> list[Row]:
    """One row per run: cells, pooled, adjusted (Webber & Park 2009) and true scores, notes."""
    corrected, original, true = (
        result.blocks.get(b, {}) for b in ("corrected", "original", "true")
    )
    intervals = result.intervals  # computed here, once per board
    rows = []
    for run in runs:
        judged = float(corrected[run].means.get(JUDGED, math.nan))
        pooled = None if pooled_set is None else run in pooled_set
        adjusted = pooled is False and bias is not None
        row_notes = []
        if adjusted:
            row_notes.append(
                "Not pooled: only the videos other runs also found are judged, so its "
                "corrected scores are likely too low; the adjusted figures are an estimate "
                "(Webber & Park 2009)."
            )
        elif pooled is False:
            row_notes.append("Not pooled: its corrected scores are likely too low.")
        if not math.isnan(judged) and judged < JUDGED_ENOUGH:
            row_notes.append(
                f"Only {judged:.0%} of its top 10 is judged (under {JUDGED_ENOUGH:.0%}): the "
                "unjudged videos count as not relevant, so its corrected scores may be "
                "well below the truth."
            )
        rows.append(
            Row(
                run=run,
                model=models.get(run, run),
                depth=corrected[run].judgements.depth,
                judged=judged,
                pooled=pooled,
                corrected=cells["corrected"][run],
                original=cells["original"][run] if original else None,
                bias=bias if adjusted else None,
                adjusted=webber_park(corrected[run].means, bias) if adjusted else None,
                true={m: float(true[run].means[m]) for m in ADJUSTED_METRICS}
                if run in true
                else None,
                notes=tuple(row_notes),
                intervals={
                    m: intervals[run][m] for m in ADJUSTED_METRICS if m in intervals.get(run, {})
                },
            )
        )
    return rows


TEXT_KEYS = ("run", "model")
OTHER_KEYS = (JUDGED, "pooled")


def sort_keys() -> tuple[str, ...]:
    """Every key :func:`sort_rows` takes; a leading ``-`` reverses any."""
    return (*SCORE_METRICS, *(f"original:{m}" for m in SCORE_METRICS), *OTHER_KEYS, *TEXT_KEYS)


def sort_key(key: str) -> tuple[str, str, bool]:
    """``key`` read as (block or kind, column, reversed); SortError if it names no column."""
    reverse = key.startswith("-")
    name = key[1:] if reverse else key
    if name in SCORE_METRICS:
        return "corrected", name, reverse
    if name.startswith("original:") and name[len("original:") :] in SCORE_METRICS:
        return "original", name[len("original:") :], reverse
    if name in OTHER_KEYS or name in TEXT_KEYS:
        return name, name, reverse
    raise SortError(
        f"cannot sort by {key[:40]!r}: choose one of {', '.join(sort_keys())} "
        "(a leading '-' reverses the order)"
    )


def sort_rows(rows: Sequence[Row], key: str) -> list[Row]:
    """Rows in ``key``'s order: best first, names alphabetically, missing values last (also when
    reversed), ties by run name."""
    kind, column, reverse = sort_key(key)

    def value(row: Row) -> float | str | None:
        if kind in TEXT_KEYS:
            return getattr(row, kind).lower()
        if kind == JUDGED:
            return -row.judged
        if kind == "pooled":
            return None if row.pooled is None else -float(row.pooled)
        block = row.corrected if kind == "corrected" else row.original
        if block is None or column not in block or math.isnan(block[column].value):
            return None
        sign = 1.0 if column in LOWER_IS_BETTER else -1.0
        return sign * block[column].value

    by_name = sorted(rows, key=lambda row: row.run)
    known = [row for row in by_name if value(row) is not None and value(row) == value(row)]
    missing = [row for row in by_name if row not in known]
    return sorted(known, key=value, reverse=reverse) + missing
