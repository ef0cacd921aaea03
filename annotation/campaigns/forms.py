"""Forms of the annotation app: one campaign form for the admin site and the pool job."""

from django import forms
from django.utils.choices import CallableChoiceIterator

from annotation.campaigns import settings
from annotation.campaigns import spec as campaign_spec
from annotation.campaigns.lookup import get_campaign
from annotation.campaigns.settings import SettingsError
from annotation.campaigns.spec import CampaignSpec, spec_errors
from annotation.models import FIRE_GUIDELINES, Campaign, Judgement
from annotation.policy import rules as label_policy
from config.text_validators import TextValidator
from jobs.fields import YesNoField
from retrieval.forms import LABEL_SET_NAMES, PickedName, found_or_invalid

OWN_CAMPAIGN = "none: a campaign of its own"
"""The ``extends`` choice that completes no label set."""


class SettleField(forms.MultipleChoiceField):
    """The metrics judging must settle: ticked boxes, a list, or a comma-separated text in any
    case (``c@1,ap``), cleaned to :func:`settings.settle_metrics`'s canonical tuple; none
    given: FIRE's."""

    widget = forms.CheckboxSelectMultiple

    def __init__(self, **kwargs) -> None:
        super().__init__(choices=[(m, m) for m in settings.SETTLE_METRICS], **kwargs)

    def to_python(self, value) -> list:
        if isinstance(value, str):
            return [] if not value.strip() else [value]
        return super().to_python(value)

    def validate(self, value) -> None:  # the choices are checked by clean(), any case
        if self.required and not value:
            raise forms.ValidationError(self.error_messages["required"], code="required")

    def clean(self, value):
        value = super().clean(value)
        if not value:
            return None
        try:  # to_python made every item a text; one may be a comma-separated list
            return settings.settle_metrics("settle", ",".join(value))
        except SettingsError as exc:
            raise forms.ValidationError(str(exc).removeprefix("settle: ")) from None


def _half_width(value: float) -> None:
    low, high = settings.HALF_WIDTH
    if value is not None and not low < value <= high:
        raise forms.ValidationError(f"must be above {low:g} and at most {high:g} points")


def bounded(bounds: tuple[int, int], **kwargs) -> forms.IntegerField:
    """An integer field between ``bounds`` (both included)."""
    return forms.IntegerField(min_value=bounds[0], max_value=bounds[1], **kwargs)


class CampaignSettingsForm(forms.Form):
    """A campaign's settings with the bounds of :mod:`annotation.campaigns.spec`: the pages,
    the pool job and ``create_campaign`` all validate through it; ``spec()`` builds the spec."""

    name = forms.CharField(max_length=campaign_spec.NAME_LENGTH)
    depth = bounded(campaign_spec.DEPTH, initial=campaign_spec.DEFAULT_DEPTH)
    queries = bounded(
        campaign_spec.QUERY_SAMPLE,
        required=False,
        help_text="Sample this many query captions (all when empty).",
    )
    seed = bounded(campaign_spec.SEED, initial=0, required=False)
    second_label_rate = forms.FloatField(
        min_value=0.0,
        max_value=1.0,
        initial=label_policy.DEFAULT_SECOND_LABEL_RATE,
        required=False,
        help_text="Fire policy: share of pairs labelled twice (ignored under adaptive).",
    )
    policy = forms.ChoiceField(
        choices=[(name, name) for name in label_policy.POLICIES],
        initial=label_policy.FIRE,
        required=False,
        help_text="fire: one label, a second for the second-label sample, a third while labels "
        "tie (FIRE); adaptive: more labels, each from another annotator, while the pair's "
        "label is less sure than the confidence, weighing each annotator by their accuracy.",
    )
    confidence = forms.FloatField(
        min_value=label_policy.CONFIDENCE_RANGE[0],
        max_value=label_policy.CONFIDENCE_RANGE[1],
        initial=label_policy.DEFAULT_CONFIDENCE,
        required=False,
        help_text="Adaptive policy: how sure a pair's label must be before it needs no more.",
    )
    max_labels = bounded(
        campaign_spec.MAX_LABELS,
        required=False,
        help_text=f"Labels after which a pair gets no more (empty: {label_policy.DEFAULT_CAP} under "
        f"fire, where a tie then stays a disagreement; {label_policy.DEFAULT_ADAPTIVE_CAP} under "
        "adaptive).",
    )
    lease_seconds = bounded(
        campaign_spec.LEASE_SECONDS,
        initial=campaign_spec.DEFAULT_LEASE_SECONDS,
        required=False,
        help_text="How long a pair stays with an annotator before it returns to the queue.",
    )

    show_roles = YesNoField(
        initial=True,
        help_text="Underline who, does what, to what, where and how in each caption.",
    )

    judging_order = forms.ChoiceField(
        choices=[(name, name) for name in settings.JUDGING_ORDERS],
        initial=settings.DEFAULT_STRATEGY,
        required=False,
        help_text="Which pair comes next: depth (caption by caption), metric-first (only pairs "
        "that can still change a run's Correct@K), or an adaptive order (maxmean, mtf, "
        "rbp-adaptive) or static fusion (rrf, rbp).",
    )
    budget = bounded(
        settings.BUDGET,
        required=False,
        help_text="Stop serving pairs after this many labels (empty: no budget).",
    )

    settle = SettleField(
        label="Scores to settle",
        required=False,
        initial=list(settings.DEFAULT_SETTLE),
        help_text="The scores judging must settle for every run, each to a 95% interval no "
        "wider than the target half-width (none ticked: FIRE's C@1, C@5, C@10 and AP; the "
        "command line and the job take them comma-separated in any case, such as "
        "c@1,c@5,ap,ndcg@10).",
    )
    half_width = forms.FloatField(
        label="Target half-width (points)",
        initial=settings.DEFAULT_HALF_WIDTH,
        required=False,
        validators=[_half_width],
        help_text="Target half-width of those 95% intervals, in points (percentage points of "
        "the score; above 0, at most 50): the campaign page says which scores are settled to it.",
    )

    gold_rate = forms.FloatField(
        min_value=0.0,
        max_value=campaign_spec.GOLD_RATE_MAX,
        initial=settings.DEFAULT_GOLD_RATE,
        required=False,
        help_text="Share of tasks that are gold pairs, mixed in unseen (when there are any).",
    )
    qualification = forms.IntegerField(
        min_value=0,
        max_value=campaign_spec.QUALIFICATION_PAIRS_MAX,
        initial=0,
        required=False,
        help_text="Training pairs (drawn from the gold pairs) an annotator judges before real "
        "work, with feedback after each (0: no qualification; FIRE's raters trained first).",
    )
    qualification_threshold = forms.FloatField(
        min_value=0.01,
        max_value=1.0,
        initial=settings.DEFAULT_THRESHOLD,
        required=False,
        help_text="Training accuracy that admits an annotator.",
    )

    speed_floor = forms.FloatField(
        min_value=0.0,
        max_value=campaign_spec.SPEED_FLOOR_MAX,
        initial=settings.DEFAULT_FLOOR_SECONDS,
        required=False,
        help_text="Median seconds per judgement below which an annotator is paused: nobody "
        "watches a video that fast (0: never paused for speed).",
    )
    guidelines = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        validators=[TextValidator("guidelines", campaign_spec.GUIDELINES_MAX, lines=True)],
        initial=FIRE_GUIDELINES,
        required=False,
        help_text="What annotators read before judging (empty: FIRE's guidelines).",
    )

    extends = PickedName(
        LABEL_SET_NAMES,
        blank=OWN_CAMPAIGN,
        max_length=100,
        required=False,
        help_text="A label set of the dataset to complete: pairs it judges are not pooled "
        "again, and resolving makes a new version of it (empty: a campaign of its own).",
    )

    def offer_label_sets(self, dataset) -> None:
        """Offer only ``dataset``'s label sets for ``extends``, drawn lazily."""

        def names() -> list:
            found = dataset.label_sets.order_by("name").values_list("name", flat=True)
            return [("", OWN_CAMPAIGN), *[(name, name) for name in found]]

        self.fields["extends"].widget.choices = CallableChoiceIterator(names)

    def clean(self) -> dict:
        data = super().clean()
        if not self.errors:
            try:
                spec = self.spec()
            except SettingsError as exc:
                raise forms.ValidationError(str(exc)) from None
            for field, message in spec_errors(spec).items():
                self.add_error("queries" if field == "query_sample" else field, message)
        return data

    def spec(self) -> CampaignSpec:
        """The validated values as one spec (defaults for those left empty)."""
        return CampaignSpec.from_values(self.cleaned_data)


RETURN = "return"
"""The adjudication decision that hands an escalated pair back to the judging queue."""


class AdjudicationForm(forms.Form):
    """An admin's decision on one pair: a final label, or back to the judging queue."""

    pair = forms.IntegerField(min_value=1, max_value=2**63 - 1)
    decision = forms.ChoiceField(
        choices=[*Judgement.Label.choices, (RETURN, RETURN)],
        error_messages={"invalid_choice": "Choose relevant, irrelevant or return to the queue."},
    )
    note = forms.CharField(required=False, validators=[TextValidator("note", 1000, lines=True)])


class EstimateSampleForm(forms.Form):
    """How many more random pairs to judge for an estimate of the unsettled scores."""

    pairs = forms.IntegerField(min_value=1, max_value=10_000_000, initial=500)


class PromoteForm(forms.Form):
    """Decided pairs to make gold: one pair, or every decided pair of the campaign."""

    pair = forms.IntegerField(min_value=1, max_value=2**63 - 1, required=False)
    all_decided = forms.BooleanField(required=False)
    explanation = forms.CharField(
        required=False,
        validators=[TextValidator("explanation", 2000, lines=True)],
        help_text="Why the label is right (default: how the pair was decided).",
    )
    guideline = forms.CharField(required=False, validators=[TextValidator("guideline", 2000)])
    expected = forms.IntegerField(
        min_value=0,
        max_value=2**63 - 1,
        required=False,
        help_text="Every decided pair: the count the confirmation page named.",
    )

    def clean(self) -> dict:
        data = super().clean()
        if not self.errors and (data.get("pair") is None) == (not data.get("all_decided")):
            raise forms.ValidationError("Name one pair, or promote every decided pair.")
        if not self.errors and data.get("all_decided") and data.get("expected") is None:
            raise forms.ValidationError(
                "Nothing was promoted: confirm the count on the confirmation page first."
            )
        return data


def campaign_names() -> list:
    names = Campaign.objects.order_by("name").values_list("name", flat=True)
    return [(name, name) for name in names]


class CampaignNameForm(forms.Form):
    """A campaign named: the form of the job kinds that take only that (the refit, the live
    figures), and the base of those that take more."""

    campaign = PickedName(campaign_names, max_length=200, help_text="Campaign name.")

    def clean_campaign(self) -> str:
        return found_or_invalid(get_campaign, self.cleaned_data["campaign"]).name
