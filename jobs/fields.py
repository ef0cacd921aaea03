"""Form fields for job arguments, read strictly from pages and from ``manage.py jobs submit``
text, so a typed argument means what it says or is refused before the job is queued."""

from django import forms

TRUE = frozenset({"true", "1", "yes", "on"})
FALSE = frozenset({"false", "0", "no", "off", ""})


class YesNoInput(forms.CheckboxInput):
    """A checkbox that hands the field what was sent (Django's turns "0" and "no" into True)."""

    def value_from_datadict(self, data, files, name):
        return data.get(name)


class YesNoField(forms.BooleanField):
    """A flag: "on", true/false, 1/0, yes/no or off (absent or empty: False); anything else
    is an error rather than True."""

    widget = YesNoInput

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_python(self, value):
        if isinstance(value, bool) or value is None:
            return bool(value)
        text = str(value).strip().lower()
        if text in TRUE:
            return True
        if text in FALSE:
            return False
        raise forms.ValidationError(
            f"{str(value)[:40]!r} is not a yes or no: use true or false (1 or 0, yes or no)",
            code="invalid",
        )
