"""The researcher's report on a dataset: FIRE Tables 1, 3 and 4 and Figures 2-4, 11 and 12.
:func:`build_report` re-scores the dataset's runs and runs :mod:`retrieval.scoring.analysis` on
them; score maps are keyed by the metrics of :data:`TABLE_METRICS`."""

from dataclasses import dataclass

import numpy as np

from jobs import figures
from retrieval.json_data import JsonData, omitted_if_none, plain
from retrieval.models import Dataset, LabelSet
from retrieval.scoring import analysis, estimation
from retrieval.scoring.rescoring_service import RescoreError, rescore_dataset, rescoring_inputs
from retrieval.scoring.score_intervals import ScoreInterval

TABLE_METRICS = ("C@1", "C@5", "C@10", "AP", "nDCG@10")
BUDGET_SIZES = (50, 100, 250, 500, 1000, 3000)
RBO_P = 0.9
OVERLAP_K = 10

Scores = dict[str, float]
"""Mean score per metric of :data:`TABLE_METRICS`."""


@dataclass(frozen=True)
class Table1Row:
    """FIRE Table 1: a run's corrected means (with their 95% intervals), original and true ones."""

    run: str
    corrected: Scores
    intervals: dict[str, ScoreInterval]
    original: Scores | None = omitted_if_none()
    true: Scores | None = omitted_if_none()
    pooling_bias: Scores | None = omitted_if_none()


@dataclass(frozen=True)
class OverlapRow:
    """FIRE Table 3: mean top-k overlap and extrapolated RBO of two runs."""

    run_a: str
    run_b: str
    overlap: float | None
    rbo: float | None


@dataclass(frozen=True)
class OverlapTable:
    k: int
    p: float
    rows: tuple[OverlapRow, ...]


@dataclass(frozen=True)
class SettledRow:
    """A run's corrected means and how settled each is when judging stopped early."""

    run: str
    scores: tuple[estimation.Score, ...]


@dataclass(frozen=True)
class Table4Row:
    """FIRE Table 4: a run's means with and without the positives only its pool found."""

    run: str
    corrected: Scores
    leave_one_out: Scores
    drop: Scores
    unpooled_bias: Scores | None = omitted_if_none()


@dataclass(frozen=True)
class HistogramFigure:
    """Queries per number of positives (FIRE Fig. 11)."""

    labels: list[str]
    counts: list[int]


@dataclass(frozen=True)
class HeatmapFigure:
    """Queries by caption length (rows) and positives per query (columns), FIRE Fig. 2."""

    row_labels: list[str]
    column_labels: list[str]
    counts: list[list[int]]


@dataclass(frozen=True)
class ByLengthFigure:
    """Queries per caption-length bin and each run's mean ``metric`` there (FIRE Fig. 3)."""

    metric: str
    labels: list[str]
    counts: list[int]
    share: dict[str, list[float | None]]


@dataclass(frozen=True)
class PositiveRanksFigure:
    """Positives per rank of one run, original ones apart from judged ones (FIRE Fig. 12)."""

    run: str
    ranks: list[int]
    original: list[int]
    judged: list[int]


@dataclass(frozen=True)
class Figures:
    positives_per_query: HistogramFigure
    length_positives: HeatmapFigure
    correct_by_length: ByLengthFigure
    true_positives_per_query: HistogramFigure | None = omitted_if_none()
    positive_ranks: PositiveRanksFigure | None = omitted_if_none()


@dataclass(frozen=True)
class BudgetErrors:
    """Errors of a score from N sampled queries against the full set (FIRE §4.3)."""

    mean: float
    p50: float
    p95: float


@dataclass(frozen=True)
class Budget:
    metric: str
    sizes: list[int]
    resamples: int
    runs: dict[str, dict[str, BudgetErrors]]
    """Per run, per sample size (as a string, the JSON's key), the errors."""


@dataclass(frozen=True)
class SignificanceRow:
    """Two runs compared on per-query scores (:func:`retrieval.scoring.analysis.compare_runs`)."""

    run_a: str
    run_b: str
    mean_a: float
    mean_b: float
    difference: float
    ci_low: float
    ci_high: float
    p: float
    p_holm: float
    significant: bool


@dataclass(frozen=True)
class Significance:
    metric: str
    rows: tuple[SignificanceRow, ...]


@dataclass(frozen=True)
class Report(JsonData):
    """Every table and figure of the report; :meth:`to_json` is what the command prints."""

    dataset: str
    label_set: str | None
    queries: int
    metric: str
    metrics: list[str]
    notes: list[str]
    table1: tuple[Table1Row, ...]
    table3: OverlapTable
    table4: tuple[Table4Row, ...]
    figures: Figures
    budget: Budget
    significance: Significance
    settled: tuple[SettledRow, ...] = ()


def build_report(
    dataset: Dataset,
    label_set: LabelSet | None = None,
    *,
    metric: str = "C@1",
    resamples: int = 10_000,
    seed: int = 0,
) -> Report:
    """Every table and figure of the report, from one re-scoring of the dataset's runs."""
    scored = rescore_dataset(dataset, label_set)
    result = scored.result
    corrected = result.blocks["corrected"]
    runs = list(corrected)
    if runs and metric not in corrected[runs[0]].per_query:
        known = ", ".join(corrected[runs[0]].per_query)
        raise RescoreError(f"unknown metric {metric!r}; choose from {known}")
    per_query = {run: corrected[run].per_query[metric] for run in runs}
    sizes = tuple(n for n in BUDGET_SIZES if n < result.n_queries) or (result.n_queries,)
    overlap = analysis.overlap_table(scored.runs, k=OVERLAP_K, p=RBO_P)
    compared = analysis.compare_runs(per_query, seed=seed) if len(runs) > 1 else []
    return Report(
        dataset=dataset.name,
        label_set=label_set.name if label_set else None,
        queries=result.n_queries,
        metric=metric,
        metrics=list(TABLE_METRICS),
        notes=result.notes,
        table1=_table1(result),
        table3=OverlapTable(
            k=OVERLAP_K, p=RBO_P, rows=tuple(OverlapRow(**plain(row)) for row in overlap)
        ),
        table4=_table4(result),
        figures=_figures(scored, metric),
        budget=Budget(
            metric=metric,
            sizes=list(sizes),
            resamples=resamples,
            runs=_budget(per_query, sizes, resamples, seed),
        ),
        significance=Significance(
            metric=metric, rows=tuple(SignificanceRow(**plain(row)) for row in compared)
        ),
        settled=tuple(
            SettledRow(run, tuple(scores.values())) for run, scores in result.kinds.items()
        ),
    )


def _table1(result) -> tuple[Table1Row, ...]:
    """FIRE Table 1: each run's corrected scores with intervals, original and true ones."""
    corrected, original, true = _picked(result, "corrected", "original", "true")
    intervals = result.intervals  # the Monte Carlo runs here, once per report
    return tuple(
        Table1Row(
            run=run,
            corrected=means,
            intervals={m: intervals[run][m] for m in TABLE_METRICS},
            original=original.get(run),
            true=true.get(run),
            pooling_bias=_difference(means, true[run]) if run in true else None,
        )
        for run, means in corrected.items()
    )


def _table4(result) -> tuple[Table4Row, ...]:
    """FIRE Table 4: each run's corrected scores with and without its own pooled pairs."""
    corrected, true, left_out = _picked(result, "corrected", "true", "leave_one_out")
    return tuple(
        Table4Row(
            run=run,
            corrected=corrected[run],
            leave_one_out=left_out[run],
            drop=_difference(corrected[run], left_out[run]),
            # What pooling still hides from a run that was not pooled.
            unpooled_bias=_difference(left_out[run], true[run]) if run in true else None,
        )
        for run in corrected
        if run in left_out
    )


def _picked(result, *blocks: str) -> list[dict[str, Scores]]:
    """Per block, each run's :data:`TABLE_METRICS` means."""
    return [
        {run: {m: float(means[m]) for m in TABLE_METRICS} for run, means in result.means(b).items()}
        for b in blocks
    ]


def _figures(scored, metric: str) -> Figures:
    """The figures: positives per query (FIRE Fig. 11), by caption length (2, 3), ranks (12)."""
    result = scored.result
    corrected = result.blocks["corrected"]
    original = result.blocks.get("original", {})
    n_positive = scored.corrected.positives_per_row(result.n_queries)
    true = scored.true
    true_histogram = None if true is None else _histogram(true.positives_per_row(result.n_queries))
    positive_ranks = None
    if original:
        best = max(corrected, key=lambda run: corrected[run].means["C@10"])
        ranks = analysis.positive_ranks_by_source(  # a rank holding both counts as original
            original[best].judgements.relevant, corrected[best].judgements.relevant
        )
        positive_ranks = PositiveRanksFigure(run=best, **plain(ranks))
    heatmap = analysis.length_positive_heatmap(scored.caption_lengths, n_positive)
    by_length = analysis.correct_by_length(
        scored.caption_lengths, {run: s.per_query[metric] for run, s in corrected.items()}
    )
    return Figures(
        positives_per_query=_histogram(n_positive),
        length_positives=HeatmapFigure(
            list(heatmap.row_labels), list(heatmap.column_labels), plain(heatmap.counts)
        ),
        correct_by_length=ByLengthFigure(
            metric, list(by_length.labels), plain(by_length.counts), plain(by_length.share)
        ),
        true_positives_per_query=true_histogram,
        positive_ranks=positive_ranks,
    )


def _budget(
    per_query: dict, sizes: tuple[int, ...], resamples: int, seed: int
) -> dict[str, dict[str, BudgetErrors]]:
    """Each run's bootstrap error of ``metric`` at each query budget."""
    budget = {}
    for run, values in per_query.items():
        errors = analysis.budget_bootstrap(values, sizes, resamples=resamples, seed=seed)
        summary = analysis.budget_summary(errors)
        budget[run] = {str(n): BudgetErrors(**plain(summary[n])) for n in sizes}
    return budget


def _difference(a: Scores, b: Scores) -> Scores:
    return {m: a[m] - b[m] for m in TABLE_METRICS}


def _histogram(n_positive: np.ndarray) -> HistogramFigure:
    histogram = analysis.positives_per_query_histogram(n_positive)
    return HistogramFigure(labels=list(histogram.labels), counts=plain(histogram.counts))


FIGURE = "report"
FIGURE_VERSION = 1
"""Bump when what :func:`build_report` computes changes, so stored reports are redone."""


def stored_report(
    dataset: Dataset, label_set: LabelSet | None = None, *, metric: str = "C@1"
) -> figures.Figure[Report]:
    """:func:`build_report` computed once per set of inputs and metric, served from storage after
    that (re-scoring on every view took 2.6 s at FIRE's scale)."""
    subject = f"dataset {dataset.pk} labels {label_set.pk if label_set else 'original'} {metric}"
    inputs = rescoring_inputs(dataset, label_set, FIGURE, FIGURE_VERSION, metric)
    return figures.exact(
        FIGURE, subject, inputs, lambda: build_report(dataset, label_set, metric=metric)
    )
