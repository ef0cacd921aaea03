"""The campaign's people: the service's actions through the real ORM, and the page's rules
(a GET never writes, odd ids are 404, only admins act, the discount's count is the one done)."""

import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.gold import tasks as gold_queue
from annotation.judging import queue, submit, task_ids
from annotation.models import (
    AnnotatorStanding,
    Campaign,
    Judgement,
    Pair,
    QualificationAttempt,
    StandingEvent,
)
from annotation.people import service as people_service
from annotation.people import standing
from config import roles
from tests.factories import add_gold, make_campaign, serve_all


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _url(campaign, tail: str = "") -> str:
    return f"/campaigns/{campaign.pk}/annotators/{tail}"


def _judging_api(annotator, campaign):
    """An API client signed in as ``annotator`` (CSRF checked), and the campaign's API base."""
    from rest_framework.test import APIClient

    api = APIClient(enforce_csrf_checks=True)
    api.force_authenticate(annotator)
    return api, f"/api/campaigns/{campaign.pk}/"


def _row_counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (AnnotatorStanding, StandingEvent, Judgement, QualificationAttempt)
    } | {"live": Judgement.objects.filter(undone_at__isnull=True).count()}


def test_pause_and_reinstate_keep_the_history(people):
    campaign = make_campaign(n_queries=4, depth=2, seed=3)
    annotator, admin = people["annotator"], people["admin"]
    people_service.pause(campaign, annotator, admin, "checking the labels")
    row = standing.paused(campaign, annotator)
    assert row is not None and row.paused_by_id == admin.pk
    assert row.reason == "paused by an admin: checking the labels"
    assert queue.assign(campaign, annotator).current is None
    with pytest.raises(people_service.PeopleError, match="paused already"):
        people_service.pause(campaign, annotator, admin)
    people_service.reinstate(campaign, annotator, admin)
    assert standing.paused(campaign, annotator) is None
    assert queue.assign(campaign, annotator).current is not None
    with pytest.raises(people_service.PeopleError, match="not paused"):
        people_service.reinstate(campaign, annotator, admin)
    events = list(
        StandingEvent.objects.filter(campaign=campaign, annotator=annotator).order_by("pk")
    )
    assert [(e.action, e.by_id) for e in events] == [("paused", admin.pk), ("reinstated", admin.pk)]
    assert events[1].reason == "paused by an admin: checking the labels"  # the pause it ended
    (person,) = people_service.campaign_people(campaign).people
    assert person.status == "active" and person.reinstated_by == admin.username
    assert [e.action for e in person.history] == ["reinstated", "paused"]  # newest first


def test_a_rule_pause_is_in_the_history_and_says_so(people):
    campaign = make_campaign(n_queries=20, depth=3, seed=6)
    fast = people["annotator"]
    for _ in range(20):
        current = queue.assign(campaign, fast).current
        if current is None:
            break
        submit.submit(fast, current.pair.pk, "relevant", uuid.uuid4(), seconds=0.2)
    (person,) = people_service.campaign_people(campaign).people
    assert person.status == "paused by the speed rule" and "too fast" in person.paused_reason
    assert person.paused_by is None and person.pause_rule == "speed"
    assert [(e.action, e.by) for e in person.history] == [("paused", "")]
    assert person.history[0].rule == "speed"
    page = _client(people["admin"]).get(f"/campaigns/{campaign.pk}/annotators/")
    assert b"paused by the speed rule" in page.content
    assert b"by the speed rule" in page.content.split(b'class="history"')[1]
    people_service.reinstate(campaign, fast, people["admin"])
    (person,) = people_service.campaign_people(campaign).people
    assert [e.action for e in person.history] == ["reinstated", "paused"]
    assert "too fast" in person.history[0].reason
    people_service.pause(campaign, fast, people["admin"], "a median of 1 s, I think")
    (person,) = people_service.campaign_people(campaign).people
    assert person.status == "paused by an admin" and person.pause_rule is None


def test_admit_lets_a_failed_annotator_in_once(people):
    campaign = make_campaign(n_queries=6, depth=3, seed=4)
    add_gold(campaign, 8, qualification=True, training_pairs=4, tries=1)
    annotator, admin = people["annotator"], people["admin"]
    served = serve_all(campaign, annotator, lambda pair: "relevant")  # half wrong: fails
    assert served
    before = gold_queue.qualification(campaign, annotator)
    assert not before.admitted and before.out_of_tries
    (person,) = people_service.campaign_people(campaign).people
    assert person.qualification_state == "failed, no tries left"
    assert person.qualification.tries_used == 1
    people_service.admit(campaign, annotator, admin)
    assert gold_queue.qualification(campaign, annotator).admitted
    (person,) = people_service.campaign_people(campaign).people
    assert person.qualification_state == "admitted"
    assert [(e.action, e.by) for e in person.history] == [("admitted", admin.username)]
    with pytest.raises(people_service.PeopleError, match="admitted already"):
        people_service.admit(campaign, annotator, admin)
    plain = make_campaign(n_queries=2, depth=2, seed=5)
    with pytest.raises(people_service.PeopleError, match="requires no qualification"):
        people_service.admit(plain, annotator, admin)


def test_discount_preview_counts_what_the_discount_changes(people):
    campaign = make_campaign(n_queries=6, depth=3, seed=7)
    spammer = people["annotator"]
    serve_all(campaign, spammer, lambda pair: "relevant")
    cut = timezone.now()
    early = Judgement.objects.filter(annotator=spammer).order_by("pk")[:5]
    Judgement.objects.filter(pk__in=list(early.values_list("pk", flat=True))).update(
        created_at=cut - timedelta(hours=1)
    )
    before = _row_counts()
    recent = people_service.discount_preview(campaign, spammer, since=cut - timedelta(minutes=1))
    whole = people_service.discount_preview(campaign, spammer)
    assert _row_counts() == before  # a preview writes nothing
    live = Judgement.objects.filter(annotator=spammer, undone_at__isnull=True).count()
    assert whole.labels == whole.pairs == live and recent.labels == live - 5
    needed_before = sum(Pair.objects.filter(campaign=campaign).values_list("needed", flat=True))
    done = people_service.discount(
        campaign, spammer, since=cut - timedelta(minutes=1), by=people["admin"]
    )
    assert done == recent.labels
    assert Judgement.objects.filter(annotator=spammer, undone_at__isnull=True).count() == 5
    needed_after = sum(Pair.objects.filter(campaign=campaign).values_list("needed", flat=True))
    assert needed_after - needed_before == recent.pairs  # each pair wants its label again
    event = StandingEvent.objects.get(campaign=campaign, action="discounted")
    assert event.labels == done and event.since is not None
    assert people_service.discount_preview(campaign, spammer).labels == 5


def test_invite_lists_annotators_before_their_first_label(people):
    campaign = make_campaign(n_queries=2, depth=2, seed=9)
    admin = people["admin"]
    page = people_service.campaign_people(campaign)
    assert page.people == ()
    names = dict(page.invitable)
    assert people["annotator"].pk in names and people["researcher"].pk not in names
    invited = people_service.invite(
        campaign, [people["annotator"].pk, people["researcher"].pk], admin
    )
    assert invited == ["annotator"]  # a researcher may not judge: not invited
    (person,) = people_service.campaign_people(campaign).people
    assert person.username == "annotator" and person.labels == 0
    assert [(e.action, e.by) for e in person.history] == [("invited", admin.username)]
    with pytest.raises(people_service.PeopleError, match="on this campaign's list already"):
        people_service.invite(campaign, [people["annotator"].pk], admin)


def test_the_page_reads_every_annotator_in_a_fixed_number_of_queries(people, django_user_model):
    campaign = make_campaign(n_queries=8, depth=3, seed=11)
    add_gold(campaign, 6, rate=0.3)
    workers = [people["annotator"], people["other"]]
    for i, worker in enumerate(workers):
        serve_all(campaign, worker, lambda pair, i=i: "relevant" if i else "irrelevant")

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            people_service.campaign_people(campaign)
        return len(queries)

    two = count()
    for n in range(4):
        extra = django_user_model.objects.create_user(f"extra{n}", password="pw-extra-123")
        extra.groups.add(roles.ensure_groups()[roles.ANNOTATOR])
        people_service.invite(campaign, [extra.pk], people["admin"])
        people_service.pause(campaign, extra, people["admin"])
    assert count() == two


def test_page_roles_get_writes_nothing_and_odd_ids_are_404(people):
    campaign = make_campaign(n_queries=4, depth=2, seed=12)
    annotator = people["annotator"]
    serve_all(campaign, annotator, lambda pair: "relevant")
    people_service.pause(campaign, annotator, people["admin"], "look")
    admin, researcher = _client(people["admin"]), _client(people["researcher"])
    before = _row_counts()
    page = admin.get(_url(campaign))
    assert page.status_code == 200 and b'id="people-table"' in page.content
    assert b"Reinstate" in page.content
    read_only = researcher.get(_url(campaign))
    assert read_only.status_code == 200 and b"Reinstate" not in read_only.content
    confirm = admin.get(_url(campaign, f"{annotator.pk}/discount/"))
    n = Judgement.objects.filter(annotator=annotator).count()
    assert confirm.status_code == 200
    assert f"Discount <strong>{n}</strong> labels".encode() in confirm.content
    assert _row_counts() == before  # no GET writes
    assert _client(annotator).get(_url(campaign)).status_code == 403
    for tail in ("reinstate/", "pause/", "admit/", "discount/"):
        url = _url(campaign, f"{annotator.pk}/{tail}")
        assert researcher.post(url).status_code == 403
        assert _client(annotator).post(url).status_code == 403
    assert researcher.post(_url(campaign, "invite/"), {"annotators": [1]}).status_code == 403
    odd = [
        _url(campaign, "999999/reinstate/"),
        _url(campaign, f"{people['researcher'].pk}/pause/"),  # not someone who judges
        _url(campaign, f"{annotator.pk}/explode/"),
        f"/campaigns/999999/annotators/{annotator.pk}/reinstate/",
    ]
    for url in odd:
        assert admin.post(url).status_code == 404, url
    assert admin.get("/campaigns/999999/annotators/").status_code == 404
    assert admin.get(_url(campaign, "999999/discount/")).status_code == 404
    assert admin.get(_url(campaign, f"{annotator.pk}/discount/?since=yesterday")).status_code == 400
    assert admin.get(_url(campaign, f"{annotator.pk}/reinstate/")).status_code == 405
    assert _row_counts() == before


def test_page_actions_post_with_messages(people):
    campaign = make_campaign(n_queries=4, depth=2, seed=13)
    annotator = people["annotator"]
    serve_all(campaign, annotator, lambda pair: "relevant")
    admin = _client(people["admin"])
    response = admin.post(_url(campaign, f"{annotator.pk}/pause/"), {"reason": "x" * 300})
    assert response.status_code == 302 and standing.paused(campaign, annotator) is None
    response = admin.post(_url(campaign, f"{annotator.pk}/pause/"), {"reason": "odd"}, follow=True)
    assert b"annotator is paused" in response.content
    response = admin.post(_url(campaign, f"{annotator.pk}/reinstate/"), follow=True)
    assert b"annotator is reinstated" in response.content
    response = admin.post(_url(campaign, f"{annotator.pk}/reinstate/"), follow=True)
    assert b"is not paused" in response.content
    discount = _url(campaign, f"{annotator.pk}/discount/")
    assert admin.post(discount).status_code == 400  # no confirmed count: nothing done
    since = admin.get(discount, {"since": "2000-01-01T00:00:00"})
    assert since.status_code == 200 and b"given since 2000-01-01 00:00:00 UTC" in since.content
    n = Judgement.objects.filter(annotator=annotator).count()
    assert admin.post(discount, {"expected": str(n - 1)}).status_code == 409  # a stale count
    assert Judgement.objects.filter(annotator=annotator, undone_at__isnull=True).count() == n
    response = admin.post(discount, {"expected": str(n)}, follow=True)
    assert f"Discounted {n} labels of annotator: {n} pairs went back".encode() in response.content
    assert not Judgement.objects.filter(annotator=annotator, undone_at__isnull=True).exists()
    other = people["other"]
    response = admin.post(_url(campaign, "invite/"), {"annotators": [other.pk]}, follow=True)
    assert b"Invited other" in response.content
    response = admin.post(_url(campaign, "invite/"), {"annotators": ["x"]}, follow=True)
    assert response.status_code == 200 and b"annotators:" in response.content


def test_the_admin_sites_actions_share_the_service(people):
    campaign = make_campaign(n_queries=4, depth=2, seed=14)
    annotator, boss = people["annotator"], people["admin"]
    serve_all(campaign, annotator, lambda pair: "relevant")
    people_service.pause(campaign, annotator, boss, "check")
    row = AnnotatorStanding.objects.get(campaign=campaign, annotator=annotator)
    admin = _client(boss)
    changelist = "/admin/annotation/annotatorstanding/"
    shown = []
    for action in ("reinstate", "reinstate", "discount"):  # the second is refused, shown
        response = admin.post(changelist, {"action": action, "_selected_action": [row.pk]})
        assert response.status_code == 302
        shown += [str(m) for m in response.wsgi_request._messages]
    assert shown[0] == f"Reinstated 1 annotator(s): {people_service.REINSTATED}."
    events = StandingEvent.objects.filter(campaign=campaign, annotator=annotator)
    assert [(e.action, e.by_id) for e in events.order_by("pk")] == [
        ("paused", boss.pk),
        ("reinstated", boss.pk),
        ("discounted", boss.pk),
    ]
    assert not Judgement.objects.filter(annotator=annotator, undone_at__isnull=True).exists()


@pytest.mark.parametrize("gold_rate", [0.0, 1.0])
def test_a_paused_annotator_submits_nothing_and_holds_no_pair(people, gold_rate):
    """Pausing ends the annotator's leases; what they still had on screen (a
    pair or a gold task, a fresh answer or a retry of one stored before) is refused with 409
    and stored nowhere; reinstating says truly what changes."""
    from annotation.models import GoldJudgement, Lease

    campaign = make_campaign(n_queries=6, depth=3, seed=11)
    if gold_rate:
        add_gold(campaign, 6, rate=gold_rate)
    annotator, admin = people["annotator"], people["admin"]
    api, base = _judging_api(annotator, campaign)
    got = api.post(base + "next/").json()
    done = {"pair": got["current"]["pair"], "label": "relevant", "uuid": str(uuid.uuid4())}
    assert api.post(base + "submit/", done, format="json").status_code == 200
    got = api.post(base + "next/").json()
    on_screen = [got["current"]["pair"], got["upcoming"]["pair"]]
    assert Lease.objects.filter(annotator=annotator).count() == 2
    stored = Judgement.objects.count() + GoldJudgement._base_manager.count()

    page = _client(admin).post(_url(campaign, f"{annotator.pk}/pause/"), {"reason": "checking"})
    assert page.status_code == 302
    assert Lease.objects.filter(annotator=annotator).count() == 0  # back to the queue
    shown = [str(m) for m in page.wsgi_request._messages]
    assert shown == [
        "annotator is paused: the pairs they held went back to the queue, and they are served "
        "nothing and their answers are refused until reinstated."
    ]
    for pair in on_screen:
        body = {"pair": pair, "label": "relevant", "uuid": str(uuid.uuid4())}
        refused = api.post(base + "submit/", body, format="json")
        assert refused.status_code == 409, refused.content
        assert refused.json()["code"] == "paused" and "checking" in refused.json()["detail"]
    retry = api.post(base + "submit/", done, format="json")  # stored before the pause
    assert retry.status_code == 409 and retry.json()["code"] == "paused"
    assert Judgement.objects.count() + GoldJudgement._base_manager.count() == stored

    page = _client(admin).post(_url(campaign, f"{annotator.pk}/reinstate/"))
    shown = [str(m) for m in page.wsgi_request._messages]
    assert "their earlier labels still count (discount them" in shown[0]
    assert "only their work from now on counts" not in shown[0]
    (person,) = people_service.campaign_people(campaign).people
    assert person.labels == Judgement.objects.filter(annotator=annotator).count()


def test_a_lease_taken_as_the_pause_came_is_refused_and_released(people):
    """A lease the pause did not see (taken in a race) is refused at submit and ended."""
    from annotation.judging.errors import AssignmentError
    from annotation.models import Lease

    campaign = make_campaign(n_queries=4, depth=2, seed=5)
    annotator = people["annotator"]
    current = queue.assign(campaign, annotator).current
    AnnotatorStanding.objects.create(
        campaign=campaign, annotator=annotator, paused_at=timezone.now(), reason="by a rule"
    )
    with pytest.raises(AssignmentError) as refused:
        submit.submit(annotator, current.pair.pk, "relevant", uuid.uuid4())
    assert refused.value.code == "paused" and refused.value.status == 409
    assert not Lease.objects.filter(annotator=annotator).exists()
    assert not Judgement.objects.filter(annotator=annotator).exists()


def test_a_speeder_paused_a_moment_ago_shows_their_labels_and_the_discount(people, monkeypatch):
    """The people page once read an annotator's labels from the stored scores, so a
    speeder just paused by the speed rule showed 0 labels and no Discount button until the
    figures were computed again; the labels are read live."""
    from annotation.campaign_read import live_figures

    campaign = make_campaign(n_queries=20, depth=3, seed=6)
    live_figures.live_figures(campaign)  # stored before any label
    monkeypatch.setattr(live_figures, "INLINE_SECONDS", 0.0)  # as at scale: not redone here
    fast = people["annotator"]
    while (current := queue.assign(campaign, fast).current) is not None:
        submit.submit(fast, current.pair.pk, "relevant", uuid.uuid4(), seconds=0.2)
    labels = Judgement.objects.filter(annotator=fast, undone_at__isnull=True).count()
    assert labels and standing.paused(campaign, fast) is not None
    page = _client(people["admin"]).get(_url(campaign))
    assert not page.context["live"].current  # the stored scores are older
    (person,) = page.context["page"].people
    assert person.labels == labels and person.status == "paused by the speed rule"
    html = page.content.decode()
    assert f'data-label="Labels">{labels}<' in html and "Discount labels…" in html


def _stored_state() -> tuple:
    """Everything an undo or an escalation could change: live and undone labels, gold
    answers, escalations, held pairs."""
    from annotation.models import Escalation, GoldJudgement

    return (
        Judgement.objects.filter(undone_at__isnull=True).count(),
        Judgement.objects.exclude(undone_at=None).count(),
        GoldJudgement._base_manager.filter(undone_at=None).count(),
        Escalation.objects.count(),
        Pair.objects.filter(held=True).count(),
    )


@pytest.mark.parametrize("by", ["admin", "speed rule"])
def test_a_paused_annotator_can_neither_undo_nor_escalate(people, by):
    """Undo, escalation and a broken-video report of a paused annotator (paused by an admin,
    or by the speed rule on their last answer) are refused like their answers (409, code
    paused) and change nothing, a retry of an escalation stored before the pause included;
    once reinstated the same undo goes through."""
    campaign = make_campaign(n_queries=6, depth=3, seed=13)
    annotator, admin = people["annotator"], people["admin"]
    api, base = _judging_api(annotator, campaign)
    got = api.post(base + "next/").json()
    escalation = {"pair": got["upcoming"]["pair"], "reason": "no sound", "uuid": str(uuid.uuid4())}
    seconds = 0.2 if by == "speed rule" else 4.0
    while True:  # the speed rule pauses on the answer that makes the pace too fast
        judged = got["current"]["pair"]
        body = {
            "pair": judged,
            "label": "irrelevant",
            "uuid": str(uuid.uuid4()),
            "seconds": seconds,
        }
        reply = api.post(base + "submit/", body, format="json")
        assert reply.status_code == 200, reply.content
        got = reply.json()
        if by == "admin":
            assert api.post(base + "escalate/", escalation, format="json").status_code == 200
            people_service.pause(campaign, annotator, admin, "checking")
            break
        if got["paused"]:
            assert "too fast" in got["paused"]
            break
    assert standing.paused(campaign, annotator) is not None
    before = _stored_state()
    fresh = {"pair": judged, "reason": "cannot tell", "uuid": str(uuid.uuid4())}
    broken = {"pair": judged, "kind": "broken_video", "media_error": "x", "uuid": str(uuid.uuid4())}
    writes = [("undo/", None), ("escalate/", fresh), ("escalate/", broken)]
    if by == "admin":
        writes.append(("escalate/", escalation))  # a retry of one stored before the pause
    for path, data in writes:
        refused = api.post(base + path, data, format="json")
        assert refused.status_code == 409, (path, refused.content)
        assert refused.json()["code"] == "paused", refused.json()
        assert "paused in this campaign" in refused.json()["detail"]
        assert _stored_state() == before, path
    people_service.reinstate(campaign, annotator, admin)
    assert api.post(base + "undo/").status_code == 200
    taken_back = Judgement.objects.get(pair_id=task_ids.decode(annotator.pk, judged))
    assert taken_back.undone_at is not None


def test_the_standing_poll_says_what_an_answer_would_get_in_one_statement(people):
    """GET standing/ (the judging page's poll) answers whether the annotator may judge, and
    else the refusal an answer gets now (paused, with the admin's reason; inactive), in one
    statement, writing nothing (a lease taken as the pause came stays for the next write)."""
    from annotation.campaigns import lifecycle
    from annotation.models import Lease

    campaign = make_campaign(n_queries=2, depth=2, seed=17)
    annotator, admin = people["annotator"], people["admin"]
    api, base = _judging_api(annotator, campaign)
    assert api.get(base + "standing/").json() == {"may_judge": True, "code": None, "detail": ""}
    people_service.pause(campaign, annotator, admin, "checking")
    queue.assign(campaign, people["other"])
    Lease.objects.create(  # taken as the pause came
        pair=Pair.objects.filter(leased=0).first(),
        annotator=annotator,
        expires_at=timezone.now() + timedelta(minutes=5),
    )
    leases = list(Lease.objects.values_list("pk", flat=True))
    with CaptureQueriesContext(connection) as run:
        got = api.get(base + "standing/").json()
    assert len(run.captured_queries) == 1, [q["sql"] for q in run.captured_queries]
    assert list(Lease.objects.values_list("pk", flat=True)) == leases  # a GET writes nothing
    lease = Lease.objects.get(annotator=annotator)
    body = {"pair": task_ids.encode(annotator.pk, lease.pair_id), "label": "relevant"}
    body["uuid"] = str(uuid.uuid4())
    refused = api.post(base + "submit/", body, format="json").json()
    assert got == {"may_judge": False, "code": "paused", "detail": refused["detail"]}
    assert "checking" in got["detail"]
    people_service.reinstate(campaign, annotator, admin)
    with transaction.atomic():
        lifecycle.change_status(campaign, Campaign.Status.PAUSED)
    got = api.get(base + "standing/").json()
    assert got["code"] == "inactive" and "campaign is paused" in got["detail"]
    assert api.get(f"/api/campaigns/{campaign.pk + 1000}/standing/").status_code == 404


def test_a_refused_action_comes_back_as_a_message_on_its_page(people, client):
    """A view lets a service's refusal through; the one error boundary of the pages
    (:func:`config.error_handling.user_errors_back`) shows it on the page the action
    belongs to and changes nothing."""
    from tests.factories import make_campaign

    campaign = make_campaign()
    client.force_login(people["admin"])
    annotator = people["annotator"]
    url = f"/campaigns/{campaign.pk}/annotators/{annotator.pk}/reinstate/"
    response = client.post(url, follow=True)
    assert response.redirect_chain == [(f"/campaigns/{campaign.pk}/annotators/", 302)]
    shown = [str(message) for message in response.context["messages"]]
    assert shown == [f"{annotator.username} is not paused in {campaign.name!r}"]
    missing = client.post(f"/campaigns/{campaign.pk + 1000}/annotators/{annotator.pk}/pause/")
    assert missing.status_code == 404  # a lookup's NotFound is the site's 404 page
