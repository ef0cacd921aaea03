"""ORM-facing: datasets and models added from the browser, through files uploaded for a job.

An upload is size-checked and copied under a fixed name into a new folder of its own under
``FIREPOOL_JOB_INPUT_DIR`` (never served); the user's file name only names it in errors. The
job that reads it removes the folder once it succeeded or found the file wrong, and keeps it
otherwise for a retry. Datasets import through an ``import_dataset`` job; a model comes from
a run file, uploaded embeddings or a built-in encoder (one ``build_model`` job).
"""

import shutil
import uuid
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Protocol

from django.conf import settings
from django.db import transaction
from django.urls import reverse

from config.errors import UserError
from jobs import runner
from jobs.models import Job
from retrieval.datasets.importing import (
    ImportOptionError,
    check_url_template,
    format_named,
    import_dataset,
)
from retrieval.datasets.names import check_name
from retrieval.formats.records import FormatError, check_chars, check_size_of
from retrieval.models import Caption, Dataset, RetrievalModel, Video
from retrieval.scoring.rescoring import points

IMPORT_DATASET = "import_dataset"
BUILD_MODEL = "build_model"
PREDICT = "predict"
SHOWN_NAME_MAX = 120
EMBEDDING_FILES = ("captions.npy", "videos.npy", "caption_ids.txt", "video_ids.txt")
MODEL_JOB_KINDS = ("build_model", "train", "embed", "predict", "score_run")
"""Job kinds whose arguments name a model (or its run) of a dataset."""


class UploadError(UserError):
    """An uploaded file or an upload's option cannot be used; nothing was written."""


def input_root() -> Path:
    """Where uploaded files wait for their jobs (``FIREPOOL_JOB_INPUT_DIR``)."""
    return Path(settings.FIREPOOL_JOB_INPUT_DIR)


def shown_name(upload, default: str = "upload") -> str:
    """The upload's own file name, made safe to show: no folders, no control characters."""
    name = Path(str(getattr(upload, "name", "") or "").replace("\\", "/")).name
    name = "".join(char for char in name if char.isprintable())
    try:
        check_chars(name)
    except ValueError:
        name = ""
    return name[:SHOWN_NAME_MAX] or default


def save_upload(upload, folder: Path, stored_as: str) -> Path:
    """Copy ``upload`` (a Django uploaded file) to ``folder/stored_as`` after checking its size."""
    check_size_of(upload.size, shown_name(upload, stored_as))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / stored_as
    with open(path, "wb") as copy:
        for chunk in upload.chunks():
            copy.write(chunk)
    return path


def new_input_folder() -> Path:
    """A new, empty folder under the input root for one upload."""
    folder = input_root() / uuid.uuid4().hex
    folder.mkdir(parents=True)
    return folder


def input_name(path: Path) -> str:
    """How a job's arguments name an uploaded file: relative to the input root."""
    return Path(path).relative_to(input_root()).as_posix()


def input_file(value: str) -> Path:
    """The uploaded file ``value`` names (relative to the input root), which must lie in an
    upload folder there: job arguments posted by hand may name no other file on the server."""
    try:
        check_chars(value)
        path = (input_root() / value).resolve()
        root = input_root().resolve()
        inside = path.is_relative_to(root) and path.parent != root and path.is_file()
    except (ValueError, OSError, RuntimeError):
        inside = False
    if not inside:
        raise UploadError(
            "the uploaded file is gone or was not uploaded through the page; upload it again"
        )
    return path


def discard(path: Path) -> None:
    """Remove the upload folder holding ``path`` (only ever one under the input root)."""
    folder = Path(path).parent
    if folder.resolve().parent == input_root().resolve():
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class DatasetUpload:
    """What the upload page asks for, besides the file: where and how to import it."""

    name: str
    format: str
    videos: str = ""
    video_url: str = ""
    split: str = ""
    skip_broken: bool = False

    @classmethod
    def of(cls, values: dict) -> "DatasetUpload":
        """The options among ``values`` (a form's cleaned data); those missing keep defaults."""
        names = [option.name for option in fields(cls)]
        return cls(**{name: values[name] for name in names if name in values})

    def check(self) -> None:
        """Refuse options the importer would refuse, before the file is saved."""
        check_name(self.name, "dataset")
        format_named(self.format)
        if self.videos and self.video_url:
            raise ImportOptionError("give either a videos folder or a URL template, not both")
        if self.video_url:
            check_url_template(self.video_url)
        if self.videos:  # a folder on the server (the importer checks its files)
            try:
                check_chars(self.videos)
                found = Path(self.videos).is_dir()
            except (ValueError, OSError):
                found = False
            if not found:
                raise ImportOptionError(f"{self.videos[:200]!r} is not a folder on the server")


def start_dataset_import(upload, options: DatasetUpload, user=None) -> Job:
    """Save the uploaded captions and queue the job that imports them."""
    options.check()
    folder = new_input_folder()
    try:
        path = save_upload(upload, folder, "captions")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    arguments = {
        "name": options.name,
        "format": options.format,
        "captions": input_name(path),
        "file_name": shown_name(upload, "captions"),
        **asdict(options),  # the rest of the options, in their order
    }
    try:
        return runner.submit(IMPORT_DATASET, arguments, user)
    except runner.JobError:
        # Refused before a job was recorded; after that, the job owns the file.
        shutil.rmtree(folder, ignore_errors=True)
        raise


class Steps(Protocol):
    """What a long service reports to: a job's :class:`jobs.progress.Reporter` fits."""

    def step(self, message: str, total: int | None = None, done: int = 0) -> None: ...

    def advance(self, units: int = 1) -> None: ...


def estimate_records(path: Path, fmt: str) -> int | None:
    """About how many captions a file holds (lines, or MSR-VTT sentences), for a progress bar."""
    needle = b'"sen_id"' if fmt == "msrvtt-json" else b"\n"
    count = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            count += block.count(needle)
    return count or None


def run_dataset_import(
    steps: Steps,
    *,
    name: str,
    format: str,
    captions: str,
    file_name: str = "captions",
    videos: str = "",
    video_url: str = "",
    split: str = "",
    skip_broken: bool = False,
) -> dict:
    """Import an uploaded captions file; errors name the user's file, not the stored copy."""
    path = input_file(captions)
    steps.step(f"importing {file_name} into {name}", total=estimate_records(path, format))
    try:
        summary = import_dataset(
            name=name,
            fmt=format,
            captions_path=path,
            videos_dir=videos or None,
            video_url_template=video_url or None,
            split=split or None,
            progress=steps.advance,
            skip_broken=skip_broken,
        )
    except FormatError as exc:
        discard(path)
        shown = file_name if Path(str(exc.path)) == path else exc.path
        raise FormatError(shown, exc.line, exc.field, exc.message, where=exc.where) from None
    except UserError:
        discard(path)
        raise
    # The copy goes once the import is committed: the job's kind is atomic, so the summary
    # below and the job's success are written in the import's transaction.
    transaction.on_commit(lambda: discard(path))
    counts = ("dataset_created", "videos_created", "videos_reused", "captions", "queries", "splits")
    return {
        "page": reverse("dataset", args=[summary.dataset]),
        "dataset": summary.dataset,
        "format": summary.format,
        "file": file_name,
        **{name: getattr(summary, name) for name in counts},
        "seconds": round(summary.seconds, 2),
        "broken": summary.broken,
        "browser_files_to_make": summary.derived_pending,
    }


def add_embeddings(
    dataset: Dataset, name: str, uploads: dict, *, k: int = 20, user=None
) -> tuple[RetrievalModel, Job]:
    """Register uploaded embeddings (``uploads`` maps each of :data:`EMBEDDING_FILES` to a file)
    as model ``name`` and queue the search that makes its run."""
    from retrieval.search.registration import check_name_free, register_embeddings

    check_name_free(dataset, name)
    folder = new_input_folder()
    try:
        for stored_as in EMBEDDING_FILES:
            save_upload(uploads[stored_as], folder, stored_as)
        with transaction.atomic():
            model = register_embeddings(dataset, name, folder)
            model.config["uploaded_from"] = {
                stored: shown_name(uploads[stored], stored) for stored in EMBEDDING_FILES
            }
            model.save(update_fields=["config", "updated_at"])
            job = runner.submit(PREDICT, {"dataset": dataset.name, "model": name, "k": k}, user)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return model, job


def add_encoder(
    dataset: Dataset, name: str, encoder: str, *, k: int = 20, epochs: int | None = None, user=None
) -> tuple[RetrievalModel, Job]:
    """Register built-in ``encoder`` as model ``name`` and queue the job that builds its run."""
    from retrieval.encoders.service import register_encoder

    with transaction.atomic():
        model = register_encoder(dataset, name, encoder, {})
        arguments = {"dataset": dataset.name, "model": name, "k": k}
        if epochs:
            arguments["epochs"] = epochs
        job = runner.submit(BUILD_MODEL, arguments, user)
    return model, job


def build_model(
    model: RetrievalModel,
    steps: Steps,
    *,
    k: int = 20,
    split: str = "test",
    epochs: int | None = None,
    seed: int = 0,
    device: str = "auto",
) -> dict:
    """Take a built-in encoder through features, training, embedding and search, skipping
    steps already done (so a retried chain resumes); each step names itself."""
    from retrieval.encoders import service as encoding
    from retrieval.encoders.registry import ENCODERS
    from retrieval.search import service as search

    encoder = ENCODERS[model.encoder]
    dataset = model.dataset
    done: list[str] = []

    def say(number: int, text: str, total: int | None = None, units: int = 0) -> None:
        steps.step(f"step {number} of 4: {text}", total=total, done=units)

    missing = Video.objects.filter(dataset=dataset, features="").exclude(media="")
    if encoder.uses_features and missing.exists():
        say(1, "extracting video features", total=missing.count())
        encoding.extract_dataset_features(
            dataset, device=device, progress=steps.advance, workers=encoding.feature_workers(device)
        )
        done.append("features")
    else:
        say(1, "video features (nothing to extract)")
    if encoder.trainable and not model.weights:
        say(2, f"training {model.name} ({model.encoder})")

        def epoch_done(number: int, total: int, loss: float) -> None:
            text = f"training {model.name}: epoch {number} of {total}, loss {loss:.4f}"
            say(2, text, total, number)

        encoding.train(model, epochs=epochs, seed=seed, device=device, on_epoch=epoch_done)
        done.append("train")
    else:
        say(2, f"training ({model.encoder} has nothing to train)")
    total = (
        Caption.objects.filter(dataset=dataset, split=split).count()
        + Video.objects.filter(dataset=dataset, split=split).count()
    )
    say(3, f"embedding the {split} split's captions and videos", total=total)
    encoding.embed(model, split=split, device=device, progress=steps.advance)
    done.append("embed")
    say(4, f"searching every {split} query (top {k})")
    run = search.predict(model, k=k, split=split)
    done.append("search")
    return {
        "page": reverse("dataset-model", args=[dataset.name, model.name]),
        "model": model.name,
        "run": run.name,
        "queries": run.query_count,
        "steps": done,
    }


@dataclass(frozen=True)
class JobRow:
    """A job about a model, as its page shows it."""

    pk: int
    kind: str
    status: str
    message: str
    error: str
    percent: float | None
    created_at: object
    finished: bool
    summary: str = ""


def job_summary(kind: str, result: dict | None) -> str:
    """A finished job's result in a line: a scored run's means, or the run a search made."""
    result = result or {}
    if kind == "score_run" and result.get("scores"):
        scores = result["scores"]
        shown = ", ".join(
            f"{name} {points(scores[name])}"
            for name in ("C@1", "C@10", "nDCG@10", "Judged@10")
            if isinstance(scores.get(name), int | float)
        )
        labels = result.get("label_set") or "the original positives only"
        return f"{shown} points (with {labels})"
    if result.get("run"):
        return f"run {result['run']}: {result.get('queries', '?')} queries"
    return ""


def model_jobs(dataset: Dataset, model_name: str, limit: int = 20) -> list[JobRow]:
    """The newest jobs that build, search or score ``model_name`` on ``dataset`` (one query)."""
    fields = ("pk", "kind", "status", "message", "error", "done", "total", "created_at")
    jobs = Job.objects.filter(kind__in=MODEL_JOB_KINDS, arguments__dataset=dataset.name)
    rows = []
    for job in jobs.only(*fields, "arguments", "result")[:500]:
        arguments = job.arguments or {}
        if model_name not in (arguments.get("model"), arguments.get("run")):
            continue
        done = job.status == Job.Status.SUCCEEDED
        shown = (job.pk, job.kind, job.status, job.message, job.error, job.percent)
        summary = job_summary(job.kind, job.result) if done else ""
        rows.append(JobRow(*shown, job.created_at, job.finished, summary))
        if len(rows) >= limit:
            break
    return rows


def import_jobs(limit: int = 10) -> list[Job]:
    """The newest dataset-import jobs, for the upload page."""
    return list(Job.objects.filter(kind=IMPORT_DATASET).select_related("created_by")[:limit])
