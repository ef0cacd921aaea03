"""Find the dataset, model, run or label set a command or a job names; a missing one raises
:class:`config.errors.NotFound` listing known names, which each boundary shows as its message."""

from django.db.models import QuerySet

from config.errors import NotFound
from retrieval.models import Dataset, LabelSet, RetrievalModel, Run


def _named(rows: QuerySet, name: str, missing: str):
    """The row of ``rows`` called ``name``; else :class:`NotFound` saying ``missing`` and
    listing known names."""
    found = rows.filter(name=name).first()
    if found is None:
        known = ", ".join(rows.values_list("name", flat=True)[:20]) or "none"
        raise NotFound(f"{missing} named {name!r} (known: {known})")
    return found


def get_dataset(name: str) -> Dataset:
    return _named(Dataset.objects.all(), name, "no dataset")


def get_model(dataset: Dataset, name: str) -> RetrievalModel:
    models = RetrievalModel.objects.select_related("dataset").filter(dataset=dataset)
    return _named(models, name, f"dataset {dataset.name!r} has no model")


def get_run(dataset: Dataset, name: str) -> Run:
    runs = Run.objects.select_related("dataset", "model").filter(dataset=dataset)
    return _named(runs, name, f"dataset {dataset.name!r} has no run")


def get_label_set(dataset: Dataset, name: str) -> LabelSet:
    return _named(dataset.label_sets.all(), name, f"dataset {dataset.name!r} has no label set")


# What pages list and find: the same reads as above, for views, which never query
# themselves. Runs and label sets are read without their arrays (pages show names and
# facts; the arrays are megabytes).


def datasets():
    """Every dataset, in the model's order."""
    return Dataset.objects.all()


def dataset_names() -> list[str]:
    return list(Dataset.objects.order_by("name").values_list("name", flat=True))


def find_dataset(name: str) -> Dataset | None:
    return Dataset.objects.filter(name=name).first()


def runs_of(owner: Dataset | RetrievalModel):
    """A dataset's or a model's runs by name, without their arrays."""
    return owner.runs.defer("arrays").order_by("name")


def find_run(dataset: Dataset, name: str) -> Run | None:
    return dataset.runs.defer("arrays").filter(name=name).first()


def label_sets_of(dataset: Dataset | None = None):
    """A dataset's label sets (every dataset's, with their datasets, when None), without
    their arrays."""
    if dataset is None:
        return LabelSet.objects.select_related("dataset").defer("arrays")
    return dataset.label_sets.defer("arrays")


def label_set_names(dataset: Dataset) -> list[str]:
    return list(dataset.label_sets.order_by("name").values_list("name", flat=True))


def find_label_set(dataset: Dataset, name: str) -> LabelSet | None:
    return dataset.label_sets.defer("arrays").filter(name=name).first()
