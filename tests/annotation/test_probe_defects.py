"""Requests an outside probe sent to a running firepool, each once a 500 or a wrong success.

Every test here failed before its fix: nested JSON, paused campaigns taking labels,
escalating pairs never leased, submitting without a lease, a UUID reused after undo,
leases taken by a GET, adjudication with a bad pair id, export names with line breaks,
and campaign settings no form should accept.
"""

import io
import uuid
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.campaign_read.exports import EXPORT_FORMATS
from annotation.campaigns.forms import CampaignSettingsForm
from annotation.campaigns.jobs import PoolForm
from annotation.judging import escalations, queue, task_ids
from annotation.models import Campaign, Escalation, Judgement, LapsedLease, Lease, Pair
from tests.factories import make_campaign


def api(user, csrf=False) -> APIClient:
    client = APIClient(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def snapshot(campaign) -> list[tuple]:
    return list(
        Pair.objects.filter(campaign=campaign)
        .order_by("pk")
        .values_list("pk", "status", "label_count", "needed", "leased", "open_slots", "held")
    )


# 1. Deeply nested JSON.


@pytest.mark.parametrize(
    ("action", "body", "csrf"),
    [
        ("submit", "[" * 1000 + "]" * 1000, False),
        ("escalate", '{"a":' * 5000 + "1" + "}" * 5000, False),
        ("undo", "[" * 1000 + "]" * 1000, True),
    ],
)
def test_deeply_nested_json_is_a_400_not_a_500(people, action, body, csrf):
    campaign = make_campaign()
    response = api(people["annotator"], csrf=csrf).post(
        f"/api/campaigns/{campaign.pk}/{action}/", body, content_type="application/json"
    )
    assert response.status_code in (400, 403), response.content[:200]
    assert "detail" in response.json()


def test_next_ignores_its_body_however_deep(people):
    campaign = make_campaign()
    response = api(people["annotator"]).post(
        f"/api/campaigns/{campaign.pk}/next/",
        "[" * 3000 + "]" * 3000,
        content_type="application/json",
    )
    assert response.status_code == 200


# 2. Paused and closed campaigns.


@pytest.mark.parametrize("status", [Campaign.Status.PAUSED, Campaign.Status.CLOSED])
def test_paused_or_closed_campaign_takes_no_submit_undo_or_escalation(people, status):
    campaign = make_campaign()
    user = people["annotator"]
    client = api(user)
    base = f"/api/campaigns/{campaign.pk}/"
    got = client.post(base + "next/").json()
    first = got["current"]["pair"]
    judged = client.post(
        base + "submit/",
        {"pair": first, "label": "relevant", "uuid": str(uuid.uuid4())},
        format="json",
    )
    assert judged.status_code == 200
    pending = judged.json()["current"]["pair"]
    Campaign.objects.filter(pk=campaign.pk).update(status=status)
    before = snapshot(campaign)
    refused = client.post(
        base + "submit/",
        {"pair": pending, "label": "relevant", "uuid": str(uuid.uuid4())},
        format="json",
    )
    assert refused.status_code == 409 and refused.json()["code"] == "inactive"
    assert client.post(base + "undo/").json()["code"] == "inactive"
    escalated = client.post(
        base + "escalate/",
        {"pair": pending, "reason": "cannot see", "uuid": str(uuid.uuid4())},
        format="json",
    )
    assert escalated.status_code == 409 and escalated.json()["code"] == "inactive"
    assert snapshot(campaign) == before
    assert not Escalation.objects.exists()
    served = client.post(base + "next/").json()
    assert served["campaign"]["status"] == status
    assert served["current"] is None
    # Paused work may resume: the page waits rather than saying the campaign is finished.
    assert served["finished"] is (status == Campaign.Status.CLOSED)
    # The one annotator state says which: the page draws it from this field.
    assert served["state"]["key"] == f"campaign_{status}"


# 3. Escalations.


def test_escalating_needs_the_pair_on_screen_and_is_capped(people):
    campaign = make_campaign(n_queries=4, depth=3)
    user, other = people["annotator"], people["other"]
    base = f"/api/campaigns/{campaign.pk}/"
    mine = api(user).post(base + "next/").json()["current"]["pair"]
    theirs = api(other).post(base + "next/").json()["current"]["pair"]
    never = Pair.objects.filter(campaign=campaign, leased=0).first().pk
    theirs_pair = task_ids.decode(other.pk, theirs)

    def escalate(client, pair):
        return client.post(
            base + "escalate/",
            {"pair": pair, "reason": "video does not play", "uuid": str(uuid.uuid4())},
            format="json",
        )

    for pair in (never, theirs_pair):  # named as the server would name them to the user
        refused = escalate(api(user), task_ids.encode(user.pk, pair))
        assert refused.status_code == 409 and refused.json()["code"] == "not_leased"
    # Another annotator's task id names nothing for this one.
    assert escalate(api(user), theirs).status_code == 404
    assert not Pair.objects.filter(held=True).exists()
    # A resolved pair cannot be escalated either, nor one of a closed campaign.
    Pair.objects.filter(pk=never).update(status=Pair.Status.RELEVANT, needed=0, open_slots=0)
    assert escalate(api(user), task_ids.encode(user.pk, never)).status_code == 409
    assert escalate(api(user), mine).status_code == 200
    assert Pair.objects.get(pk=task_ids.decode(user.pk, mine)).held
    # The one just judged may still be escalated (a second look at the video).
    client = api(other)
    done = client.post(
        base + "submit/",
        {"pair": theirs, "label": "irrelevant", "uuid": str(uuid.uuid4())},
        format="json",
    )
    assert done.status_code == 200
    assert escalate(client, theirs).status_code == 200
    # At most MAX_OPEN_ESCALATIONS wait per annotator.
    Escalation.objects.bulk_create(
        [
            Escalation(pair_id=never, annotator=user, reason="x")
            for _ in range(escalations.MAX_OPEN_ESCALATIONS)
        ]
    )
    current = api(user).post(base + "next/").json()["current"]["pair"]
    capped = escalate(api(user), current)
    assert capped.status_code == 409 and capped.json()["code"] == "too_many_escalations"
    closed = make_campaign()
    Campaign.objects.filter(pk=closed.pk).update(status=Campaign.Status.CLOSED)
    closed_pair = closed.pairs.first().pk
    response = api(user).post(
        f"/api/campaigns/{closed.pk}/escalate/",
        {"pair": task_ids.encode(user.pk, closed_pair), "reason": "x", "uuid": str(uuid.uuid4())},
        format="json",
    )
    assert response.status_code == 409 and not Pair.objects.get(pk=closed_pair).held


# 4. Submitting needs a lease.


def test_submit_needs_a_lease_or_a_recently_lapsed_one(people):
    campaign = make_campaign(n_queries=3, depth=3)
    user = people["annotator"]
    client = api(user)
    base = f"/api/campaigns/{campaign.pk}/"
    held = client.post(base + "next/").json()
    leased = {task_ids.decode(user.pk, held[k]["pair"]) for k in ("current", "upcoming")}
    free = Pair.objects.filter(campaign=campaign).exclude(pk__in=leased).first().pk

    def submit(pair):
        return client.post(
            base + "submit/",
            {"pair": pair, "label": "relevant", "uuid": str(uuid.uuid4())},
            format="json",
        )

    refused = submit(task_ids.encode(user.pk, free))
    assert refused.status_code == 409 and refused.json()["code"] == "not_leased"
    assert not Judgement.objects.filter(pair_id=free).exists()
    # A lease that ran out moments ago still takes the label while a slot is free.
    late = held["current"]["pair"]
    late_pair = task_ids.decode(user.pk, late)
    Lease.objects.filter(pair_id=late_pair).update(expires_at=timezone.now() - timedelta(seconds=5))
    queue.release_expired(campaign, timezone.now())
    assert LapsedLease.objects.filter(pair_id=late_pair, annotator=user).exists()
    assert submit(late).status_code == 200
    # ... but not once the grace period is over.
    stale = held["upcoming"]["pair"]
    Lease.objects.filter(pair_id=task_ids.decode(user.pk, stale)).update(
        expires_at=timezone.now() - timedelta(seconds=queue.GRACE_SECONDS + 5)
    )
    queue.release_expired(campaign, timezone.now())
    too_late = submit(stale)
    assert too_late.status_code == 409 and too_late.json()["code"] == "not_leased"


# 5. A UUID reused after undo.


def test_uuid_of_an_undone_judgement_is_a_conflict(people):
    campaign = make_campaign()
    client = api(people["annotator"])
    base = f"/api/campaigns/{campaign.pk}/"
    pair = client.post(base + "next/").json()["current"]["pair"]
    body = {"pair": pair, "label": "relevant", "uuid": str(uuid.uuid4())}
    assert client.post(base + "submit/", body, format="json").status_code == 200
    assert client.post(base + "undo/").status_code == 200
    again = client.post(base + "submit/", body, format="json")
    assert again.status_code == 409 and again.json()["code"] == "undone"
    pair_id = task_ids.decode(people["annotator"].pk, pair)
    assert not Judgement.objects.filter(pair_id=pair_id, undone_at__isnull=True).exists()


# 6. GET never leases.


def test_get_next_changes_nothing(people):
    campaign = make_campaign()
    client = api(people["annotator"])
    for path in ("next/", "next.json"):
        assert client.get(f"/api/campaigns/{campaign.pk}/{path}").status_code == 405
    assert not Lease.objects.exists()
    assert client.post(f"/api/campaigns/{campaign.pk}/next/").status_code == 200
    assert Lease.objects.count() == queue.HOLD


# 7. Adjudication input.


@pytest.mark.parametrize("pair", ["abc", "", "1.5", "1\x00", str(10**30), "-3"])
def test_adjudication_with_a_bad_pair_id_is_a_400(people, pair):
    campaign = make_campaign()
    client = Client()
    client.force_login(people["admin"])
    before = snapshot(campaign)
    response = client.post(
        f"/campaigns/{campaign.pk}/adjudicate/", {"pair": pair, "decision": "relevant"}
    )
    assert response.status_code == 400
    assert "pair:" in response.content.decode()
    assert snapshot(campaign) == before


def test_adjudication_of_a_pair_of_another_campaign_is_refused(people):
    campaign, other = make_campaign(), make_campaign()
    client = Client()
    client.force_login(people["admin"])
    foreign = other.pairs.first()
    response = client.post(
        f"/campaigns/{campaign.pk}/adjudicate/", {"pair": foreign.pk, "decision": "relevant"}
    )
    assert response.status_code == 404
    assert Pair.objects.get(pk=foreign.pk).adjudicated == ""


# 8. Download names.


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_export_of_a_campaign_named_with_a_newline_and_quote(people, fmt):
    campaign = make_campaign()
    Campaign.objects.filter(pk=campaign.pk).update(name='evil\nname "x"')
    client = Client()
    client.force_login(people["admin"])
    response = client.get(f"/campaigns/{campaign.pk}/export/{fmt}/")
    assert response.status_code == 200
    header = response["Content-Disposition"]
    assert "\n" not in header and header.startswith("attachment;")
    assert '"x"' not in header
    b"".join(response.streaming_content)


# 9 and 10. Campaign settings no entry point may accept.


def settings_form(**values):
    data = {"name": "fine", "depth": 2, **values}
    return CampaignSettingsForm({k: str(v) for k, v in data.items()})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "n" * 101),
        ("name", "two\nlines"),
        ("max_labels", 1),
        ("max_labels", 10**30),
        ("queries", 10**30),
        ("seed", 10**30),
        ("lease_seconds", 10**30),
        ("lease_seconds", 10**12),
        ("lease_seconds", 5),
        ("depth", 10**30),
        ("second_label_rate", "nan"),
    ],
)
def test_campaign_settings_out_of_bounds_are_form_errors(db, field, value):
    form = settings_form(**{field: value})
    assert not form.is_valid()
    assert field in form.errors


def test_pool_job_form_refuses_what_the_job_would_reject(db):
    campaign = make_campaign(depth=2)
    dataset = campaign.dataset.name
    base = {"dataset": dataset, "runs": "m", "depth": "2", "name": "fresh"}
    assert PoolForm(base).is_valid()
    for changes in (
        {"name": campaign.name},  # taken
        {"runs": "m,m"},  # a run twice
        {"max_labels": "1"},
        {"lease_seconds": str(10**12)},
        {"queries": str(10**30)},
        {"name": "x" * 150},
    ):
        form = PoolForm({**base, **changes})
        assert not form.is_valid(), changes


def test_create_campaign_command_checks_the_same_bounds(db):
    campaign = make_campaign(depth=2)
    for option, value in (("lease_seconds", 10**12), ("max_labels", 1), ("seed", 10**30)):
        with pytest.raises(CommandError, match=option.replace("_", "-")):
            call_command(
                "create_campaign",
                dataset=campaign.dataset.name,
                name="cli",
                runs="m",
                depth=2,
                stdout=io.StringIO(),
                **{option: value},
            )
    assert not Campaign.objects.filter(name="cli").exists()


def test_admin_add_form_refuses_a_huge_lease(people):
    campaign = make_campaign(depth=2)
    client = Client()
    client.force_login(people["admin"])
    response = client.post(
        "/admin/annotation/campaign/add/",
        {
            "name": "via-admin",
            "dataset": campaign.dataset.pk,
            "runs": [campaign.runs.first().pk],
            "depth": 2,
            "seed": 0,
            "second_label_rate": 0.1,
            "max_labels": 3,
            "lease_seconds": 10**12,
            "guidelines": "g",
        },
    )
    assert response.status_code == 200  # the form again, with its error
    assert "lease_seconds" in response.context["adminform"].form.errors
    assert not Campaign.objects.filter(name="via-admin").exists()


def test_a_huge_lease_in_the_database_cannot_break_next(people):
    """Even a campaign stored before the bound (or by SQL) answers next/ with a lease."""
    campaign = make_campaign()
    # PostgreSQL's integer column holds at most 2**31 - 1 (68 years); SQLite held 10**12.
    huge = 10**12 if connection.vendor == "sqlite" else 2**31 - 1
    Campaign.objects.filter(pk=campaign.pk).update(lease_seconds=huge)
    response = api(people["annotator"]).post(f"/api/campaigns/{campaign.pk}/next/")
    assert response.status_code == 200 and response.json()["current"] is not None
    served = response.json()["current"]["pair"]
    lease = Lease.objects.get(pair_id=task_ids.decode(people["annotator"].pk, served))
    assert lease.expires_at <= timezone.now() + timedelta(days=1)
