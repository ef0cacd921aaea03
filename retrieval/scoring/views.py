"""The scoring pages: the reports index, a dataset's report (FIRE's tables and figures) and
its data, and the leaderboard with its exports."""

from dataclasses import dataclass

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from config.error_handling import Refusal
from config.roles import VIEW_REPORTS, permission_required
from retrieval.datasets.lookup import get_dataset, label_sets_of
from retrieval.datasets.overview import datasets_with_label_sets
from retrieval.label_sets.service import default_label_set
from retrieval.models import Dataset, LabelSet
from retrieval.proxies.service import stored_proxy_table
from retrieval.scoring import report_figures
from retrieval.scoring.leaderboard import sort_keys
from retrieval.scoring.leaderboard_formats import LATEX_LAYOUTS, leaderboard_columns
from retrieval.scoring.leaderboard_formats import render as render_leaderboard
from retrieval.scoring.leaderboard_service import LeaderboardError, read_request, stored_leaderboard
from retrieval.scoring.reports import TABLE_METRICS, stored_report
from retrieval.scoring.rescoring_service import RescoreError

reports_only = permission_required(VIEW_REPORTS, "Only researchers and admins can see reports.")


@reports_only
def reports(request: HttpRequest) -> HttpResponse:
    """Every dataset with links to its reports, read with its default labels or any set."""
    return render(request, "retrieval/reports.html", {"datasets": datasets_with_label_sets()})


@dataclass(frozen=True)
class ReportRequest:
    """A report request read; ``error`` says why it cannot be answered (an unknown label set),
    shown instead of falling back to another set."""

    dataset: Dataset
    label_sets: list[LabelSet]
    label_set: LabelSet | None
    metric: str
    error: str = ""


def _report_request(request: HttpRequest, dataset_name: str) -> ReportRequest:
    """Which label set (``?labels=``, empty for none, absent for the default) and metric a
    report asks for."""
    dataset = get_dataset(dataset_name)
    label_sets = list(label_sets_of(dataset))
    metric = request.GET.get("metric", "C@1")
    metric = metric if metric in TABLE_METRICS else "C@1"
    chosen = request.GET.get("labels")
    if chosen is None:
        return ReportRequest(dataset, label_sets, default_label_set(label_sets), metric)
    label_set = next((s for s in label_sets if s.name == chosen), None)
    error = ""
    if chosen and label_set is None:
        known = ", ".join(s.name for s in label_sets) or "none"
        error = (
            f"Dataset {dataset.name!r} has no label set named {chosen!r} (known: {known}). "
            "Choose one above."
        )
    return ReportRequest(dataset, label_sets, label_set, metric, error)


@reports_only
def report(request: HttpRequest, dataset_name: str) -> HttpResponse:
    """FIRE's tables and figures for a dataset's runs under a chosen label set."""
    asked = _report_request(request, dataset_name)
    context = {
        "dataset": asked.dataset,
        "label_sets": asked.label_sets,
        "label_set": asked.label_set,
        "default_label_set": default_label_set(asked.label_sets),
        "metrics": TABLE_METRICS,
        "metric": asked.metric,
    }
    if asked.error:
        return render(
            request, "retrieval/report.html", {**context, "error": asked.error}, status=404
        )
    with (refusal := Refusal(only=RescoreError)):
        stored = stored_report(asked.dataset, asked.label_set, metric=asked.metric)
    if refusal.error is not None:
        return render(request, "retrieval/report.html", {**context, "error": refusal.message}, 400)
    data = stored.value
    context.update(
        report=data,
        computed=stored,
        table1=report_figures.table1_rows(data),
        table4=report_figures.table4_rows(data),
        intervals_legend=report_figures.intervals_legend(data),
        charts=report_figures.charts(data),
        proxies=report_figures.proxy_section(stored_proxy_table(asked.dataset).value),
    )
    return render(request, "retrieval/report.html", context)


@reports_only
def report_data(request: HttpRequest, dataset_name: str) -> HttpResponse:
    """The report's data as JSON (what the ``analyses`` command prints)."""
    asked = _report_request(request, dataset_name)
    if asked.error:
        return JsonResponse({"detail": asked.error}, status=404)
    with (refusal := Refusal(only=RescoreError)):
        stored = stored_report(asked.dataset, asked.label_set, metric=asked.metric)
        data = stored.value.to_json()
        data["computed_at"] = stored.computed_at.isoformat()
        data["proxies"] = stored_proxy_table(asked.dataset).value
        return JsonResponse(data)
    return JsonResponse({"detail": refusal.message}, status=400)


LEADERBOARD_EXPORTS = {
    "csv": ("text/csv; charset=utf-8", "csv"),
    "json": ("application/json", "json"),
    "latex": ("text/x-tex; charset=utf-8", "tex"),
}


@reports_only
def leaderboard(request: HttpRequest, dataset_name: str) -> HttpResponse:
    """One row per run under a chosen label set: scores with intervals, marks, reliability."""
    found = get_dataset(dataset_name)
    context: dict = {"dataset": found, "sort_keys": sort_keys()}
    with (refusal := Refusal(only=(LeaderboardError, RescoreError))):
        asked = read_request(found, request.GET.get("labels"), request.GET.get("sort"))
        context.update(
            label_sets=asked.label_sets,
            label_set=asked.label_set,
            sort=asked.sort,
            versions=asked.versions,
        )
        stored = stored_leaderboard(found, asked.label_set, sort=asked.sort)
        board = stored.value
    if refusal.error is not None:
        context.setdefault("label_sets", tuple(label_sets_of(found)))
        context["error"] = refusal.message
        return render(request, "retrieval/leaderboard.html", context, status=refusal.status)
    context.update(board=board, columns=leaderboard_columns(board), computed=stored)
    return render(request, "retrieval/leaderboard.html", context)


@reports_only
def leaderboard_export(request: HttpRequest, dataset_name: str, fmt: str) -> HttpResponse:
    """The leaderboard as CSV, JSON or LaTeX (``?layout=fire`` for FIRE Table 1's cells)."""
    if fmt not in LEADERBOARD_EXPORTS:
        raise Http404("No such export format")
    layout = request.GET.get("layout") or "rows"
    if layout not in LATEX_LAYOUTS:
        raise LeaderboardError(f"unknown layout {layout[:40]!r} (choose rows or fire)")
    found = get_dataset(dataset_name)
    asked = read_request(found, request.GET.get("labels"), request.GET.get("sort"))
    board = stored_leaderboard(found, asked.label_set, sort=asked.sort).value
    content_type, extension = LEADERBOARD_EXPORTS[fmt]
    response = HttpResponse(
        render_leaderboard(board, fmt, layout=layout), content_type=content_type
    )
    filename = f"leaderboard-{board.dataset}-{board.label_set or 'original'}.{extension}"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in filename)
    response["Content-Disposition"] = f'attachment; filename="{safe}"'
    return response
