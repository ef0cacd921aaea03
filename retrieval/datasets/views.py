"""The dataset pages: every dataset, one dataset, the upload of one, and its models (add one,
see one)."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from config.error_handling import Refusal
from config.roles import ADD_MODELS, UPLOAD_DATASETS, VIEW_REPORTS, has_perm, permission_required
from retrieval.datasets.lookup import get_dataset, get_model, label_set_names, runs_of
from retrieval.datasets.overview import dataset_overview, dataset_summaries

reports_only = permission_required(
    VIEW_REPORTS, "Only researchers and admins can see datasets and their models."
)


@reports_only
def datasets(request: HttpRequest) -> HttpResponse:
    """Every dataset with its sizes, each leading to its page."""
    return render(request, "retrieval/datasets.html", {"datasets": dataset_summaries()})


@reports_only
def dataset(request: HttpRequest, dataset_name: str) -> HttpResponse:
    """One dataset: its splits, models and runs, campaigns and label sets, with links."""
    found = get_dataset(dataset_name)
    return render(request, "retrieval/dataset.html", {"overview": dataset_overview(found)})


uploaders_only = permission_required(UPLOAD_DATASETS, "Only admins can upload datasets.")
model_adders_only = permission_required(ADD_MODELS, "Only researchers and admins can add models.")


@uploaders_only
def upload_dataset(request: HttpRequest) -> HttpResponse:
    """Upload captions in any importer format; a job imports them (all or nothing)."""
    from retrieval.datasets import uploads
    from retrieval.datasets.forms import DatasetUploadForm

    status = 200
    if request.method == "POST":
        form = DatasetUploadForm(request.POST, request.FILES)
        if form.is_valid():
            options = uploads.DatasetUpload.of(form.cleaned_data)
            with Refusal(form):
                upload = form.cleaned_data["captions"]
                job = uploads.start_dataset_import(upload, options, request.user)
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
    from retrieval.datasets.forms import EMBEDDING_FIELDS, ModelAddForm
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
    context = {
        "dataset": found,
        "model": model,
        "runs": runs_of(model),
        "jobs": model_jobs(found, model.name),
        "may_add": has_perm(request.user, ADD_MODELS),
    }
    return render(request, "retrieval/model.html", context)
