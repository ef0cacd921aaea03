"""The app's shared form parts: the name-rule field validator, and the fields that pick
datasets, models, runs and label sets by name for every job kind's form (the pages' own forms
live with their concept); services check the rest."""

from django import forms
from django.utils.choices import CallableChoiceIterator

from config.errors import UserError
from retrieval.datasets import lookup
from retrieval.datasets.names import InvalidName, check_name


class NameValidator:
    """A form or serializer field validator applying :func:`check_name` to one kind of thing,
    so pages and API clients see the service's message on the field."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __call__(self, value: str) -> None:
        try:
            check_name(value, self.what)
        except InvalidName as exc:
            raise forms.ValidationError(str(exc), code=InvalidName.code) from None


def split_names(text: str) -> list[str]:
    return [name.strip() for name in (text or "").split(",") if name.strip()]


class PickedName(forms.CharField):
    """A name the form's ``clean`` looks up, drawn as a select box of the stored names (``names()``
    runs only when drawn); validated as text, so the CLI passes the same value."""

    def __init__(self, names, *, blank: str = "", **kwargs):
        super().__init__(**kwargs)
        empty = [("", blank or "—")] if not self.required or blank else []
        self.widget = forms.Select(choices=CallableChoiceIterator(lambda: [*empty, *names()]))


class NameBoxes(forms.CheckboxSelectMultiple):
    """Checkboxes whose value may also be a comma-separated text (a link's, a rerun's)."""

    def format_value(self, value) -> list[str]:
        return super().format_value(split_names(value) if isinstance(value, str) else value)


class PickedNames(forms.CharField):
    """Several names as checkboxes (as :class:`PickedName`); a page's list of boxes and the
    CLI's or API's comma-separated text both clean to that text."""

    def __init__(self, names, **kwargs):
        super().__init__(**kwargs)
        self.widget = NameBoxes(choices=CallableChoiceIterator(names))

    def to_python(self, value) -> str:
        if isinstance(value, list | tuple):
            value = ",".join(str(item) for item in value)
        return super().to_python(value)


def names_by_dataset(model_path: str):
    """A ``names()`` for :class:`PickedName`: ``app.Model``'s names by dataset (one query)."""

    def names() -> list:
        from django.apps import apps

        rows = (
            apps.get_model(model_path)
            .objects.order_by("dataset__name", "name")
            .values_list("dataset__name", "name")
        )
        groups: dict[str, list] = {}
        for dataset, name in rows:
            groups.setdefault(dataset, []).append((name, name))
        return list(groups.items())

    return names


def dataset_names() -> list:
    return [(name, name) for name in lookup.dataset_names()]


def found_or_invalid(lookup, *args):
    """The looked-up object, with a missing one turned into a form error."""
    try:
        return lookup(*args)
    except UserError as exc:
        raise forms.ValidationError(str(exc)) from None


class DatasetForm(forms.Form):
    dataset = PickedName(dataset_names, max_length=100)

    def clean_dataset(self) -> str:
        return found_or_invalid(lookup.get_dataset, self.cleaned_data["dataset"]).name


MODEL_NAMES = names_by_dataset("retrieval.RetrievalModel")
RUN_NAMES = names_by_dataset("retrieval.Run")
LABEL_SET_NAMES = names_by_dataset("retrieval.LabelSet")
