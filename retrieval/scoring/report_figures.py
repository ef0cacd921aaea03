"""Turn a report (:func:`retrieval.scoring.reports.build_report`) into table cells and SVG, so the
page stays a template over ready strings and the report's JSON carries numbers, not markup."""

from dataclasses import dataclass

from retrieval.proxies import PROXY_LABELS
from retrieval.scoring import plots
from retrieval.scoring.reports import Report
from retrieval.scoring.rescoring import interval_legend, interval_text, points, shown_value
from retrieval.scoring.score_intervals import ScoreInterval


@dataclass(frozen=True)
class ScoreText:
    """A corrected score as text: ``value``, its 95% ``interval`` (empty where exact) and, in FIRE
    Table 1, ``gain`` "(B + C)" (empty without original positives)."""

    value: str
    interval: str
    gain: str = ""


@dataclass(frozen=True)
class Table1Cells:
    """One run's row of FIRE Table 1 as text: "A [interval] (B + C)" cells, true scores and bias."""

    run: str
    cells: list[ScoreText]
    true: list[str]
    bias: list[str]


@dataclass(frozen=True)
class Table4Cells:
    """One run's row of FIRE Table 4 as text: corrected scores, "New" scores and unpooled bias."""

    run: str
    corrected: list[ScoreText]
    leave_one_out: list[str]
    unpooled_bias: list[str]


@dataclass(frozen=True)
class ReportCharts:
    """Every figure of the report as SVG markup; ``ranks`` is empty without original positives."""

    positives: str
    heatmap: str
    by_length: str
    ranks: str
    budget: str


def _score_text(value: float, interval: ScoreInterval, gain: str = "") -> ScoreText:
    return ScoreText(points(shown_value(value, interval)), interval_text(interval), gain)


def table1_rows(report: Report) -> list[Table1Cells]:
    """FIRE Table 1 rows: "A [interval] (B + C)" cells, then true score and bias if known."""
    rows = []
    for row in report.table1:
        scores, original = row.corrected, row.original or {}
        gains = {m: f"({points(b)} + {points(scores[m] - b)})" for m, b in original.items()}
        cells = [_score_text(scores[m], row.intervals[m], gains.get(m, "")) for m in report.metrics]
        true = [points(row.true[m]) for m in report.metrics] if row.true else []
        pooling = row.pooling_bias or {}
        bias = [points(pooling[m], signed=True) for m in report.metrics] if pooling else []
        rows.append(Table1Cells(row.run, cells, true, bias))
    return rows


def table4_rows(report: Report) -> list[Table4Cells]:
    """FIRE Table 4 rows, each corrected score with its interval (from Table 1's row)."""
    intervals = {row.run: row.intervals for row in report.table1}
    return [
        Table4Cells(
            run=row.run,
            corrected=[
                _score_text(row.corrected[m], intervals[row.run][m]) for m in report.metrics
            ],
            leave_one_out=[points(row.leave_one_out[m]) for m in report.metrics],
            unpooled_bias=[points(row.unpooled_bias[m], signed=True) for m in ("C@1", "C@10")]
            if row.unpooled_bias
            else [],
        )
        for row in report.table4
    ]


def intervals_legend(report: Report) -> str:
    """What the brackets of the report's corrected scores hold (or that all are exact)."""
    return interval_legend(row.intervals[m] for row in report.table1 for m in report.metrics)


def charts(report: Report) -> ReportCharts:
    """Every figure of the report as SVG markup."""
    figures, budget = report.figures, report.budget
    histogram, heat = figures.positives_per_query, figures.length_positives
    by_length = figures.correct_by_length
    series = [plots.Series("corrected", histogram.counts)]
    if figures.true_positives_per_query is not None:
        series.append(plots.Series("true", figures.true_positives_per_query.counts))
    ranks = figures.positive_ranks
    return ReportCharts(
        positives=plots.bar_chart(
            histogram.labels,
            series,
            title="Positives per query (FIRE Fig. 11)",
            x_label="positives",
            y_label="queries",
        ),
        heatmap=plots.heatmap(
            heat.row_labels,
            heat.column_labels,
            heat.counts,
            title="Positives by caption length (FIRE Fig. 2)",
            x_label="positives per query",
            y_label="words",
        ),
        by_length=plots.bar_chart(
            by_length.labels,
            [
                plots.Series(run, [None if v is None else 100 * v for v in shares])
                for run, shares in by_length.share.items()
            ],
            title=f"Mean {by_length.metric} by caption length (FIRE Fig. 3)",
            x_label="caption length (words)",
            y_label=f"% {by_length.metric}",
            y_max=100,
        ),
        ranks=""
        if ranks is None
        else plots.bar_chart(
            [str(r) for r in ranks.ranks],
            [plots.Series("original", ranks.original), plots.Series("judged", ranks.judged)],
            title=f"Rank of positives by source, {ranks.run} (FIRE Fig. 12)",
            x_label="rank",
            y_label="positives",
        ),
        budget=plots.line_chart(
            budget.sizes,
            [
                plots.Series(run, [100 * errors[str(n)].p95 for n in budget.sizes])
                for run, errors in budget.runs.items()
            ],
            title=f"95th percentile of |estimate - full| {budget.metric} (FIRE Fig. 4)",
            x_label="queries judged (N)",
            y_label="points",
        ),
    )


NDCG_KEYS = ("nDCG", "v2t", "t2v")


@dataclass(frozen=True)
class ProxyCell:
    """One model's nDCG under one proxy: the mean of both directions, then each (or None)."""

    ndcg: float | None
    v2t: float | None
    t2v: float | None


@dataclass(frozen=True)
class ProxyModelRow:
    model: str
    note: str
    cells: list[ProxyCell]


@dataclass(frozen=True)
class ModelError:
    model: str
    error: str


@dataclass(frozen=True)
class ProxySection:
    """The report's semantic-proxy section from :func:`retrieval.proxies.service.proxy_table`;
    ``taus``: Kendall's tau against the truth per proxy (empty without truth or two models)."""

    split: str
    videos: int
    texts: int
    has_truth: bool
    error: str
    errors: list[ModelError]
    missing: list[str]
    headings: list[str]
    rows: list[ProxyModelRow]
    taus: list[float | None]
    chart: str


def proxy_section(proxies: dict) -> ProxySection:
    """The proxy table of one dataset as typed rows, cells and its chart."""
    columns = proxy_columns(proxies)
    tau = proxies["kendall_tau_vs_truth"]
    return ProxySection(
        split=proxies["split"],
        videos=proxies["videos"],
        texts=proxies["texts"],
        has_truth=proxies["has_truth"],
        error=proxies.get("error", ""),
        errors=[ModelError(row["model"], row["error"]) for row in proxies["errors"]],
        missing=list(proxies["missing"]),
        headings=[heading for _, heading in columns],
        rows=[
            ProxyModelRow(
                row["model"],
                row["note"],
                [
                    ProxyCell(*(row["scores"].get(key, {}).get(k) for k in NDCG_KEYS))
                    for key, _ in columns
                ],
            )
            for row in proxies["models"]
        ],
        taus=[tau.get(name) for name in proxies["proxies"]] if tau else [],
        chart=proxy_chart(proxies),
    )


def proxy_columns(proxies: dict) -> list[tuple[str, str]]:
    """(key, heading) of the proxy nDCG table: each computed proxy, then the truth."""
    columns = [(name, PROXY_LABELS[name]) for name in proxies["proxies"]]
    if proxies["has_truth"]:
        columns.append(("truth", "Ground truth"))
    return columns


def proxy_chart(proxies: dict) -> str:
    """Each model's nDCG under each proxy and the truth (Wray et al., CVPR 2021, Fig. 7)."""
    columns = proxy_columns(proxies)
    if not proxies["models"] or not columns:
        return ""
    return plots.bar_chart(
        [row["model"] for row in proxies["models"]],
        [
            plots.Series(
                heading, [row["scores"].get(key, {}).get("nDCG") for row in proxies["models"]]
            )
            for key, heading in columns
        ],
        title="nDCG with semantic-proxy relevance (Wray et al. Eq. 3)",
        y_label="nDCG",
        y_max=1.0,
    )
