"""Job kinds of the retrieval app. Each form checks its arguments against the database before
a job is queued (a bad name is a form error, not a failed job); each ``run_*`` calls one
service and reports progress through the job's reporter."""

from django import forms

from config.errors import UserError
from jobs.fields import YesNoField
from jobs.progress import Reporter
from jobs.registry import ADMIN, RESEARCH, JobKind, register
from retrieval import job_results
from retrieval.datasets.lookup import get_dataset, get_label_set, get_model, get_run
from retrieval.encoders.base import DEVICES, EPOCHS, SEEDS, device_problem
from retrieval.forms import (
    LABEL_SET_NAMES,
    MODEL_NAMES,
    RUN_NAMES,
    DatasetForm,
    PickedName,
    PickedNames,
    found_or_invalid,
    split_names,
)
from retrieval.label_sets.service import WARM_JOB
from retrieval.proxies import PROXIES, RELEVANCES


class DeviceField(forms.ChoiceField):
    """Where a GPU job runs: auto, cpu or cuda, cuda only where the job can have it (with
    ``FIREPOOL_GPU_QUEUE`` a GPU machine's worker runs it, so this machine's CUDA is moot)."""

    def __init__(self, **kwargs):
        labels = {"auto": "auto (GPU when present)"}
        choices = [(name, labels.get(name, name)) for name in DEVICES]
        super().__init__(choices=choices, initial="auto", required=False, **kwargs)

    def validate(self, value) -> None:
        from django.conf import settings

        super().validate(value)
        problem = (
            device_problem(value, gpu_elsewhere=settings.FIREPOOL_GPU_QUEUE) if value else None
        )
        if problem is not None:
            raise forms.ValidationError(problem)


def seed_field() -> forms.IntegerField:
    """A training seed, within :data:`~retrieval.encoders.base.SEEDS`."""
    return forms.IntegerField(min_value=SEEDS[0], max_value=SEEDS[1], initial=0, required=False)


def epochs_field() -> forms.IntegerField:
    """Training epochs, within :data:`~retrieval.encoders.base.EPOCHS` (empty: the encoder's)."""
    return forms.IntegerField(min_value=EPOCHS[0], max_value=EPOCHS[1], required=False)


class ModelNameForm(DatasetForm):
    """A model of the dataset, checked to exist (``found_model`` once cleaned)."""

    model = PickedName(MODEL_NAMES, max_length=100)

    def clean(self) -> dict:
        data = super().clean()
        self.found_model = None
        if "dataset" in data and "model" in data:
            dataset = get_dataset(data["dataset"])
            self.found_model = found_or_invalid(get_model, dataset, data["model"])
        return data


class ModelForm(ModelNameForm):
    split = forms.CharField(max_length=20, initial="test", required=False)

    def clean(self) -> dict:
        data = super().clean()
        data["split"] = data.get("split") or "test"
        return data


class EmbedForm(ModelForm):
    device = DeviceField()
    batch_size = forms.IntegerField(min_value=1, max_value=65536, initial=256, required=False)


def run_embed(
    reporter: Reporter,
    dataset: str,
    model: str,
    split: str = "test",
    device: str = "",
    batch_size: int = 256,
) -> dict:
    from retrieval.encoders.service import embed
    from retrieval.models import Caption, Video

    found = get_model(get_dataset(dataset), model)
    total = (
        Caption.objects.filter(dataset=found.dataset, split=split).count()
        + Video.objects.filter(dataset=found.dataset, split=split).count()
    )
    reporter.step(f"embedding captions and videos of the {split} split", total=total)
    embeddings = embed(
        found,
        split=split,
        device=device or "auto",
        batch_size=batch_size,
        progress=reporter.advance,
    )
    return {
        "captions": len(embeddings.caption_ids),
        "videos": len(embeddings.video_ids),
        "dim": int(embeddings.captions.shape[1]),
    }


class TrainForm(ModelNameForm):
    epochs = epochs_field()
    seed = seed_field()
    device = DeviceField()
    relevance = forms.ChoiceField(
        choices=[(name, name) for name in RELEVANCES],
        initial="instance",
        required=False,
        help_text="Positives: 'instance' (own video only) or a proxy thresholded at threshold.",
    )
    threshold = forms.FloatField(
        required=False,
        help_text="Proxy relevance only: pairs with S >= T are positives, T in (0, 1] (default "
        "0.4: Wray et al. 2021 find SYN, METEOR and PoS best near 0.4, BoW near 0.2).",
    )

    def clean(self) -> dict:
        from retrieval.encoders.service import check_relevance

        data = super().clean()
        if "relevance" in data and "threshold" in data:
            try:  # the training service's own rule, before a job is queued
                check_relevance(data["relevance"] or "instance", data["threshold"])
            except UserError as exc:
                self.add_error(
                    "threshold" if data["threshold"] is not None else "relevance", str(exc)
                )
        return data


def run_train(
    reporter: Reporter,
    dataset: str,
    model: str,
    device: str = "",
    relevance: str = "",
    **options: float | None,
) -> dict:
    """Train the model; ``options`` are the form's epochs, seed and threshold."""
    from retrieval.encoders.service import train

    found = get_model(get_dataset(dataset), model)
    reporter.step(f"training {found.name} ({found.encoder}) on the train split")

    def epoch_done(done: int, total: int, loss: float) -> None:
        reporter.total, reporter.done = total, done
        reporter.message = f"training {found.name}: epoch {done} of {total}, loss {loss:.4f}"
        reporter.flush()

    relevance = relevance or "instance"
    train(found, device=device or "auto", relevance=relevance, on_epoch=epoch_done, **options)
    return found.training_log[-1]


class PredictForm(ModelForm):
    k = forms.IntegerField(
        min_value=1,
        max_value=10000,
        initial=20,
        required=False,
        help_text="Depth of each ranked list.",
    )
    index = forms.ChoiceField(
        choices=[("exact", "exact"), ("ivf", "ivf"), ("hnsw", "hnsw")],
        initial="exact",
        required=False,
        help_text="exact: inner product on L2-normalised vectors; ivf or hnsw for large "
        "collections (the run reports its recall@k against exact search).",
    )
    nlist = forms.IntegerField(
        min_value=1,
        max_value=1_000_000,
        required=False,
        help_text="IVF lists (default about 4 sqrt(n)).",
    )
    nprobe = forms.IntegerField(
        min_value=1, max_value=1_000_000, required=False, help_text="IVF lists visited per query."
    )
    ef_search = forms.IntegerField(
        min_value=1, max_value=1_000_000, required=False, help_text="HNSW candidates per query."
    )


def run_predict(
    reporter: Reporter,
    dataset: str,
    model: str,
    split: str = "test",
    k: int = 20,
    **search: str | int,
) -> dict:
    """Search every query caption; ``search`` holds the form's index kind and its settings."""
    from retrieval.search.service import predict

    found = get_model(get_dataset(dataset), model)
    reporter.step(f"indexing and searching the {split} split (top {k})")
    kind = search.pop("index", "") or "exact"
    run = predict(found, k=k, split=split, index_kind=kind, **search)
    return {"run": run.name, "queries": run.query_count, "depth": run.depth, **run.metadata}


class ProxiesForm(DatasetForm):
    proxy = forms.ChoiceField(choices=[(p, p) for p in (*PROXIES, "all")], initial="all")
    split = forms.CharField(
        max_length=20,
        initial="test",
        required=False,
        help_text="Videos and captions of this split.",
    )
    rebuild = YesNoField(help_text="Compute again, ignoring the cache.")


def run_proxies(
    reporter: Reporter, dataset: str, proxy: str, split: str = "", rebuild: bool = False
) -> dict:
    from retrieval.proxies.service import ProxyOptions, proxy_relevance, proxy_summary

    found = get_dataset(dataset)
    names = PROXIES if proxy == "all" else (proxy,)
    summaries = []
    reporter.step("semantic-proxy matrices", total=len(names))
    for name in names:
        reporter.message = f"semantic-proxy matrix: {name}"
        reporter.flush()
        relevance = proxy_relevance(
            found, ProxyOptions(name, split=split or "test"), workers=1, rebuild=rebuild
        )
        summary = proxy_summary(relevance)
        summary.pop("path")
        summaries.append(summary)
        reporter.advance()
    return {"dataset": found.name, "proxies": summaries}


class ScoringForm(DatasetForm):
    """A label set and runs of the dataset to score, each checked to exist."""

    labels = PickedName(
        LABEL_SET_NAMES,
        blank="the original positives only",
        max_length=200,
        required=False,
        help_text="Label set name.",
    )

    def run_names(self, data: dict) -> list[str]:
        return []

    def clean(self) -> dict:
        data = super().clean()
        if data.get("dataset"):
            dataset = get_dataset(data["dataset"])
            if data.get("labels"):
                found_or_invalid(get_label_set, dataset, data["labels"])
            for name in self.run_names(data):
                found_or_invalid(get_run, dataset, name)
        return data


class RescoreForm(ScoringForm):
    runs = PickedNames(
        RUN_NAMES,
        max_length=2000,
        required=False,
        help_text="Runs of the dataset to re-score (none ticked: every run).",
    )
    only_labelled = YesNoField(help_text="Only the queries the label set judges.")

    def run_names(self, data: dict) -> list[str]:
        return split_names(data.get("runs", ""))


def _label_set(dataset, labels: str):
    """The dataset's label set ``labels``, None for none (the original positives only)."""
    return get_label_set(dataset, labels) if labels else None


def run_label_set_figures(reporter: Reporter, dataset: str, labels: str = "") -> dict:
    """Compute and store what pages show of a label set (queued when the set is made)."""
    from retrieval.label_sets.figures import warm

    found = get_dataset(dataset)
    return warm(found, _label_set(found, labels), reporter.step)


def run_rescore(
    reporter: Reporter,
    dataset: str,
    labels: str = "",
    runs: str = "",
    only_labelled: bool = False,
) -> dict:
    from retrieval.scoring.rescoring_service import rescore_dataset

    found = get_dataset(dataset)
    label_set = _label_set(found, labels)
    reporter.step("re-scoring runs with the corrected positives")
    scored = rescore_dataset(
        found, label_set, split_names(runs) or None, only_labelled=only_labelled
    )
    return scored.result.as_dict()


class ScoreRunForm(ScoringForm):
    run = PickedName(RUN_NAMES, max_length=100)

    def run_names(self, data: dict) -> list[str]:
        return [data["run"]] if data.get("run") else []


def run_score_run(reporter: Reporter, dataset: str, run: str, labels: str = "") -> dict:
    from retrieval.scoring.run_scoring import score_run

    found = get_dataset(dataset)
    label_set = _label_set(found, labels)
    reporter.step(f"scoring {run} with the corrected positives")
    return score_run(found, run, label_set).as_dict()


class ImportDatasetForm(forms.Form):
    """An uploaded captions file to import; the Upload a dataset page fills it in."""

    name = forms.CharField(max_length=100, help_text="Dataset name (created if new).")
    format = forms.ChoiceField(choices=[])
    captions = forms.CharField(
        max_length=1000, help_text="The uploaded file; filled in by the Upload a dataset page."
    )
    file_name = forms.CharField(max_length=200, required=False)
    videos = forms.CharField(max_length=1000, required=False)
    video_url = forms.CharField(max_length=1000, required=False)
    split = forms.CharField(max_length=32, required=False)
    skip_broken = YesNoField()

    def __init__(self, *args, **kwargs):
        from retrieval.formats import CAPTION_FORMATS

        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [(name, name) for name in CAPTION_FORMATS]

    def clean_captions(self) -> str:
        from retrieval.datasets.uploads import UploadError, input_file

        try:
            input_file(self.cleaned_data["captions"])
        except UploadError as exc:
            raise forms.ValidationError(str(exc)) from None
        return self.cleaned_data["captions"]

    def clean(self) -> dict:
        from retrieval.datasets.uploads import DatasetUpload

        data = super().clean()
        if "name" in data and "format" in data:
            options = DatasetUpload(
                data["name"],
                data["format"],
                data.get("videos", ""),
                data.get("video_url", ""),
                data.get("split", ""),
            )
            try:
                options.check()
            except UserError as exc:
                raise forms.ValidationError(str(exc)) from None
        return data


def run_import_dataset(reporter: Reporter, **arguments) -> dict:
    from retrieval.datasets.uploads import run_dataset_import

    return run_dataset_import(reporter, **arguments)


class BuildModelForm(ModelNameForm):
    """A built-in encoder model of the dataset to take from features to a run."""

    k = forms.IntegerField(min_value=1, max_value=1000, initial=20, required=False)
    epochs = epochs_field()
    seed = seed_field()
    device = DeviceField()

    def clean(self) -> dict:
        from retrieval.models import RetrievalModel

        data = super().clean()
        found = self.found_model
        if found is not None and found.source != RetrievalModel.Source.ENCODER:
            raise forms.ValidationError(
                f"model {found.name!r} is not a built-in encoder; nothing to build"
            )
        return data


def run_build_model(
    reporter: Reporter, dataset: str, model: str, device: str = "", **options: int | None
) -> dict:
    """Build the model's run; ``options`` are the form's k, epochs and seed."""
    from retrieval.datasets.uploads import build_model

    found = get_model(get_dataset(dataset), model)
    return build_model(found, reporter, device=device or "auto", **options)


def run_media(reporter: Reporter, dataset: str) -> dict:
    """Make the dataset's missing browser copies and segment clips (several jobs share them)."""
    from retrieval.media.service import make_missing, pending

    found = get_dataset(dataset)
    reporter.step(f"browser copies and segment clips of {found.name}", total=pending(found).count())
    return {"dataset": found.name, **make_missing(found, advance=reporter.advance).as_dict()}


RESULTS = "retrieval/job_results/"
MODEL_RESULT = {
    "result_template": RESULTS + "model.html",
    "result_context": job_results.model_result,
}


def _model_description(verb: str):
    return lambda a: f"{verb} {a.get('model')} on {a.get('dataset')} ({a.get('split', 'train')})"


def _with_labels(arguments: dict) -> str:
    return f" with {arguments['labels']}" if arguments.get("labels") else ""


for _kind in (
    JobKind(
        "embed",
        "Embed captions and videos, build the index",
        run_embed,
        EmbedForm,
        queue="gpu",
        describe=_model_description("embed with"),
        **MODEL_RESULT,
    ),
    JobKind(
        "train",
        "Train a built-in encoder",
        run_train,
        TrainForm,
        queue="gpu",
        describe=lambda a: f"train {a['model']} on {a['dataset']}",
        **MODEL_RESULT,
    ),
    JobKind(
        "predict",
        "Search every query caption (a run)",
        run_predict,
        PredictForm,
        describe=_model_description("predict with"),
        **MODEL_RESULT,
    ),
    JobKind(
        "proxies",
        "Semantic-proxy relevance matrices",
        run_proxies,
        ProxiesForm,
        describe=lambda a: f"{a['proxy']} proxy matrices of {a['dataset']}",
        result_template=RESULTS + "proxies.html",
        result_context=job_results.proxies,
    ),
    JobKind(
        "rescore",
        "Re-score runs with a label set",
        run_rescore,
        RescoreForm,
        permission=RESEARCH,
        describe=lambda a: f"re-score {a['dataset']}{_with_labels(a)}",
        result_template=RESULTS + "rescore.html",
        result_context=job_results.rescore,
    ),
    JobKind(
        "score_run",
        "Score one run with a label set",
        run_score_run,
        ScoreRunForm,
        permission=RESEARCH,
        describe=lambda a: f"score {a['run']} on {a['dataset']}{_with_labels(a)}",
        result_template=RESULTS + "score_run.html",
        result_context=job_results.score_run,
    ),
    JobKind(
        WARM_JOB,
        "Compute a label set's leaderboard, report and judging-orders comparison",
        run_label_set_figures,
        ScoringForm,
        permission=RESEARCH,
        joins=True,
        lane="figures",
        queue="live",
        describe=lambda a: f"figures of {a['dataset']} under {a.get('labels') or 'original'}",
    ),
    JobKind(
        "import_dataset",
        "Import an uploaded captions file (from the Upload a dataset page)",
        run_import_dataset,
        ImportDatasetForm,
        permission=ADMIN,
        atomic=True,
        describe=lambda a: (
            f"import {a.get('file_name') or 'captions'} ({a['format']}) into {a['name']}"
        ),
        result_template=RESULTS + "import_dataset.html",
        result_context=job_results.import_dataset,
    ),
    JobKind(
        "media",
        "Make browser copies and segment clips of a dataset's videos",
        run_media,
        DatasetForm,
        queue="media",
        permission=ADMIN,
        describe=lambda a: f"browser copies and clips of {a['dataset']}",
    ),
    JobKind(
        "build_model",
        "Build a built-in encoder's run: features, training, embedding, search",
        run_build_model,
        BuildModelForm,
        queue="gpu",
        describe=lambda a: f"build {a['model']} on {a['dataset']} (top {a.get('k', 20)})",
        **MODEL_RESULT,
    ),
):
    register(_kind)
