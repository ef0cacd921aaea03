"""Which label set a dataset's report uses by default, as campaigns are resolved."""

from annotation.campaign_read.resolution import resolve_campaign
from annotation.campaigns.service import CampaignSpec, create_campaign
from retrieval.models import LabelSet
from tests.factories import make_campaign


def test_resolving_a_second_campaign_does_not_move_the_default(db):
    first = make_campaign(n_queries=3, depth=3)
    dataset = first.dataset
    second = create_campaign(dataset, [dataset.runs.get()], CampaignSpec(name="second", depth=3))
    resolved_first = resolve_campaign(first)
    assert resolved_first.is_default  # the dataset had none: its first set becomes it
    resolved_second = resolve_campaign(second)
    assert not resolved_second.is_default
    assert LabelSet.objects.get(dataset=dataset, is_default=True).name == first.name
    # Re-resolving the default's campaign replaces the row and keeps it the default.
    again = resolve_campaign(first)
    assert again.pk != resolved_first.pk and again.is_default
    assert LabelSet.objects.filter(dataset=dataset, is_default=True).count() == 1
    # Re-resolving the other one still leaves the default alone.
    assert not resolve_campaign(second).is_default


def test_resolving_again_keeps_a_renamed_set_s_name(db):
    campaign = make_campaign(n_queries=2, depth=2)
    label_set = resolve_campaign(campaign)
    LabelSet.objects.filter(pk=label_set.pk).update(name="renamed")
    again = resolve_campaign(campaign)
    assert again.name == "renamed"
    assert list(
        LabelSet.objects.filter(dataset=campaign.dataset).values_list("name", flat=True)
    ) == ["renamed"]
