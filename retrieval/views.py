"""Pages of the retrieval app: videos with HTTP Range support, datasets, label sets and reports."""

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from config.error_handling import Refusal
from config.roles import ADD_MODELS, UPLOAD_DATASETS, VIEW_REPORTS, has_perm, permission_required
from retrieval.datasets.lookup import (
    get_dataset,
    get_model,
    label_set_names,
    label_sets_of,
    runs_of,
)
from retrieval.datasets.overview import dataset_overview, dataset_summaries
from retrieval.label_sets.service import choose_default, default_label_set
from retrieval.media import access as media_access
from retrieval.media.delivery import media_response
from retrieval.models import Dataset, LabelSet
from retrieval.proxies.service import stored_proxy_table
from retrieval.scoring import report_figures
from retrieval.scoring.leaderboard import sort_keys
from retrieval.scoring.leaderboard_formats import LATEX_LAYOUTS, leaderboard_columns
from retrieval.scoring.leaderboard_formats import render as render_leaderboard
from retrieval.scoring.leaderboard_service import LeaderboardError, read_request, stored_leaderboard
from retrieval.scoring.reports import stored_report
from retrieval.scoring.rescoring_service import RescoreError

REPORT_METRICS = ("C@1", "C@5", "C@10", "AP", "nDCG@10")

reports_only = permission_required(
    VIEW_REPORTS, "Only researchers and admins can see label sets and reports."
)


@require_safe
@login_required
def serve_media(request: HttpRequest, path: str) -> HttpResponse:
    """Send a known media file to a user allowed it (Range, ETag and 304); anything else is
    the same 404, so the answer says nothing about which files exist."""
    full = media_access.media_file(path)
    if full is None or not media_access.may_fetch(request.user, path):
        raise Http404("Not found")
    return media_response(request, path, full)


@reports_only
def label_sets(request: HttpRequest) -> HttpResponse:
    """The label sets re-scoring can use, from campaigns and imported files."""
    return _label_sets_page(request)


def _label_sets_page(request: HttpRequest, status: int = 200) -> HttpResponse:
    sets = label_sets_of()
    return render(request, "retrieval/label_sets.html", {"label_sets": sets}, status=status)


CHOOSE_DEFAULT_LABEL_SET = UPLOAD_DATASETS
"""Choosing a dataset's default label set is an admin's work on the dataset, as uploading is."""


@require_POST
@permission_required(
    CHOOSE_DEFAULT_LABEL_SET, "Only admins can choose a dataset's default label set."
)
def choose_default_label_set(request: HttpRequest, dataset_name: str) -> HttpResponse:
    """Make the posted ``label_set`` the dataset's default; an unknown name is a 400."""
    dataset = get_dataset(dataset_name)
    refusal = Refusal()
    with refusal:
        chosen = choose_default(dataset, request.POST.get("label_set", ""))
        messages.success(
            request, f"{chosen.name!r} is now the default label set of {dataset.name!r}."
        )
        return redirect("label-sets")
    messages.error(request, refusal.message)
    return _label_sets_page(request, status=400)


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
    metric = metric if metric in REPORT_METRICS else "C@1"
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
        "metrics": REPORT_METRICS,
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


@reports_only
def datasets(request: HttpRequest) -> HttpResponse:
    """Every dataset with its sizes, each leading to its page."""
    return render(request, "retrieval/datasets.html", {"datasets": dataset_summaries()})


@reports_only
def dataset(request: HttpRequest, dataset_name: str) -> HttpResponse:
    """One dataset: its splits, models and runs, campaigns and label sets, with links."""
    found = get_dataset(dataset_name)
    return render(request, "retrieval/dataset.html", {"overview": dataset_overview(found)})


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


uploaders_only = permission_required(UPLOAD_DATASETS, "Only admins can upload datasets.")
model_adders_only = permission_required(ADD_MODELS, "Only researchers and admins can add models.")


@uploaders_only
def upload_dataset(request: HttpRequest) -> HttpResponse:
    """Upload captions in any importer format; a job imports them (all or nothing)."""
    from retrieval.datasets import uploads
    from retrieval.forms import DatasetUploadForm

    status = 200
    if request.method == "POST":
        form = DatasetUploadForm(request.POST, request.FILES)
        if form.is_valid():
            values = form.cleaned_data
            options = uploads.DatasetUpload(
                values["name"],
                values["format"],
                values["videos"],
                values["video_url"],
                values["split"],
                values["skip_broken"],
            )
            with Refusal(form):
                job = uploads.start_dataset_import(values["captions"], options, request.user)
                return redirect("job-detail", job_id=job.pk)
        status = 400
    else:
        form = DatasetUploadForm(initial={"name": request.GET.get("dataset", "")[:100]})
    context = {"form": form, "jobs": uploads.import_jobs()}
    return render(request, "retrieval/upload_dataset.html", context, status=status)


@model_adders_only
def add_model(request: HttpRequest, dataset_name: str) -> HttpResponse:
    """Add a model from a run file, uploaded embeddings or a built-in encoder."""
    from retrieval.api.permissions import RunUploadLimit, RunUploadThrottle
    from retrieval.datasets import uploads
    from retrieval.forms import EMBEDDING_FIELDS, ModelAddForm
    from retrieval.scoring.run_scoring import submit_run_file

    found = get_dataset(dataset_name)
    labels = label_set_names(found)
    status = 200
    if request.method == "POST":
        form = ModelAddForm(request.POST, request.FILES, label_sets=labels)
        refusal = Refusal(form)
        if form.is_valid():
            values = form.cleaned_data
            name = values["name"]
            with refusal:
                if values["source"] == "run":
                    RunUploadThrottle().check(request)  # one limit with the scoring API
                    submit_run_file(found, name, values["run"], values["labels"], request.user)
                elif values["source"] == "embeddings":
                    uploads.add_embeddings(
                        found, name, form.embedding_files(), k=values["k"], user=request.user
                    )
                else:
                    uploads.add_encoder(
                        found,
                        name,
                        values["encoder"],
                        k=values["k"],
                        epochs=values.get("epochs"),
                        user=request.user,
                    )
                return redirect("dataset-model", dataset_name=found.name, model_name=name)
        status = refusal.status if isinstance(refusal.error, RunUploadLimit) else 400
    else:
        form = ModelAddForm(label_sets=labels)
    context = {
        "dataset": found,
        "form": form,
        "common": [form["name"], form["source"]],
        "run_fields": [form["run"], form["labels"]],
        "embedding_fields": [form[name] for name in EMBEDDING_FIELDS],
        "encoder_fields": [form["encoder"], form["epochs"]],
        "search_fields": [form["k"]],
    }
    return render(request, "retrieval/add_model.html", context, status=status)


@reports_only
def dataset_model(request: HttpRequest, dataset_name: str, model_name: str) -> HttpResponse:
    """One model: where it came from, its runs, and its jobs with where each stands."""
    from retrieval.datasets.uploads import model_jobs

    found = get_dataset(dataset_name)
    model = get_model(found, model_name)
    runs = runs_of(model)
    context = {
        "dataset": found,
        "model": model,
        "runs": runs,
        "jobs": model_jobs(found, model.name),
        "may_add": has_perm(request.user, ADD_MODELS),
    }
    return render(request, "retrieval/model.html", context)
