"""ORM-facing: score one run with a label set, and take an uploaded run file to a scoring job. An
upload is all-or-nothing: the file is checked first, then the model and its job (kind ``score_run``,
storing a :class:`RunScores`) are created in one transaction."""

import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.db import transaction

from jobs import runner
from jobs.models import Job
from retrieval.formats.records import FormatError, max_upload_bytes
from retrieval.label_sets.service import LabelSetError, default_label_set
from retrieval.models import Dataset, LabelSet
from retrieval.scoring.rescoring_service import pooled_runs, rescore_dataset
from retrieval.search.registration import register_run_file

SCORE_RUN = "score_run"
METRICS = ("C@1", "C@5", "C@10", "AP", "nDCG@10", "Judged@10")
"""What a scored run reports, as fractions in [0, 1]."""
STATUS = {
    Job.Status.QUEUED: "queued",
    Job.Status.RUNNING: "running",
    Job.Status.SUCCEEDED: "done",
    Job.Status.FAILED: "failed",
}
STATUS_NAMES = tuple(STATUS.values())
"""A scoring job's status as the API names it."""


@dataclass(frozen=True)
class RunScores:
    """One run's means under the corrected and the original positives; ``pooled``: whether the label
    set's campaign pooled it (FIRE §4: else biased low); ``intervals``: per corrected C@K, AP and
    nDCG@10, :meth:`~retrieval.scoring.score_intervals.ScoreInterval.as_dict`."""

    run: str
    label_set: str | None
    queries: int
    scores: dict[str, float | None]
    original: dict[str, float | None]
    pooled: bool
    intervals: dict[str, dict] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class JobScores:
    """Where a scoring job stands, in the API's words; the scores are None until it is done."""

    job: int
    status: str
    error: str | None
    label_set: str | None
    queries: int | None
    scores: dict[str, float | None] | None
    original: dict[str, float | None] | None
    pooled: bool
    intervals: dict[str, dict] | None = None


def score_run(dataset: Dataset, run_name: str, label_set: LabelSet | None) -> RunScores:
    """The run's metrics of :data:`METRICS` under ``label_set`` (original positives if None)."""
    scored = rescore_dataset(dataset, label_set, [run_name]).result
    corrected = scored.means("corrected")[run_name]
    original = scored.means("original").get(run_name, corrected)
    return RunScores(
        run=run_name,
        label_set=label_set.name if label_set else None,
        queries=scored.n_queries,
        scores={name: corrected[name] for name in METRICS},
        original={name: original[name] for name in METRICS},
        pooled=run_name in (pooled_runs(label_set) or ()),
        intervals={
            name: interval.as_dict() for name, interval in scored.intervals[run_name].items()
        },
    )


def chosen_label_set(dataset: Dataset, name: str = "") -> LabelSet | None:
    """The label set ``name`` of ``dataset``, or its default when no name is given."""
    sets = dataset.label_sets.defer("arrays")
    if not name:
        return default_label_set(sets)
    found = sets.filter(name=name).first()
    if found is None:
        known = ", ".join(s.name for s in sets) or "none"
        raise LabelSetError(
            f"dataset {dataset.name!r} has no label set named {name!r} (known: {known})",
            code="not_found",
            status=404,
        )
    return found


def submit_run_file(dataset: Dataset, name: str, upload, labels: str = "", user=None) -> Job:
    """Register the uploaded TREC run ``upload`` as model ``name`` and queue its scoring job; its
    size is checked against ``FIREPOOL_MAX_UPLOAD_BYTES`` first, errors name it by its own name."""
    label_set = chosen_label_set(dataset, labels)
    shown = Path(upload.name or "run").name
    limit = max_upload_bytes()
    if upload.size > limit:
        raise FormatError(
            shown,
            None,
            None,
            f"file is {upload.size:,} bytes, over the limit of {limit:,} bytes "
            "(FIREPOOL_MAX_UPLOAD_BYTES)",
        )
    with tempfile.TemporaryDirectory(prefix="firepool-run-") as directory:
        path = Path(directory) / "run.txt"
        with open(path, "wb") as copy:
            copy.writelines(upload.chunks())
        with transaction.atomic():
            model = register_run_file(dataset, name, path, shown_as=shown)
            arguments = {"dataset": dataset.name, "run": model.name}
            if label_set is not None:
                arguments["labels"] = label_set.name
            return runner.submit(SCORE_RUN, arguments, user)


def scoring_jobs():
    """The jobs that score an uploaded run (what the scores API looks a job up among)."""
    return runner.jobs_of_kind(SCORE_RUN)


def job_scores(job: Job) -> JobScores:
    """A scoring job's status, error and, once done, the :class:`RunScores` it stored."""
    result = (job.result or {}) if job.status == Job.Status.SUCCEEDED else {}
    return JobScores(
        job=job.pk,
        status=STATUS[job.status],
        error=job.error or None,
        label_set=result.get("label_set") or job.arguments.get("labels"),
        queries=result.get("queries"),
        scores=result.get("scores"),
        original=result.get("original"),
        pooled=bool(result.get("pooled", False)),
        intervals=result.get("intervals"),
    )
