"""Forms of the campaign's people page: what an admin types beside an action."""

from django import forms


class PauseForm(forms.Form):
    """Why an admin pauses an annotator (shown to them after "paused by an admin")."""

    reason = forms.CharField(max_length=200, required=False, strip=True)


class DiscountForm(forms.Form):
    """Which labels a discount takes back (all, or those given since a time), and, when
    confirming, the count the admin was shown: a discount whose count changed meanwhile is
    shown again rather than done."""

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
