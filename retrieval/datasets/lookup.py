"""Find the dataset, model, run or label set a command or a job names.

A missing one raises :class:`config.errors.NotFound` listing known names, a user error each
boundary shows as its message (a command's ``CommandError``, a form error, a failed job).
"""

from config.errors import NotFound
from retrieval.models import Dataset, LabelSet, RetrievalModel, Run


def get_dataset(name: str) -> Dataset:
    try:
        return Dataset.objects.get(name=name)
    except Dataset.DoesNotExist:
        known = ", ".join(Dataset.objects.values_list("name", flat=True)[:20]) or "none"
        raise NotFound(f"no dataset named {name!r} (known: {known})") from None


def get_model(dataset: Dataset, name: str) -> RetrievalModel:
    try:
        return RetrievalModel.objects.select_related("dataset").get(dataset=dataset, name=name)
    except RetrievalModel.DoesNotExist:
        known = ", ".join(dataset.models.values_list("name", flat=True)[:20]) or "none"
        raise NotFound(
            f"dataset {dataset.name!r} has no model named {name!r} (known: {known})"
        ) from None


def get_run(dataset: Dataset, name: str) -> Run:
    try:
        return Run.objects.select_related("dataset", "model").get(dataset=dataset, name=name)
    except Run.DoesNotExist:
        known = ", ".join(dataset.runs.values_list("name", flat=True)[:20]) or "none"
        raise NotFound(
            f"dataset {dataset.name!r} has no run named {name!r} (known: {known})"
        ) from None


def get_label_set(dataset: Dataset, name: str) -> LabelSet:
    label_set = dataset.label_sets.filter(name=name).first()
    if label_set is None:
        known = ", ".join(dataset.label_sets.values_list("name", flat=True)[:20]) or "none"
        raise NotFound(f"dataset {dataset.name!r} has no label set named {name!r} (known: {known})")
    return label_set


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
