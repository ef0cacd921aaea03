"""Turn report data (:func:`retrieval.services.reports.build_report`) into table cells and SVG.

Kept apart from the view so the page stays a template over ready strings, and apart from
the report builder so the JSON the command prints carries numbers, not markup.
"""

from retrieval import plots
from retrieval.proxies import PROXY_LABELS
from retrieval.rescoring import table_cell


def table1_rows(data: dict) -> list[dict]:
    """FIRE Table 1 rows: "A (B + C)" cells, then the true score and pooling bias if known."""
    rows = []
    for row in data["table1"]:
        original = row.get("original")
        cells = [
            table_cell(row["corrected"][m], original[m] if original else None)
            for m in data["metrics"]
        ]
        true = [f"{100 * row['true'][m]:.1f}" for m in data["metrics"]] if "true" in row else []
        bias = (
            [f"{100 * row['pooling_bias'][m]:+.1f}" for m in data["metrics"]]
            if "pooling_bias" in row
            else []
        )
        rows.append({"run": row["run"], "cells": cells, "true": true, "bias": bias})
    return rows


def charts(data: dict) -> dict[str, str]:
    """Every figure of the report as SVG markup, keyed by figure."""
    figures = data["figures"]
    out = {}
    histogram = figures["positives_per_query"]
    series = [plots.Series("corrected", histogram["counts"])]
    if "true_positives_per_query" in figures:
        series.append(plots.Series("true", figures["true_positives_per_query"]["counts"]))
    out["positives"] = plots.bar_chart(
        histogram["labels"],
        series,
        title="Positives per query (FIRE Fig. 11)",
        x_label="positives",
        y_label="queries",
    )
    heat = figures["length_positives"]
    out["heatmap"] = plots.heatmap(
        heat["row_labels"],
        heat["column_labels"],
        heat["counts"],
        title="Positives by caption length (FIRE Fig. 2)",
        x_label="positives per query",
        y_label="words",
    )
    by_length = figures["correct_by_length"]
    out["by_length"] = plots.bar_chart(
        by_length["labels"],
        [
            plots.Series(run, [None if v is None else 100 * v for v in shares])
            for run, shares in by_length["share"].items()
        ],
        title=f"Mean {by_length['metric']} by caption length (FIRE Fig. 3)",
        x_label="caption length (words)",
        y_label=f"% {by_length['metric']}",
        y_max=100,
    )
    if "positive_ranks" in figures:
        ranks = figures["positive_ranks"]
        out["ranks"] = plots.bar_chart(
            [str(r) for r in ranks["ranks"]],
            [plots.Series("original", ranks["original"]), plots.Series("judged", ranks["judged"])],
            title=f"Rank of positives by source, {ranks['run']} (FIRE Fig. 12)",
            x_label="rank",
            y_label="positives",
        )
    budget = data["budget"]
    sizes = budget["sizes"]
    out["budget"] = plots.line_chart(
        sizes,
        [
            plots.Series(run, [100 * summary[str(n)]["p95"] for n in sizes])
            for run, summary in budget["runs"].items()
        ],
        title=f"95th percentile of |estimate - full| {budget['metric']} (FIRE Fig. 4)",
        x_label="queries judged (N)",
        y_label="points",
    )
    return out


def proxy_columns(proxies: dict) -> list[tuple[str, str]]:
    """(key, heading) of the proxy nDCG table: each computed proxy, then the truth."""
    columns = [(name, PROXY_LABELS[name]) for name in proxies["proxies"]]
    if proxies["has_truth"]:
        columns.append(("truth", "Ground truth"))
    return columns


def proxy_rows(proxies: dict) -> list[dict]:
    """One row per model: its nDCG (mean, v2t, t2v) under each proxy and the truth."""
    columns = proxy_columns(proxies)
    return [
        {
            "model": row["model"],
            "note": row["note"],
            "cells": [row["scores"].get(key, {}) for key, _ in columns],
        }
        for row in proxies["models"]
    ]


def proxy_chart(proxies: dict) -> str:
    """Grouped bars: each model's nDCG under each proxy (and the truth), as in Wray et al.,
    CVPR 2021, Fig. 7."""
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
