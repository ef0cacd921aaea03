"""The researcher's report on a dataset: FIRE Tables 1, 3 and 4 and Figures 2-4, 11 and 12.

:func:`build_report` re-scores the dataset's runs (see :mod:`retrieval.services.rescoring`)
and runs the analyses of :mod:`retrieval.analysis` on the result, returning plain,
JSON-ready data; the report page draws its tables and SVG figures from that data, and the
``analyses`` command prints it.
"""

import numpy as np

from retrieval import analysis
from retrieval.models import Dataset, LabelSet
from retrieval.services.rescoring import DatasetRescoring, rescore_dataset

TABLE_METRICS = ("C@1", "C@5", "C@10", "AP", "nDCG@10")
BUDGET_SIZES = (50, 100, 250, 500, 1000, 3000)
RBO_P = 0.9
OVERLAP_K = 10


def build_report(
    dataset: Dataset,
    label_set: LabelSet | None = None,
    *,
    metric: str = "C@1",
    resamples: int = 10_000,
    seed: int = 0,
) -> dict:
    """Every table and figure of the report as plain data (lists, dicts, floats)."""
    scored = rescore_dataset(dataset, label_set)
    result = scored.result
    corrected = result.blocks["corrected"]
    original = result.blocks.get("original", {})
    true = result.blocks.get("true", {})
    runs = list(corrected)
    per_query = {run: corrected[run].per_query[metric] for run in runs}

    table1 = []
    for run in runs:
        row = {"run": run, "corrected": _pick(corrected[run].means)}
        if run in original:
            row["original"] = _pick(original[run].means)
        if run in true:
            row["true"] = _pick(true[run].means)
            row["pooling_bias"] = {m: row["corrected"][m] - row["true"][m] for m in TABLE_METRICS}
        table1.append(row)

    loro = result.blocks.get("leave_one_out", {})
    table4 = []
    for run in runs:
        if run not in loro:
            continue
        row = {
            "run": run,
            "corrected": _pick(corrected[run].means),
            "leave_one_out": _pick(loro[run].means),
            "drop": {m: corrected[run].means[m] - loro[run].means[m] for m in TABLE_METRICS},
        }
        if run in true:
            # What pooling still hides from a run that was not pooled.
            row["unpooled_bias"] = {
                m: loro[run].means[m] - true[run].means[m] for m in TABLE_METRICS
            }
        table4.append(row)

    n_positive = scored.corrected.positives_per_row(result.n_queries)
    figures: dict = {
        "positives_per_query": _histogram(n_positive),
        "length_positives": _heatmap(scored.caption_lengths, n_positive),
        "correct_by_length": _by_length(scored, metric),
    }
    if scored.true is not None:
        figures["true_positives_per_query"] = _histogram(
            scored.true.positives_per_row(result.n_queries)
        )
    if original:
        best = max(runs, key=lambda run: corrected[run].means["C@10"])
        relevant_original = original[best].judgements.relevant
        relevant_judged = corrected[best].judgements.relevant & ~relevant_original
        ranks = analysis.positive_ranks_by_source(relevant_original, relevant_judged)
        figures["positive_ranks"] = {"run": best, **_plain(ranks)}

    sizes = tuple(n for n in BUDGET_SIZES if n < result.n_queries) or (result.n_queries,)
    budget = {}
    for run in runs:
        errors = analysis.budget_bootstrap(per_query[run], sizes, resamples=resamples, seed=seed)
        summary = analysis.budget_summary(errors)
        budget[run] = {str(n): _plain(summary[n]) for n in sizes}

    return {
        "dataset": dataset.name,
        "label_set": label_set.name if label_set else None,
        "queries": result.n_queries,
        "metric": metric,
        "metrics": list(TABLE_METRICS),
        "notes": result.notes,
        "table1": table1,
        "table3": {
            "k": OVERLAP_K,
            "p": RBO_P,
            "rows": _plain(analysis.overlap_table(scored.runs, k=OVERLAP_K, p=RBO_P)),
        },
        "table4": table4,
        "figures": figures,
        "budget": {"metric": metric, "sizes": list(sizes), "resamples": resamples, "runs": budget},
        "significance": {
            "metric": metric,
            "rows": _plain(analysis.compare_runs(per_query, seed=seed)) if len(runs) > 1 else [],
        },
    }


def _pick(means: dict[str, float]) -> dict[str, float]:
    return {m: float(means[m]) for m in TABLE_METRICS}


def _histogram(n_positive: np.ndarray) -> dict:
    histogram = analysis.positives_per_query_histogram(n_positive)
    return {"labels": list(histogram.labels), "counts": _plain(histogram.counts)}


def _heatmap(lengths: np.ndarray, n_positive: np.ndarray) -> dict:
    heatmap = analysis.length_positive_heatmap(lengths, n_positive)
    return {
        "row_labels": list(heatmap.row_labels),
        "column_labels": list(heatmap.column_labels),
        "counts": _plain(heatmap.counts),
    }


def _by_length(scored: DatasetRescoring, metric: str) -> dict:
    corrected = scored.result.blocks["corrected"]
    by_length = analysis.correct_by_length(
        scored.caption_lengths, {run: s.per_query[metric] for run, s in corrected.items()}
    )
    return {
        "metric": metric,
        "labels": list(by_length.labels),
        "counts": _plain(by_length.counts),
        "share": _plain(by_length.share),
    }


def _plain(value):
    """numpy arrays and scalars (also nested in dicts, lists, dataclasses) as JSON-ready data."""
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value
