"""The built-in encoders' job kinds: embed, train, and build a model from features to a
run; their forms check each name against the database before a job is queued."""

from django import forms
from django.conf import settings

from config.errors import UserError
from jobs.progress import Reporter
from jobs.registry import JobKind, register
from retrieval import job_results
from retrieval.datasets.lookup import get_dataset, get_model
from retrieval.encoders.base import DEVICES, EPOCHS, SEEDS, device_problem
from retrieval.forms import MODEL_NAMES, DatasetForm, PickedName, found_or_invalid
from retrieval.proxies import RELEVANCES


class DeviceField(forms.ChoiceField):
    """Where a GPU job runs: auto, cpu or cuda, cuda only where the job can have it (with
    ``FIREPOOL_GPU_QUEUE`` a GPU machine's worker runs it, so this machine's CUDA is moot)."""

    def __init__(self, **kwargs):
        labels = {"auto": "auto (GPU when present)"}
        choices = [(name, labels.get(name, name)) for name in DEVICES]
        super().__init__(choices=choices, initial="auto", required=False, **kwargs)

    def validate(self, value) -> None:
        super().validate(value)
        problem = value and device_problem(value, gpu_elsewhere=settings.FIREPOOL_GPU_QUEUE)
        if problem:
            raise forms.ValidationError(problem)


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
    split = forms.CharField(max_length=20, initial="test", required=False, empty_value="test")


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


class TrainingForm(ModelNameForm):
    """A model of the dataset and how to train it (empty epochs: the encoder's own)."""

    epochs = forms.IntegerField(min_value=EPOCHS[0], max_value=EPOCHS[1], required=False)
    seed = forms.IntegerField(min_value=SEEDS[0], max_value=SEEDS[1], initial=0, required=False)
    device = DeviceField()


class TrainForm(TrainingForm):
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


class BuildModelForm(TrainingForm):
    """A built-in encoder model of the dataset to take from features to a run."""

    field_order = ("dataset", "model", "k")
    k = forms.IntegerField(min_value=1, max_value=1000, initial=20, required=False)

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


MODEL_RESULT = {
    "result_template": "retrieval/job_results/model.html",
    "result_context": job_results.model_result,
}
"""The result page of the jobs that make or use a model's encoder."""


def model_description(verb: str):
    return lambda a: f"{verb} {a.get('model')} on {a.get('dataset')} ({a.get('split', 'train')})"


register(
    JobKind(
        "embed",
        "Embed captions and videos, build the index",
        run_embed,
        EmbedForm,
        queue="gpu",
        describe=model_description("embed with"),
        **MODEL_RESULT,
    )
)


register(
    JobKind(
        "train",
        "Train a built-in encoder",
        run_train,
        TrainForm,
        queue="gpu",
        describe=lambda a: f"train {a['model']} on {a['dataset']}",
        **MODEL_RESULT,
    )
)


register(
    JobKind(
        "build_model",
        "Build a built-in encoder's run: features, training, embedding, search",
        run_build_model,
        BuildModelForm,
        queue="gpu",
        describe=lambda a: f"build {a['model']} on {a['dataset']} (top {a.get('k', 20)})",
        **MODEL_RESULT,
    )
)
