"""The judging API over HTTP: roles, next/submit/undo/escalate, idempotent retries, schema."""

import uuid

import pytest
from rest_framework.test import APIClient

from annotation.models import Judgement
from retrieval.models import Video
from tests.factories import make_campaign


def client_for(user):
    client = APIClient(enforce_csrf_checks=True)
    if user is not None:
        client.force_authenticate(user)
    return client


def test_annotator_judges_through_the_api(people):
    campaign = make_campaign()
    Video.objects.filter(dataset=campaign.dataset).update(media="videos/clip.webm")
    client = client_for(people["annotator"])
    base = f"/api/campaigns/{campaign.pk}/"
    got = client.post(base + "next/").json()
    assert got["finished"] is False and got["current"]["video_url"].startswith("/media/")
    assert got["upcoming"]["pair"] != got["current"]["pair"]
    pair = got["current"]["pair"]
    key = str(uuid.uuid4())
    body = {"pair": pair, "label": "relevant", "uuid": key, "seconds": 3.2}
    first = client.post(base + "submit/", body, format="json")
    assert first.status_code == 200 and first.json()["created"] is True
    assert first.json()["current"]["pair"] == got["upcoming"]["pair"]
    retry = client.post(base + "submit/", body, format="json")
    assert retry.status_code == 200 and retry.json()["created"] is False
    assert Judgement.objects.filter(uuid=key).count() == 1
    again = client.post(base + "submit/", {**body, "uuid": str(uuid.uuid4())}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "conflict"
    undone = client.post(base + "undo/", format="json")
    assert undone.status_code == 200 and undone.json()["current"]["pair"] == pair
    bad = client.post(
        base + "submit/", {"pair": pair, "label": "maybe", "uuid": "x"}, format="json"
    )
    assert bad.status_code == 400 and bad.json()["code"] == "invalid"
    escalated = client.post(
        base + "escalate/",
        {"pair": pair, "reason": "no picture", "uuid": str(uuid.uuid4())},
        format="json",
    )
    assert escalated.status_code == 200 and escalated.json()["current"]["pair"] != pair
    progress = client.get(base + "progress/").json()
    assert progress["judged_today"] == 0 and progress["labels_left"] > 0


@pytest.mark.parametrize("who", [None, "researcher"])
def test_only_annotators_judge(people, who):
    campaign = make_campaign()
    client = client_for(people.get(who))
    response = client.post(f"/api/campaigns/{campaign.pk}/next/")
    assert response.status_code == 403


def test_campaign_list_by_role(people):
    campaign = make_campaign()
    for who in ("annotator", "researcher", "admin"):
        data = client_for(people[who]).get("/api/campaigns/").json()
        assert [c["name"] for c in data] == [campaign.name]
    campaign.status = "closed"
    campaign.save()
    assert client_for(people["annotator"]).get("/api/campaigns/").json() == []


def test_schema_and_docs_offline(people, client):
    client.force_login(people["admin"])
    schema = client.get("/api/schema/")
    assert schema.status_code == 200 and b"/api/campaigns/{id}/submit/" in schema.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"cdn" not in docs.content.lower()  # Swagger UI comes from the sidecar package


def test_judge_page_roles(people, client):
    campaign = make_campaign()
    client.force_login(people["researcher"])
    assert client.get(f"/judge/{campaign.pk}/").status_code == 403
    client.force_login(people["annotator"])
    assert client.get("/judge/").status_code == 200


def test_finished_only_when_nothing_can_come(people):
    campaign = make_campaign(n_queries=1, depth=1)
    other = people["other"]
    assert client_for(other).post(f"/api/campaigns/{campaign.pk}/next/").json()["current"]
    waiting = client_for(people["annotator"]).post(f"/api/campaigns/{campaign.pk}/next/").json()
    assert waiting["current"] is None and waiting["finished"] is False  # leased to someone else
    campaign.pairs.update(needed=0, open_slots=0, status="irrelevant")
    done = client_for(people["annotator"]).post(f"/api/campaigns/{campaign.pk}/next/").json()
    assert done["finished"] is True


def _payloads():
    """Assignment payloads covering every branch of the hand-built responses."""
    import itertools
    from datetime import UTC, datetime, timedelta
    from types import SimpleNamespace

    from annotation.services.assignment import Progress, Task
    from annotation.services.gold_queue import Feedback, Qualification

    when = datetime(2026, 11, 24, 20, 0, 5, 123456, tzinfo=UTC)

    def task(n: int, roles):
        caption = SimpleNamespace(text=f"a cat {n} — “quoted”", key=f"c{n}", role_spans=roles)
        video = SimpleNamespace(source_url=f"/media/v{n}.mp4")
        pair = SimpleNamespace(pk=n, caption=caption, video=video)
        return Task(pair, when + timedelta(n), f"{n:032x}")

    campaign = SimpleNamespace(pk=7, id=7, name="camp\nname", status="active")
    qualifications = [
        Qualification(required=False, admitted=True),
        Qualification(True, False, 3, 20, 1, 3, 0.85, when),
        Qualification(True, False, 0, 20, 3, 3, 0.5, datetime.max.replace(tzinfo=UTC)),
    ]
    feedbacks = [None, Feedback(True, "relevant", "the cat is there", "Every element ...")]
    tasks = [(task(1, [[0, 1, "ARG0"]]), task(2, None)), (task(3, []), None), (None, None)]
    for (current, upcoming), qualification, feedback, paused, submitted in itertools.product(
        tasks, qualifications, feedbacks, [None, "too fast"], [False, True]
    ):
        payload = {
            "campaign": campaign,
            "current": current,
            "upcoming": upcoming,
            "progress": Progress(judged_today=1, judged_total=5, labels_left=10**12, pairs=3),
            "finished": current is None,
            "qualification": qualification,
            "paused": paused,
        }
        if submitted:
            payload.update(judgement=uuid.UUID(int=12345), created=True, feedback=feedback)
        yield payload


@pytest.mark.parametrize("show_roles", [True, False])
def test_hand_built_responses_equal_the_serializers(show_roles):
    """next/ and submit/ build their JSON by hand for speed; the serializers are the schema,
    so both must give the same JSON for every kind of payload."""
    from rest_framework.renderers import JSONRenderer

    from annotation.api.serializers import (
        AssignmentSerializer,
        SubmitResponseSerializer,
        assignment_data,
    )

    render = JSONRenderer().render
    checked = 0
    for payload in _payloads():
        serializer = SubmitResponseSerializer if "judgement" in payload else AssignmentSerializer
        expected = render(serializer(payload, context={"show_roles": show_roles}).data)
        assert render(assignment_data(payload, show_roles)) == expected, payload
        checked += 1
    assert checked == 72
