"""How each retrieval job kind's result reads on its job page: the outcome in words, links to
the dataset, model and leaderboard, and a re-score's table in points. Each function takes the
job's arguments and result (a JSON dict, possibly from an older version of the kind, hence
``.get``) and returns the context of the kind's template (``templates/retrieval/job_results/``).
"""

from urllib.parse import urlencode

from django.urls import NoReverseMatch, reverse

from retrieval.scoring.leaderboard_formats import value_text
from retrieval.scoring.rescoring import interval_legend, interval_text, table_cell
from retrieval.scoring.score_intervals import ScoreInterval

TABLE_METRICS = ("C@1", "C@5", "C@10", "AP", "nDCG@10")
"""The scores a re-score or scoring job shows, in points (as the leaderboard's first columns)."""


def link(name: str, *args, query: dict | None = None) -> str:
    """The URL of page ``name``, or "" where a stored name no longer fits the route."""
    try:
        url = reverse(name, args=[str(arg) for arg in args])
    except NoReverseMatch:
        return ""
    query = {key: value for key, value in (query or {}).items() if value}
    return f"{url}?{urlencode(query)}" if query else url


def _dataset_links(dataset: str, labels: str = "") -> dict:
    return {
        "dataset_name": dataset,
        "dataset_url": link("dataset", dataset) if dataset else "",
        "leaderboard_url": link("leaderboard", dataset, query={"labels": labels})
        if dataset
        else "",
    }


def _model_links(arguments: dict, result: dict) -> dict:
    dataset = arguments.get("dataset") or result.get("dataset") or ""
    model = result.get("model") or arguments.get("model") or ""
    return {
        **_dataset_links(dataset),
        "model_name": model,
        "model_url": link("dataset-model", dataset, model) if dataset and model else "",
    }


def _interval(metric: str, stored: object) -> ScoreInterval | None:
    """A stored interval (``{"value", "low", "high", "parts"}``), or None where the result
    has none (a job from before intervals) or it does not read as one."""
    if not isinstance(stored, dict):
        return None
    numbers = [stored.get(key) for key in ("value", "low", "high")]
    parts = stored.get("parts")
    if not all(isinstance(n, int | float) for n in numbers) or not isinstance(parts, list):
        return None
    return ScoreInterval(metric, *map(float, numbers), tuple(str(part) for part in parts))


def _score_rows(
    corrected: dict, original: dict | None, intervals: dict | None = None
) -> tuple[list[tuple[str, list[str]]], str]:
    """One row per run: each metric's "A (B + C)" (corrected, original plus gain) in points,
    with its 95% interval from the labels where the result has one that is not exact; and
    the legend of those intervals ("" when there are none)."""
    rows, shown = [], []
    for run, scores in corrected.items():
        base = (original or {}).get(run) or {}
        stored = (intervals or {}).get(run)
        cells = []
        for metric in TABLE_METRICS:
            value = scores.get(metric) if isinstance(scores, dict) else None
            if not isinstance(value, int | float):
                cells.append("–")
                continue
            if isinstance(base.get(metric), int | float):
                cell = table_cell(value, base[metric])
            else:
                cell = value_text(metric, value)
            interval = _interval(metric, stored.get(metric)) if isinstance(stored, dict) else None
            if interval is not None:
                shown.append(interval)
                bracket = interval_text(interval)
                cell = f"{cell} {bracket}" if bracket else cell
            cells.append(cell)
        rows.append((str(run), cells))
    return rows, interval_legend(shown) if shown else ""


def rescore(arguments: dict, result: dict) -> dict:
    """A re-score: the table of every run's scores and the leaderboard under the same labels."""
    runs = result.get("runs") if isinstance(result.get("runs"), dict) else {}
    original = result.get("original") if isinstance(result.get("original"), dict) else None
    labels = arguments.get("labels") or ""
    intervals = result.get("intervals") if isinstance(result.get("intervals"), dict) else None
    rows, legend = _score_rows(runs, original, intervals)
    return {
        **_dataset_links(arguments.get("dataset") or "", labels),
        "labels": labels,
        "metrics": TABLE_METRICS,
        "rows": rows,
        "intervals_legend": legend,
        "with_original": original is not None,
        "notes": [str(note) for note in result.get("notes") or []],
    }


def score_run(arguments: dict, result: dict) -> dict:
    """One scored run: its scores, and the leaderboard where it now stands."""
    run = result.get("run") or arguments.get("run") or ""
    scores = result.get("scores") if isinstance(result.get("scores"), dict) else {}
    original = result.get("original") if isinstance(result.get("original"), dict) else None
    labels = result.get("label_set") or arguments.get("labels") or ""
    stored = result.get("intervals") if isinstance(result.get("intervals"), dict) else None
    rows, legend = _score_rows(
        {run: scores}, {run: original} if original else None, {run: stored} if stored else None
    )
    return {
        **_dataset_links(arguments.get("dataset") or "", labels),
        "labels": labels,
        "run": run,
        "metrics": TABLE_METRICS,
        "rows": rows,
        "intervals_legend": legend,
        "with_original": original is not None,
    }


def model_result(arguments: dict, result: dict) -> dict:
    """Embed, train, predict, build: the model's page, its run, the leaderboard."""
    log = result.get("losses")
    return {
        **_model_links(arguments, result),
        "last_loss": log[-1] if isinstance(log, list) and log else None,
    }


def proxies(arguments: dict, result: dict) -> dict:
    """Proxy matrices: which were computed, and the report that uses them."""
    dataset = result.get("dataset") or arguments.get("dataset") or ""
    made = [p for p in result.get("proxies") or [] if isinstance(p, dict)]
    return {**_dataset_links(dataset), "proxies": made, "report_url": link("report", dataset)}


def import_dataset(arguments: dict, result: dict) -> dict:
    """An imported captions file: what it added to which dataset."""
    return _dataset_links(result.get("dataset") or arguments.get("name") or "")
