"""Every label the models, forms and API accept is a name of the one vocabulary
(:mod:`retrieval.label_sets.status`), and the names stored in the database stay what they were."""

from annotation.api.serializers import SubmitSerializer
from annotation.campaigns.forms import RETURN, AdjudicationForm
from annotation.models import GoldJudgement, GoldPair, Judgement, Pair
from retrieval.label_sets.status import CODES, LABELS, NAMES, LabelStatus


def choice_values(model, field: str) -> list[str]:
    return [value for value, _ in model._meta.get_field(field).choices]


def test_stored_names_are_unchanged():
    """Rows already written hold these strings: the vocabulary must keep them."""
    assert Judgement.Label.values == ["relevant", "irrelevant"]
    assert Pair.Status.values == ["pending", "relevant", "irrelevant", "disagreement"]
    assert choice_values(Pair, "adjudicated") == ["relevant", "irrelevant"]


def test_every_label_choice_is_a_status_name_and_round_trips_through_its_code():
    given = [status.label for status in LABELS]
    assert Judgement.Label.values == given
    assert Judgement.Label.labels == given
    for model, field in (
        (Judgement, "label"),
        (GoldPair, "label"),
        (GoldJudgement, "label"),
        (Pair, "adjudicated"),
    ):
        assert choice_values(model, field) == given, (model, field)
    assert sorted(Pair.Status.values) == sorted(status.label for status in LabelStatus)
    for name in [*Pair.Status.values, *Judgement.Label.values]:
        assert NAMES[CODES[name]] == name
        assert LabelStatus(CODES[name]).label == name
    assert CODES[Judgement.Label.RELEVANT] == LabelStatus.RELEVANT
    assert CODES[Judgement.Label.IRRELEVANT] == LabelStatus.IRRELEVANT


def test_forms_and_the_api_accept_exactly_the_vocabulary():
    decisions = [value for value, _ in AdjudicationForm.base_fields["decision"].choices]
    assert decisions == [*Judgement.Label.values, RETURN]
    assert list(SubmitSerializer().fields["label"].choices) == Judgement.Label.values
