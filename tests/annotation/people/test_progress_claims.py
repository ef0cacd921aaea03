"""Issue 38 §3, the figures a page claims: "scores settled" only when they are, one "labels
still needed" for the campaign page and the judging page, and a judging meter that moves
with every answer alike, gold or not."""

import uuid

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Judgement
from annotation.ordering.settled import JudgingStatus, RunExactness
from tests.factories import add_gold, make_campaign


def _page(user, campaign):
    client = Client()
    client.force_login(user)
    response = client.get(f"/campaigns/{campaign.pk}/")
    assert response.status_code == 200
    return response.context["page"], response.content.decode()


def test_an_adaptive_campaign_with_no_label_claims_nothing_settled(people):
    campaign = make_campaign(n_queries=4, depth=3, policy="adaptive")
    page, html = _page(people["admin"], campaign)
    assert page.counts.in_all == 0 and page.counts.still_needed > 0
    assert 'id="settled-metrics"' in html  # the shares are shown...
    assert "Scores settled" not in html and 'id="scores-settled"' not in html  # ...no claim
    assert "How settled each score is" in html


def test_all_settled_needs_labels_and_every_share():
    def status(shares, spent):
        return JudgingStatus(
            "depth", None, spent, 0, 0, 0, (), (1, 5), "adaptive", 0.9, 0,
            (RunExactness("a", tuple(zip((1, 5), shares, strict=True))),),
        )  # fmt: skip

    assert status((1.0, 1.0), 10).all_settled
    assert not status((1.0, 1.0), 0).all_settled
    assert not status((1.0, 0.5), 10).all_settled


@pytest.mark.parametrize("policy", ["adaptive", "fire"])
def test_the_judging_page_and_the_campaign_page_share_labels_still_needed(people, policy):
    """Every answer moves "labels given" by one, gold or not; under the adaptive policy the
    judging page's "labels still needed" is the campaign page's; under FIRE's, where each
    label takes one off, the annotator's gold answers count as labels done there too."""
    campaign = make_campaign(n_queries=8, depth=3, seed=4, policy=policy)
    add_gold(campaign, 6, rate=0.5)
    annotator = people["annotator"]
    api = APIClient()
    api.force_authenticate(annotator)
    base = f"/api/campaigns/{campaign.pk}/"
    body = api.post(base + "next/").json()
    gold_answers = 0
    kinds = set()
    for _ in range(14):
        current = body["current"]
        if current is None:
            break
        before = body["progress"]
        answer = {"pair": current["pair"], "label": "irrelevant", "uuid": str(uuid.uuid4())}
        body = api.post(base + "submit/", answer, format="json").json()
        after = body["progress"]
        assert after["labels_given"] - before["labels_given"] == 1
        assert after["judged_total"] - before["judged_total"] == 1
        gold_answers = after["judged_total"] - _live_labels(campaign, annotator)
        kinds.add(gold_answers)
        page, html = _page(people["admin"], campaign)
        if policy == "adaptive":
            assert after["labels_left"] == page.counts.still_needed
        else:
            assert after["labels_left"] == max(page.counts.still_needed - gold_answers, 0)
        assert after["labels_given"] == page.counts.in_all + gold_answers
        assert f'id="progress-left">{page.counts.still_needed}<' in html
    assert len(kinds) > 1, "no gold task was served: the test proves nothing"
    home = Client()
    home.force_login(annotator)
    (item,) = home.get("/judge/").context["progress"]
    assert (item.labels_done, item.labels_left) == (
        body["progress"]["labels_given"],
        body["progress"]["labels_left"],
    )
    assert item.needed_now == (policy == "adaptive")
    judge = home.get(f"/judge/{campaign.pk}/").content.decode()
    assert f'data-labels-done="{body["progress"]["labels_given"]}"' in judge


def _live_labels(campaign, annotator) -> int:
    return Judgement.objects.filter(
        pair__campaign=campaign, annotator=annotator, undone_at__isnull=True
    ).count()


def test_reopening_no_parked_pair_is_not_reported_as_done(people):
    """The same class as "0 pairs promoted": an action that did nothing says so."""
    campaign = make_campaign(n_queries=3, depth=2)
    client = Client()
    client.force_login(people["admin"])
    page = client.post(f"/campaigns/{campaign.pk}/reopen/", follow=True).content.decode()
    assert "nothing was reopened" in page and "0 parked pairs" not in page
