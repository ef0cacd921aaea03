"""The judging API's record of what was seen: seconds of video played on every answer, and
broken-video reports (an escalation of their own kind) listed on the adjudication page."""

import uuid

from rest_framework.test import APIClient

from annotation.judging import statements, task_ids
from annotation.models import Escalation, Judgement, Pair
from retrieval.models import Video
from tests.factories import make_campaign


def client_for(user):
    client = APIClient(enforce_csrf_checks=True)
    client.force_authenticate(user)
    return client


def _start(people):
    campaign = make_campaign(n_queries=2, depth=3)
    client = client_for(people["annotator"])
    base = f"/api/campaigns/{campaign.pk}/"
    got = client.post(base + "next/").json()
    return campaign, client, base, got


def test_seconds_played_is_stored_and_part_of_the_answer(people):
    campaign, client, base, got = _start(people)
    key = str(uuid.uuid4())
    body = {
        "pair": got["current"]["pair"],
        "label": "relevant",
        "uuid": key,
        "seconds": 4.5,
        "seconds_played": 3.25,
    }
    first = client.post(base + "submit/", body, format="json")
    assert first.status_code == 200 and first.json()["created"] is True
    assert Judgement.objects.get(uuid=key).seconds_played == 3.25
    # A retry resends the same body; another figure with the same id is another answer.
    assert client.post(base + "submit/", body, format="json").json()["created"] is False
    for changed in ({"seconds_played": 1.0}, {"seconds_played": None}):
        refused = client.post(base + "submit/", {**body, **changed}, format="json")
        assert refused.status_code == 409 and refused.json()["code"] == "conflict"
    assert Judgement.objects.filter(annotator=people["annotator"]).count() == 1
    assert Judgement.objects.get(uuid=key).seconds_played == 3.25


def test_a_script_may_leave_seconds_played_out_but_not_send_nonsense(people):
    campaign, client, base, got = _start(people)
    task = got["current"]["pair"]
    for bad in (-1, "soon", 86401):
        refused = client.post(
            base + "submit/",
            {"pair": task, "label": "relevant", "uuid": str(uuid.uuid4()), "seconds_played": bad},
            format="json",
        )
        assert refused.status_code == 400 and refused.json()["code"] == "invalid", bad
    assert not Judgement.objects.exists()
    key = str(uuid.uuid4())
    taken = client.post(
        base + "submit/", {"pair": task, "label": "irrelevant", "uuid": key}, format="json"
    )
    assert taken.status_code == 200
    assert Judgement.objects.get(uuid=key).seconds_played is None


def test_the_speed_rule_counts_the_seconds_played_where_fewer(people):
    campaign, client, base, got = _start(people)
    task, upcoming = got["current"]["pair"], got["upcoming"]["pair"]
    for pair, played in ((task, 0.4), (upcoming, None)):
        body = {"pair": pair, "label": "relevant", "uuid": str(uuid.uuid4()), "seconds": 6.0}
        if played is not None:
            body["seconds_played"] = played
        assert client.post(base + "submit/", body, format="json").status_code == 200
    recent = statements.recent_seconds(campaign.pk, people["annotator"].pk, None, 10)
    assert sorted(recent) == [0.4, 6.0]


def test_a_broken_video_report_reaches_the_adjudication_page(people, client):
    campaign, api, base, got = _start(people)
    task = got["current"]["pair"]
    pair = Pair.objects.get(pk=task_ids.decode(people["annotator"].pk, task))
    Video.objects.filter(pk=pair.video_id).update(media="videos/msvd/broken clip.avi")
    said = "MEDIA_ERR_SRC_NOT_SUPPORTED (4): DEMUXER_ERROR_COULD_NOT_OPEN"
    body = {"pair": task, "kind": "broken_video", "media_error": said, "uuid": str(uuid.uuid4())}
    sent = api.post(base + "escalate/", body, format="json")
    assert sent.status_code == 200 and sent.json()["current"]["pair"] != task
    assert api.post(base + "escalate/", body, format="json").status_code == 200  # a retry
    stored = Escalation.objects.get()
    assert (stored.kind, stored.media_error, stored.reason) == (
        "broken_video",
        said,
        "the video does not play",
    )
    client.force_login(people["admin"])
    page = client.get(f"/campaigns/{campaign.pk}/adjudicate/").content.decode()
    assert "broken video" in page
    assert "videos/msvd/broken clip.avi" in page and said in page


def test_an_escalation_names_a_known_kind_and_a_reason_unless_broken(people):
    campaign, client, base, got = _start(people)
    task = got["current"]["pair"]
    for body in ({"kind": "mystery", "reason": "x"}, {"reason": ""}, {}):
        refused = client.post(
            base + "escalate/", {"pair": task, "uuid": str(uuid.uuid4()), **body}, format="json"
        )
        assert refused.status_code == 400 and refused.json()["code"] == "invalid", body
    assert not Escalation.objects.exists()
    sent = client.post(
        base + "escalate/",
        {"pair": task, "uuid": str(uuid.uuid4()), "reason": "two videos in one"},
        format="json",
    )
    assert sent.status_code == 200
    assert Escalation.objects.get().kind == "other"


def test_a_gold_answer_stores_seconds_played_as_a_label_does(people):
    from annotation.models import GoldJudgement
    from tests.factories import add_gold

    campaign = make_campaign(n_queries=3, depth=3)
    add_gold(campaign, 4, rate=1.0)  # every task served is gold while gold lasts
    client = client_for(people["annotator"])
    base = f"/api/campaigns/{campaign.pk}/"
    task = client.post(base + "next/").json()["current"]["pair"]
    key = str(uuid.uuid4())
    body = {"pair": task, "label": "relevant", "uuid": key, "seconds": 3.0, "seconds_played": 2.5}
    assert client.post(base + "submit/", body, format="json").status_code == 200
    assert GoldJudgement.objects.get(uuid=key).seconds_played == 2.5
    refused = client.post(base + "submit/", {**body, "seconds_played": 1.0}, format="json")
    assert refused.status_code == 409  # the same id, another answer: as for a label


def test_the_raw_export_carries_seconds_played_and_reads_back(people, tmp_path):
    from annotation.campaign_read.exports import export_to_file
    from retrieval.formats.labels import read_raw_jsonl

    campaign, client, base, got = _start(people)
    for pair, played in ((got["current"]["pair"], 1.75), (got["upcoming"]["pair"], None)):
        body = {"pair": pair, "label": "relevant", "uuid": str(uuid.uuid4()), "seconds": 2.0}
        if played is not None:
            body["seconds_played"] = played
        assert client.post(base + "submit/", body, format="json").status_code == 200
    path = tmp_path / "raw.jsonl"
    export_to_file(campaign, "raw", path)
    lines = path.read_text().splitlines()
    assert sum('"seconds_played": 1.75' in line for line in lines) == 1
    assert sum("seconds_played" in line for line in lines) == 1  # left out where unknown
    assert sorted((r.seconds_played is None, r.seconds_played) for r in read_raw_jsonl(path)) == [
        (False, 1.75),
        (True, None),
    ]


def test_the_adjudication_page_shows_posters_of_files_that_play_as_they_are(people, client):
    from django.utils import timezone

    campaign, api, base, got = _start(people)
    held, other = (
        Pair.objects.get(pk=task_ids.decode(people["annotator"].pk, got[slot]["pair"]))
        for slot in ("current", "upcoming")
    )
    poster = "derived/posters/ab/" + "ab" * 32 + ".jpg"
    probe = {"fingerprint": "ab" * 32, "poster": poster}
    Video.objects.filter(pk__in=[held.video_id, other.video_id]).update(
        media="videos/msrvtt/video7.mp4", media_state=Video.MediaState.AS_IS, probe=probe
    )
    body = {
        "pair": got["current"]["pair"],
        "reason": "two videos in one",
        "uuid": str(uuid.uuid4()),
    }
    assert api.post(base + "escalate/", body, format="json").status_code == 200
    Pair.objects.filter(pk=other.pk).update(
        adjudicated="relevant", adjudicated_by=people["admin"], adjudicated_at=timezone.now()
    )
    client.force_login(people["admin"])
    page = client.get(f"/campaigns/{campaign.pk}/adjudicate/").content.decode()
    assert f'poster="/media/{poster}"' in page  # the escalated pair's player
    assert f'<img class="thumb" src="/media/{poster}"' in page  # recently adjudicated
