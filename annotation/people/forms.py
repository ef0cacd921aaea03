"""Forms of the campaign's people page: what an admin types beside an action."""

from django import forms
from django.contrib.auth.forms import UsernameField
from django.contrib.auth.validators import UnicodeUsernameValidator

from config.text_validators import TextValidator


class PauseForm(forms.Form):
    """Why an admin pauses an annotator (shown to them after "paused by an admin")."""

    reason = forms.CharField(
        required=False, strip=True, validators=[TextValidator("pause reason", 200)]
    )


class DiscountForm(forms.Form):
    """Which labels a discount takes back (since a time), and the count the admin confirmed."""

    since = forms.DateTimeField(
        required=False,
        help_text="Only labels given at or after this time (UTC); empty: all.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}),
    )
    expected = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)


class InviteForm(forms.Form):
    """Annotators to put on the campaign's list, from those who may judge and are not on it."""

    annotators = forms.TypedMultipleChoiceField(coerce=int, choices=())

    def __init__(self, *args, choices=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["annotators"].choices = choices


class NewAnnotatorForm(forms.Form):
    """A new annotator account: a username under Django's own rule, and an optional email."""

    username = UsernameField(
        max_length=150,
        validators=[UnicodeUsernameValidator()],
        help_text="Letters, digits and @ . + - _ only; at most 150 characters.",
    )
    email = forms.EmailField(required=False, max_length=254)
