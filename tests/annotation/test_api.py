"""The judging API over HTTP: roles, next/submit/undo/escalate, idempotent retries, schema."""

import uuid
from dataclasses import replace

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
        assert [c["pairs"] for c in data] == [campaign.pairs.count()]
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


def _answers(show_roles: bool):
    """Judging answers covering every branch of the compiled responses."""
    import itertools
    from datetime import UTC, datetime, timedelta
    from types import SimpleNamespace

    from annotation.gold.tasks import Feedback, Qualification
    from annotation.judging.queue import Progress, Task
    from annotation.people.state import SLOW_DOWN, Inputs, speed_reason, state_of

    when = datetime(2026, 11, 24, 20, 0, 5, 123456, tzinfo=UTC)

    from annotation.judging.answer import JudgingAnswer, SubmitAnswer

    def task(n: int, roles):
        caption = SimpleNamespace(text=f"a cat {n} — “quoted”", key=f"c{n}", role_spans=roles)
        whole = dict(probe=None, start=None, end=None, media_fragment="", poster_url="")
        segment = dict(  # a segment of an hour's recording, with a poster
            probe={"duration": 3600.0},
            start=21.0,
            end=26.5,
            media=SimpleNamespace(name="videos/P01_01.mp4"),
            key=f"v{n}",
            media_state="ready",
            media_fragment="#t=0.500,6.000",
            poster_url=f"/media/derived/ab/v{n}.jpg",
        )
        video = SimpleNamespace(source_url=f"/media/v{n}.mp4", **(segment if n % 2 else whole))
        pair = SimpleNamespace(pk=n, caption=caption, video=video)
        shown = (roles or []) if show_roles else None
        return Task(pair, when + timedelta(n), f"{n:032x}", shown)

    campaign = SimpleNamespace(pk=7, id=7, name="camp\nname", status="active")
    qualifications = [
        Qualification(required=False, admitted=True),
        Qualification(True, False, 3, 20, 1, 3, 0.85, when),
        Qualification(True, False, 0, 20, 3, 3, 0.5, datetime.max.replace(tzinfo=UTC)),
    ]
    feedbacks = [None, Feedback(True, "relevant", "the cat is there", "Every element ...")]
    tasks = [(task(1, [[0, 1, "ARG0"]]), task(2, None)), (task(3, []), None), (None, None)]
    states = [
        state_of(Inputs("active", serving=True)),
        state_of(Inputs("active", paused_at=when, pause_reason=speed_reason(0.2, 1))),
        state_of(
            Inputs("active", qualification_required=True, admitted=False, tries=3, retry_at=when)
        ),
    ]
    for n, ((current, upcoming), qualification, feedback, paused, submitted) in enumerate(
        itertools.product(tasks, qualifications, feedbacks, [None, "too fast"], [False, True])
    ):
        found = JudgingAnswer(
            campaign=campaign,
            current=current,
            upcoming=upcoming,
            progress=Progress(judged_today=1, judged_total=5, labels_left=10**12, pairs=3),
            finished=current is None,
            qualification=qualification,
            paused=paused,
            state=states[n % len(states)],
        )
        if submitted:
            warning = None if feedback else SLOW_DOWN
            fields = {name: getattr(found, name) for name in JudgingAnswer.__dataclass_fields__}
            found = SubmitAnswer(
                **fields,
                judgement=uuid.UUID(int=12345),
                created=True,
                feedback=feedback,
                warning=warning,
            )
        yield found


@pytest.mark.parametrize("show_roles", [True, False])
def test_compiled_responses_equal_the_serializers(show_roles):
    """next/ and submit/ render their answers through the serializers compiled once
    (:class:`config.serializer_output.CompiledOutput`): the same JSON as the serializers
    themselves for every kind of answer."""
    from rest_framework.renderers import JSONRenderer

    from annotation.api.serializers import (
        AssignmentSerializer,
        SubmitResponseSerializer,
        answer_data,
    )
    from annotation.judging.answer import SubmitAnswer

    render = JSONRenderer().render
    checked = 0
    for found in _answers(show_roles):
        serializer = (
            SubmitResponseSerializer if isinstance(found, SubmitAnswer) else AssignmentSerializer
        )
        expected = render(serializer(found).data)
        assert render(answer_data(found)) == expected, found
        if found.current is not None and found.current.pair.caption.role_spans:
            assert (expected.count(b"ARG0") > 0) is show_roles
        checked += 1
    assert checked == 72


# Ids no row can have: refused with a 400 or 404, never a 500 (the hand-written
# SQL once overflowed on them), on SQLite and PostgreSQL alike.

IMPOSSIBLE_IDS = [2**31, 2**63, 10**30, -1, 0]


@pytest.mark.parametrize("value", IMPOSSIBLE_IDS)
def test_ids_no_row_can_have_are_a_400_or_404(people, value):
    from annotation.judging import errors, escalations, submit

    campaign = make_campaign()
    annotator = people["annotator"]
    client = client_for(annotator)
    base = f"/api/campaigns/{campaign.pk}/"
    assert client.post(base + "next/").status_code == 200
    bodies = {"submit/": {"label": "relevant"}, "escalate/": {"reason": "no picture"}}
    for path, extra in bodies.items():
        for pair in (value, str(value), f"{value % 2**128:032x}"):
            body = {"pair": pair, "uuid": str(uuid.uuid4()), **extra}
            response = client.post(base + path, body, format="json")
            assert response.status_code in (400, 404), (path, pair, response.content)
            assert response.json()["code"] in ("invalid", "not_found")
    for path in ("next/", "undo/", *bodies):
        body = {"pair": "0" * 32, "uuid": str(uuid.uuid4()), "label": "relevant", "reason": "x"}
        response = client.post(f"/api/campaigns/{value}/{path}", body, format="json")
        assert response.status_code == 404, (path, response.content)
    for path in ("", "progress/"):
        assert client.get(f"/api/campaigns/{value}/{path}").status_code == 404
    scores = client_for(people["researcher"]).get(f"/api/campaigns/{value}/annotator-scores/")
    assert scores.status_code == 404
    # The services refuse them too, whoever calls.
    for call in (
        lambda: submit.submit(annotator, value, "relevant", uuid.uuid4()),
        lambda: escalations.escalate(annotator, value, "no picture", uuid.uuid4()),
    ):
        with pytest.raises(errors.AssignmentError) as refused:
            call()
        assert refused.value.code == "not_found"
    assert not Judgement.objects.exists()


# One client id, one answer: a retry with the same body returns the stored
# answer; the same id with another body is a 409, whatever kind of task it is sent for.


def test_a_uuid_retried_with_another_body_is_a_conflict(people):
    from annotation.judging import task_ids
    from annotation.models import Escalation, GoldJudgement
    from tests.factories import add_gold

    campaign = make_campaign(n_queries=4, depth=3)
    add_gold(campaign, 6, rate=1.0)  # every task served is gold while gold lasts
    annotator = people["annotator"]
    client = client_for(annotator)
    base = f"/api/campaigns/{campaign.pk}/"

    def submit(body):
        return client.post(base + "submit/", body, format="json")

    got = client.post(base + "next/").json()
    gold_task = got["current"]["pair"]
    assert is_gold_task(task_ids.decode(annotator.pk, gold_task))
    settings = campaign.settings
    campaign.set_settings(replace(settings, gold=replace(settings.gold, rate=0.0)))
    key = str(uuid.uuid4())
    body = {"pair": gold_task, "label": "relevant", "uuid": key, "seconds": 3.5}
    first = submit(body)
    assert first.status_code == 200 and first.json()["created"] is True
    retried = submit(body)
    assert retried.status_code == 200 and retried.json()["created"] is False
    assert retried.json()["judgement"] == key
    for changed in ({"label": "irrelevant"}, {"seconds": 9.0}, {"seconds": None}):
        response = submit({**body, **changed})
        assert response.status_code == 409 and response.json()["code"] == "conflict", changed
    stored = GoldJudgement.objects.get(uuid=key)
    assert (stored.label, stored.seconds) == ("relevant", 3.5)

    real_task = retried.json()["current"]["pair"]
    while is_gold_task(task_ids.decode(annotator.pk, real_task)):  # the upcoming gold task
        real_task = submit(
            {"pair": real_task, "label": "relevant", "uuid": str(uuid.uuid4())}
        ).json()["current"]["pair"]
    # The gold answer's id sent for a real task: a conflict, as for any other task.
    assert submit({**body, "pair": real_task}).status_code == 409
    real_key = str(uuid.uuid4())
    real = {"pair": real_task, "label": "relevant", "uuid": real_key}
    assert submit(real).json()["created"] is True
    assert submit(real).json()["created"] is False
    for changed in ({"label": "irrelevant"}, {"seconds": 1.0}):
        response = submit({**real, **changed})
        assert response.status_code == 409 and response.json()["code"] == "conflict", changed
    assert Judgement.objects.get(uuid=real_key).label == "relevant"
    # Escalations: the same id with the same reason counts once, with another is a conflict.
    on_screen = submit(real).json()["current"]["pair"]
    escalation = {"pair": on_screen, "reason": "no picture", "uuid": str(uuid.uuid4())}
    assert client.post(base + "escalate/", escalation, format="json").status_code == 200
    assert client.post(base + "escalate/", escalation, format="json").status_code == 200
    other_reason = {**escalation, "reason": "too dark"}
    refused = client.post(base + "escalate/", other_reason, format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "conflict"
    assert Escalation.objects.get(uuid=escalation["uuid"]).reason == "no picture"


def is_gold_task(pair_id: int) -> bool:
    from annotation.models import GoldPair

    return GoldPair.objects.filter(task_id=pair_id).exists()
