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
