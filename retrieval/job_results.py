"""How each retrieval job kind's result reads on its job page: each function turns the job's
arguments and result (JSON, possibly from an older version of the kind, hence ``.get``) into
the context of the kind's template (``templates/retrieval/job_results/``)."""

from urllib.parse import urlencode

from django.urls import NoReverseMatch, reverse

from retrieval.scoring.leaderboard_formats import value_text
from retrieval.scoring.rescoring import interval_legend, interval_text, shown_value, table_cell
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


def _interval(metric: str, stored: object) -> ScoreInterval | None:
    """A stored ``{"value", "low", "high", "parts"}`` interval, or None where it does not read
    as one (a job from before intervals)."""
    if not isinstance(stored, dict):
        return None
    numbers = [stored.get(key) for key in ("value", "low", "high")]
    parts = stored.get("parts")
    if not all(isinstance(n, int | float) for n in numbers) or not isinstance(parts, list):
        return None
    dominant = stored.get("dominant")
    return ScoreInterval(
        metric,
        *map(float, numbers),
        tuple(str(part) for part in parts),
        dominant if isinstance(dominant, str) and dominant else None,
    )


def _score_rows(
    corrected: dict, original: dict | None, intervals: dict | None = None
) -> tuple[list[tuple[str, list[str]]], str]:
    """One row per run of each metric's "A (B + C)" (corrected, original plus gain) in points
    with its 95% interval where one is not exact; and the intervals' legend ("" for none)."""
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
            interval = _interval(metric, stored.get(metric)) if isinstance(stored, dict) else None
            value = shown_value(value, interval)
            if isinstance(base.get(metric), int | float):
                cell = table_cell(value, base[metric])
            else:
                cell = value_text(metric, value)
            if interval is not None:
                shown.append(interval)
                bracket = interval_text(interval)
                cell = f"{cell} {bracket}" if bracket else cell
            cells.append(cell)
        rows.append((str(run), cells))
    return rows, interval_legend(shown) if shown else ""


def _dict(result: dict, key: str) -> dict | None:
    """``result[key]`` where it is a dict, else None (an older or garbled result)."""
    value = result.get(key)
    return value if isinstance(value, dict) else None


def _scores(
    arguments: dict, labels: str, runs: dict, original: dict | None, intervals: dict | None
) -> dict:
    """What a re-score's and a scored run's pages share: links, the table and its legend."""
    rows, legend = _score_rows(runs, original, intervals)
    return {
        **_dataset_links(arguments.get("dataset") or "", labels),
        "labels": labels,
        "metrics": TABLE_METRICS,
        "rows": rows,
        "intervals_legend": legend,
        "with_original": original is not None,
    }


def rescore(arguments: dict, result: dict) -> dict:
    """A re-score: the table of every run's scores and the leaderboard under the same labels."""
    runs, intervals = _dict(result, "runs") or {}, _dict(result, "intervals")
    labels = arguments.get("labels") or ""
    return {
        **_scores(arguments, labels, runs, _dict(result, "original"), intervals),
        "notes": [str(note) for note in result.get("notes") or []],
    }


def score_run(arguments: dict, result: dict) -> dict:
    """One scored run: its scores, and the leaderboard where it now stands."""
    run = result.get("run") or arguments.get("run") or ""
    original, stored = _dict(result, "original"), _dict(result, "intervals")
    labels = result.get("label_set") or arguments.get("labels") or ""
    runs = {run: _dict(result, "scores") or {}}
    return {
        **_scores(arguments, labels, runs, original and {run: original}, stored and {run: stored}),
        "run": run,
    }


def model_result(arguments: dict, result: dict) -> dict:
    """Embed, train, predict, build: the model's page, its run, the leaderboard."""
    log = result.get("losses")
    dataset = arguments.get("dataset") or result.get("dataset") or ""
    model = result.get("model") or arguments.get("model") or ""
    return {
        **_dataset_links(dataset),
        "model_name": model,
        "model_url": link("dataset-model", dataset, model) if dataset and model else "",
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
