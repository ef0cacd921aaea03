"""Campaign pages checked in an audit: the pool job's result says when the campaign opened paused and
what to do, the adjudication page points to the campaign page's gold form, the edit page's
fixed fields are disabled (their posted values ignored), and ``extends`` is a choice of the
dataset's label sets."""

import pytest

from annotation.campaigns import lifecycle
from annotation.models import Campaign
from jobs.models import Job
from tests.factories import make_campaign


@pytest.fixture
def campaign(db):
    return make_campaign(n_queries=3, depth=3)


def _pool_result(client, result: dict) -> str:
    job = Job.objects.create(
        kind="pool",
        arguments={"dataset": "d", "runs": "m", "name": "camp"},
        result=result,
        status=Job.Status.SUCCEEDED,
    )
    page = client.get(f"/jobs/{job.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    return html[html.index('id="job-result"') :]


def test_a_pool_result_opened_paused_says_why_and_what_to_do(campaign, people, client):
    client.force_login(people["admin"])
    result = {
        "campaign": campaign.name,
        "campaign_id": campaign.pk,
        "status": "paused",
        "pairs": 9,
        "gold_pairs": 0,
    }
    html = _pool_result(client, result)
    assert 'id="result-paused"' in html and "The campaign is paused" in html
    assert "import a gold file or promote decided pairs" in html
    assert f'href="/campaigns/{campaign.pk}/#gold"' in html
    assert "0 gold pairs yet" in html


def test_an_active_pool_result_shows_its_gold_count_and_no_pause(campaign, people, client):
    client.force_login(people["admin"])
    result = {"campaign": "c", "campaign_id": campaign.pk, "status": "active", "gold_pairs": 5}
    html = _pool_result(client, result)
    assert 'id="result-paused"' not in html
    assert "5 gold pairs." in html
    # an older result, without the fields, says nothing of either
    older = _pool_result(client, {"campaign": "c", "campaign_id": campaign.pk})
    assert 'id="result-paused"' not in older and 'id="result-gold"' not in older


def test_adjudication_points_to_the_campaign_pages_gold_form(campaign, people, client):
    client.force_login(people["admin"])
    html = client.get(f"/campaigns/{campaign.pk}/adjudicate/").content.decode()
    assert "manage.py gold import" not in html
    assert f'href="/campaigns/{campaign.pk}/#gold"' in html


# -- the edit page -------------------------------------------------------------------------


def test_fixed_fields_are_disabled_and_judging_order_among_them(campaign, people, client):
    client.force_login(people["admin"])
    form = client.get(f"/campaigns/{campaign.pk}/edit/").context["form"]
    for name in ("depth", "queries", "seed", "policy", "confidence", "judging_order", "extends"):
        assert form.fields[name].disabled, name
    for name in ("name", "budget", "gold_rate", "guidelines", "lease_seconds"):
        assert not form.fields[name].disabled, name
    html = client.get(f"/campaigns/{campaign.pk}/edit/").content.decode()
    assert (
        'name="policy" disabled' in html
        or 'disabled name="policy"' in html
        or ('<select name="policy"' in html and "disabled" in html)
    )
    assert "readonly" not in html


def test_posted_values_of_fixed_fields_are_ignored(campaign, people, client):
    client.force_login(people["admin"])
    values = {
        k: v
        for k, v in lifecycle.form_values(lifecycle.current_spec(campaign)).items()
        if v is not None
    }
    changed = {"policy": "adaptive", "judging_order": "maxmean", "depth": "2", "seed": "7"}
    answer = client.post(
        f"/campaigns/{campaign.pk}/edit/", {**values, **changed, "name": "renamed"}
    )
    assert answer.status_code == 302, answer.content.decode()[:2000]
    after = Campaign.objects.get(pk=campaign.pk)
    assert after.name == "renamed"
    assert after.depth == campaign.depth and after.seed == campaign.seed
    assert after.settings.label_policy.name == campaign.settings.label_policy.name
    assert after.settings.judging.strategy == campaign.settings.judging.strategy


def test_the_service_still_refuses_a_changed_judging_order(campaign):
    from dataclasses import replace

    spec = lifecycle.current_spec(campaign)
    asked = replace(
        spec,
        settings=replace(spec.settings, judging=replace(spec.settings.judging, strategy="maxmean")),
    )
    with pytest.raises(lifecycle.LifecycleError, match="judging_order"):
        lifecycle.edit_campaign(campaign, asked)


# -- extends: a choice of the dataset's label sets -----------------------------------------


def _label_set(dataset, name: str):
    from retrieval.label_sets.judged import Judged
    from retrieval.label_sets.service import store_label_set
    from retrieval.models import Caption, Video

    caption = Caption.objects.filter(dataset=dataset).first()
    video = Video.objects.filter(dataset=dataset).first()
    return store_label_set(
        dataset, name, Judged.build([caption.pk], [video.pk], [1]), source="campaign"
    )


def test_the_new_page_offers_the_datasets_label_sets_to_extend(campaign, people, client):
    from annotation.campaigns.forms import OWN_CAMPAIGN

    _label_set(campaign.dataset, "mine")
    other = make_campaign()
    _label_set(other.dataset, "theirs")
    client.force_login(people["admin"])
    html = client.get(f"/campaigns/new/?dataset={campaign.dataset.name}").content.decode()
    select = html[html.index('name="extends"') :]
    select = select[: select.index("</select>")]
    assert '<option value="mine">mine</option>' in select
    assert "theirs" not in select and OWN_CAMPAIGN in select
    edit = client.get(f"/campaigns/{other.pk}/edit/").content.decode()
    select = edit[edit.index('name="extends"') :]
    assert "theirs" in select[: select.index("</select>")]


def test_extends_is_checked_as_the_typed_name_is(campaign, people, client):
    from jobs.registry import get_kind
    from jobs.runner import check_arguments

    _label_set(campaign.dataset, "mine")
    client.force_login(people["admin"])
    values = {"dataset": campaign.dataset.name, "runs": ["m"], "name": "fresh", "depth": "3"}
    answer = client.post("/campaigns/new/", {**values, "extends": "ghost"})
    assert answer.status_code == 400 and "ghost" in answer.content.decode()
    assert not Job.objects.exists()
    # the CLI and JSON path pass the name as text
    text = {**values, "runs": "m", "extends": "mine"}
    assert check_arguments(get_kind("pool"), text)["extends"] == "mine"
