"""An annotator's one state in a campaign: every state through the real ORM, the same on the
judging API and the home list, and which state wins when several hold."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.gold import tasks as gold_queue
from annotation.judging import queue, submit
from annotation.models import (
    AnnotatorStanding,
    Campaign,
    GoldJudgement,
    GoldPair,
    Lease,
    Pair,
)
from annotation.people import standing
from annotation.people import state as states
from annotation.people.progress import annotator_progress
from annotation.people.state import Inputs, state_of
from tests.factories import add_gold, make_campaign, serve_all


def api_state(campaign, user) -> dict:
    client = APIClient()
    client.force_authenticate(user)
    body = client.post(f"/api/campaigns/{campaign.pk}/next/").json()
    progress = client.get(f"/api/campaigns/{campaign.pk}/progress/").json()
    body["listed"] = progress["state"]
    return body


def home_state(campaign, user):
    fresh = Campaign.objects.select_related("dataset").get(pk=campaign.pk)
    (item,) = annotator_progress([fresh], user)
    return item.state


def check(campaign, user, key: str, home: str | None = None) -> dict:
    """The API's next/ reports ``key``; the home list (and the progress endpoint, which
    shows the home's state) report ``home`` (``key`` unless said)."""
    body = api_state(campaign, user)
    assert body["state"]["key"] == key, body["state"]
    listed = home_state(campaign, user)
    assert listed.key == (home or key), listed
    assert body["listed"]["key"] == listed.key
    if listed.key == body["state"]["key"]:
        assert body["listed"]["heading"] == body["state"]["heading"]
        assert body["listed"]["next_step"] == body["state"]["next_step"]
    return body


def test_judging(people):
    campaign = make_campaign()
    body = check(campaign, people["annotator"], states.JUDGING)
    assert body["current"] is not None and body["state"]["can_judge"]
    assert body["state"]["tone"] == "ok"


def test_campaign_closed_and_paused(people):
    campaign = make_campaign()
    user = people["annotator"]
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)
    body = check(campaign, user, states.CAMPAIGN_PAUSED)
    assert body["state"]["heading"] == "Campaign paused" and not body["state"]["can_judge"]
    # The home list keeps a paused campaign, saying it is paused and offering no judging.
    listed = Client()
    listed.force_login(user)
    page = listed.get("/judge/").content.decode()
    assert "Campaign paused" in page and "Continue judging" not in page
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)
    body = check(campaign, user, states.CLOSED)
    assert body["state"]["heading"] == "Campaign closed"
    assert campaign.name not in listed.get("/judge/").content.decode()


def test_paused_by_the_speed_rule_after_a_warning(people):
    """Too-fast answers are warned about first (the submit response says so), then the
    speed rule pauses, and the state names the rule and when."""
    campaign = make_campaign(n_queries=6, depth=5)
    user = people["annotator"]
    warnings = []
    for _ in range(20):
        current = queue.assign(campaign, user).current
        if current is None:
            break
        result = submit.submit(user, current.pair.pk, "relevant", uuid.uuid4(), seconds=0.1)
        warnings.append(result.warning)
    assert warnings[: states.WARN_AFTER - 1] == [None] * (states.WARN_AFTER - 1)
    assert warnings[states.WARN_AFTER - 1] == states.SLOW_DOWN
    assert standing.paused(campaign, user) is not None  # the rule paused before the pairs ran out
    body = check(campaign, user, states.PAUSED_BY_RULE)
    assert body["state"]["rule"] == states.SPEED_RULE and body["state"]["since"]
    assert body["state"]["heading"] == "Paused: too fast" and body["state"]["tone"] == "stop"


def test_a_careful_answer_gets_no_warning(people):
    campaign = make_campaign()
    user = people["annotator"]
    current = queue.assign(campaign, user).current
    result = submit.submit(user, current.pair.pk, "relevant", uuid.uuid4(), seconds=5.0)
    assert result.warning is None


def test_paused_by_an_admin(people):
    campaign = make_campaign()
    user = people["annotator"]
    AnnotatorStanding.objects.create(
        campaign=campaign, annotator=user, paused_at=timezone.now(), reason="labels look random"
    )
    body = check(campaign, user, states.PAUSED_BY_ADMIN)
    assert "labels look random" in body["state"]["message"] and body["state"]["rule"] is None


def test_qualifying_failed_retry_and_no_tries_left(people):
    campaign = make_campaign(n_queries=3, depth=2, seed=4)
    add_gold(campaign, 2, rate=0.0, qualification=True, threshold=1.0, cooldown_seconds=600)
    gold_queue.ensure_tasks(campaign)
    truth = {g.task_id: g.label for g in GoldPair.objects.filter(campaign=campaign)}
    user = people["other"]
    body = check(campaign, user, states.QUALIFYING)
    assert body["state"]["heading"] == "Qualifying: 0 of 2" and body["state"]["can_judge"]
    wrong = {"relevant": "irrelevant", "irrelevant": "relevant"}
    assert len(serve_all(campaign, user, lambda pair: wrong[truth[pair.pk]])) == 2
    body = check(campaign, user, states.QUALIFICATION_FAILED)
    assert "2 of 3 tries left" in body["state"]["message"] and body["state"]["retry_at"]
    assert body["state"]["polls"] and not body["state"]["can_judge"]
    later = timezone.now()
    for _ in (1, 2):  # two more failed tries, each after the cool-down
        later += timedelta(hours=1)
        serve_all(campaign, user, lambda pair: wrong[truth[pair.pk]], now=later)
    state = gold_queue.qualification(campaign, user)
    assert state.out_of_tries
    body = check(campaign, user, states.QUALIFICATION_FAILED)
    assert body["state"]["heading"] == "Qualification failed"
    assert "0 of 3" in body["state"]["message"] and body["state"]["retry_at"] is None


def test_finished_for_everyone_and_for_me(people):
    campaign = make_campaign(n_queries=2, depth=2, rate=1.0)
    user, other = people["annotator"], people["other"]
    serve_all(campaign, user, lambda pair: "relevant")
    body = check(campaign, user, states.FINISHED)
    assert body["state"]["heading"] == "Nothing left for you"
    serve_all(campaign, other, lambda pair: "relevant")
    body = check(campaign, user, states.FINISHED)
    assert body["state"]["heading"] == "Finished" and body["finished"]


def test_nothing_free_while_others_hold_the_pairs(people):
    """The home list says "nothing free right now" where the judging page does, from a
    read-only query: opening the list takes no lease and releases none."""
    campaign = make_campaign(n_queries=1, depth=2)
    user, other = people["annotator"], people["other"]
    assert queue.assign(campaign, other).current is not None  # holds both pairs
    assert not Pair.objects.filter(campaign=campaign, open_slots__gt=0).exists()
    body = check(campaign, user, states.NOTHING_FREE)
    assert body["state"]["polls"] and body["current"] is None
    assert body["listed"]["heading"] == "No pair is free right now"
    client = Client()
    client.force_login(user)
    leases = list(Lease.objects.order_by("pk").values_list("pk", "annotator_id", "expires_at"))
    page = client.get("/judge/").content.decode()
    card = page[page.index(f'data-campaign="{campaign.pk}"') :]
    card = card[: card.index("</li>")]
    assert 'data-state="nothing_free"' in card and "No pair is free right now" in card
    assert "Continue judging" not in card and "Start judging" not in card
    assert list(Lease.objects.order_by("pk").values_list("pk", "annotator_id", "expires_at")) == (
        leases
    )
    # Once the other's leases run out (not yet released: the list never writes), both say
    # the pairs are free again.
    Lease.objects.filter(annotator=other).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert home_state(campaign, user).key == states.JUDGING
    check(campaign, user, states.JUDGING)


def test_nothing_free_holds_for_each_campaign_in_one_query(people):
    """Over several campaigns the home list asks once, and a campaign whose pairs the
    annotator holds themselves (or whose gold they have not all answered) offers judging."""
    user, other = people["annotator"], people["other"]
    held_by_other, held_by_me, with_gold = (make_campaign(n_queries=1, depth=2) for _ in "abc")
    for campaign in (held_by_other, with_gold):
        assert queue.assign(campaign, other).current is not None
        assert not Pair.objects.filter(campaign=campaign, open_slots__gt=0).exists()
    add_gold(with_gold, 2, rate=0.5)  # after the other took the pairs: none of it is gold
    assert queue.assign(held_by_me, user).current is not None
    campaigns = list(
        Campaign.objects.select_related("dataset").filter(
            pk__in=[held_by_other.pk, held_by_me.pk, with_gold.pk]
        )
    )
    assert queue.free_now(campaigns, user) == {held_by_me.pk, with_gold.pk}
    listed = {item.campaign_id: item.state.key for item in annotator_progress(campaigns, user)}
    assert listed == {
        held_by_other.pk: states.NOTHING_FREE,
        held_by_me.pk: states.JUDGING,
        with_gold.pk: states.JUDGING,
    }
    with CaptureQueriesContext(connection) as queries:
        assert queue.free_now(campaigns, user) == {held_by_me.pk, with_gold.pk}
    assert len(queries) == 1
    # Every gold pair answered: only the other's pairs are left, and none is free.
    for _ in range(200):  # gold comes by chance (rate 0.5): ask until both are answered
        if GoldJudgement.objects.filter(annotator=user).count() == 2:
            break
        serve_all(with_gold, user)
    assert GoldJudgement.objects.filter(annotator=user).count() == 2
    assert queue.free_now(campaigns, user) == {held_by_me.pk}
    assert home_state(with_gold, user).key == states.NOTHING_FREE


def test_the_list_offers_judging_only_where_it_is_possible(people):
    active, paused = make_campaign(), make_campaign()
    user = people["annotator"]
    AnnotatorStanding.objects.create(
        campaign=paused,
        annotator=user,
        paused_at=timezone.now(),
        reason=states.speed_reason(0.3, 1),
    )
    client = Client()
    client.force_login(user)
    page = client.get("/judge/").content.decode()
    paused_card = page[page.index(f'data-campaign="{paused.pk}"') :]
    paused_card = paused_card[: paused_card.index("</li>")]
    assert "Paused: too fast" in paused_card and "judging</a>" not in paused_card
    assert 'class="progress-state state-stop"' in paused_card
    # The campaign the annotator may judge comes first, with its button.
    assert page.index(f'data-campaign="{active.pk}"') < page.index(f'data-campaign="{paused.pk}"')
    assert "Start judging" in page


WHEN = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
EVERYTHING = dict(
    paused_at=WHEN,
    pause_reason="an admin's reason",
    qualification_required=True,
    admitted=False,
    tries=3,
    tries_used=1,
    retry_at=WHEN,
    finished=True,
    left_for_me=False,
    serving=False,
)


@pytest.mark.parametrize(
    "drop, expected",
    [
        ({}, states.PAUSED_BY_ADMIN),
        ({"pause_reason": states.gold_reason(3, 10, 0.8)}, states.PAUSED_BY_RULE),
        ({"paused_at": None}, states.QUALIFICATION_FAILED),
        ({"paused_at": None, "retry_at": None, "qualification_total": 4}, states.QUALIFYING),
        ({"paused_at": None, "admitted": True}, states.FINISHED),
        ({"paused_at": None, "admitted": True, "finished": False}, states.FINISHED),
        (
            {"paused_at": None, "admitted": True, "finished": False, "left_for_me": True},
            states.NOTHING_FREE,
        ),
        (
            {
                "paused_at": None,
                "admitted": True,
                "finished": False,
                "left_for_me": True,
                "serving": True,
            },
            states.JUDGING,
        ),
    ],
)
def test_precedence_when_several_states_hold(drop, expected):
    """With everything holding at once, each state wins over all those after it."""
    for status, winner in (("closed", states.CLOSED), ("paused", states.CAMPAIGN_PAUSED)):
        assert state_of(Inputs(status, **{**EVERYTHING, **drop})).key == winner
    assert state_of(Inputs("active", **{**EVERYTHING, **drop})).key == expected


def test_every_state_has_its_own_heading_and_a_next_step():
    made = [
        state_of(Inputs("closed")),
        state_of(Inputs("paused")),
        state_of(Inputs("active", paused_at=WHEN, pause_reason="x")),
        state_of(Inputs("active", paused_at=WHEN, pause_reason=states.speed_reason(0.2, 1))),
        state_of(Inputs("active", qualification_required=True, admitted=False, retry_at=WHEN)),
        state_of(Inputs("active", qualification_required=True, admitted=False, out_of_tries=True)),
        state_of(
            Inputs("active", qualification_required=True, admitted=False, qualification_total=4)
        ),
        state_of(Inputs("active", finished=True)),
        state_of(Inputs("active", left_for_me=False)),
        state_of(Inputs("active", serving=False)),
        state_of(Inputs("active", serving=True)),
    ]
    assert {s.key for s in made} == set(states.PRECEDENCE)
    assert len({s.heading for s in made}) == len(made)
    assert all(s.next_step and s.message and s.tone for s in made)
    assert [s.can_judge for s in made].count(True) == 2  # qualifying and judging only
    assert states.pause_rule(states.gold_reason(1, 10, 0.8)) == states.GOLD_RULE
    assert states.pause_rule("paused by hand") is None
