"""A campaign's live figures served from storage (:mod:`annotation.campaign_read.live_figures`):
equal to fresh ones, out of date exactly when the labels change, computed again by the job
the submits queue, and the pages say how old they are."""

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.campaign_read import live_figures
from annotation.judging import figures_due, pair_state, queue, submit
from annotation.models import Pair
from annotation.services import people
from config import roles
from jobs.models import Job, StoredFigure
from tests.factories import make_campaign, serve_all


def _annotators(*names):
    users = [get_user_model().objects.create_user(n, password="pw-live-figures-1") for n in names]
    for user in users:
        user.groups.add(roles.ensure_groups()[roles.ANNOTATOR])
    return users


def _fresh(campaign):
    return {kind: repr(compute(campaign)) for kind, compute in live_figures.COMPUTE.items()}


def _stored(campaign):
    live = live_figures.live_figures(campaign)
    return {kind: repr(live[kind]) for kind in live_figures.COMPUTE}


@pytest.fixture
def campaign(db):
    found = make_campaign(n_queries=4, depth=3, rate=0.5)
    a, b = _annotators("ann-a", "ann-b")
    serve_all(found, a, answer=lambda pair: "relevant" if pair.pk % 2 else "irrelevant")
    serve_all(found, b, answer=lambda pair: "relevant" if pair.pk % 3 else "irrelevant")
    return found


def test_stored_figures_equal_fresh_ones_and_follow_each_change(campaign, monkeypatch):
    assert _stored(campaign) == _fresh(campaign)
    first = live_figures.live_figures(campaign)
    assert first.current
    monkeypatch.setattr(live_figures, "INLINE_SECONDS", 0.0)  # as at FIRE's scale: never here
    (c,) = _annotators("ann-c")
    before = live_figures.live_state(campaign)
    pair = queue.assign(campaign, c).current.pair
    submit.submit(c, pair.pk, "relevant", uuid.uuid4())
    stale = live_figures.live_figures(campaign)
    assert not stale.current and stale.state != before
    assert {k: repr(stale[k]) for k in live_figures.COMPUTE} == {
        k: repr(first[k]) for k in live_figures.COMPUTE
    }  # the last result, not recomputed per view
    live_figures.refresh(campaign)
    assert live_figures.live_figures(campaign).current and _stored(campaign) == _fresh(campaign)
    # An adjudication, a discount: each changes the state the figures are computed from.
    for change in (
        lambda: pair_state.adjudicate(
            Pair.objects.filter(campaign=campaign, label_count__gt=0).first(),
            get_user_model().objects.create_superuser("boss", password="pw-live-boss-1"),
            "relevant",
        ),
        lambda: people.discount(campaign, get_user_model().objects.get(username="ann-b")),
    ):
        state = live_figures.live_state(campaign)
        change()
        assert live_figures.live_state(campaign) != state
        assert not live_figures.live_figures(campaign).current
        live_figures.refresh(campaign)
        assert _stored(campaign) == _fresh(campaign)


def test_a_cheap_out_of_date_figure_is_computed_again_in_the_request(campaign):
    live_figures.live_figures(campaign)
    (c,) = _annotators("ann-c")
    pair = queue.assign(campaign, c).current.pair
    submit.submit(c, pair.pk, "irrelevant", uuid.uuid4())
    again = live_figures.live_figures(campaign)
    assert again.current and _stored(campaign) == _fresh(campaign)


def test_submits_queue_the_refresh_when_due_and_once(
    campaign, monkeypatch, settings, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    from jobs.models import StoredFigure

    settings.FIREPOOL_WARM_FIGURES = True  # the suite turns the jobs off; here they are tested
    monkeypatch.setattr(figures_due, "EVERY", 1)
    submitted = []
    monkeypatch.setattr(figures_due.runner, "submit", lambda k, d: submitted.append((k, d)))
    with django_capture_on_commit_callbacks(execute=True):
        assert figures_due.request_refresh(campaign, 7)  # never computed: the job does it
    assert submitted == [(figures_due.JOB_KIND, {"campaign": campaign.name})]
    submitted.clear()
    live_figures.live_figures(campaign)
    assert not figures_due.request_refresh(campaign, 7)  # computed just now
    later = timezone.now() + figures_due.MIN_INTERVAL + timedelta(seconds=1)
    with django_capture_on_commit_callbacks(execute=True):
        assert figures_due.request_refresh(campaign, 7, later)
    assert submitted == [(figures_due.JOB_KIND, {"campaign": campaign.name})]
    Job.objects.create(kind=figures_due.JOB_KIND, arguments={"campaign": campaign.name})
    assert not figures_due.request_refresh(campaign, 7, later)  # one is queued already
    StoredFigure.objects.filter(kind=figures_due.PACED_BY).update(seconds=10.0)
    Job.objects.all().delete()
    assert not figures_due.request_refresh(campaign, 7, later)  # ten times its cost: 100 s


def test_the_job_stores_every_figure(campaign):
    from jobs.registry import get_kind
    from jobs.runner import check_arguments

    kind = get_kind(figures_due.JOB_KIND)

    class Reporter:
        def step(self, *args, **kwargs):
            pass

    result = kind.run(Reporter(), **check_arguments(kind, {"campaign": campaign.name}))
    assert set(result["seconds"]) == set(live_figures.COMPUTE)
    assert live_figures.live_figures(campaign).current


def test_pages_and_the_api_say_how_old_their_figures_are(campaign, client, monkeypatch):
    user = get_user_model().objects.create_user("res", password="pw-live-res-1", is_staff=True)
    user.groups.add(roles.ensure_groups()[roles.RESEARCHER])
    client.force_login(user)
    urls = [f"/campaigns/{campaign.pk}/{p}" for p in ("", "agreement/", "annotators/")]
    for url in urls:
        page = client.get(url).content.decode()
        assert "Figures computed" in page and "from the labels as they are now" in page, url
    monkeypatch.setattr(live_figures, "INLINE_SECONDS", 0.0)
    (c,) = _annotators("ann-c")
    pair = queue.assign(campaign, c).current.pair
    submit.submit(c, pair.pk, "relevant", uuid.uuid4())
    for url in urls:
        page = client.get(url).content.decode()
        assert "labels changed since" in page and "/jobs/start/campaign-figures/" in page, url
    data = client.get(f"/api/campaigns/{campaign.pk}/annotator-scores/").json()
    assert data["current"] is False and data["computed_at"]


def test_a_page_reads_its_stored_figures_in_one_query(campaign):
    live_figures.live_figures(campaign)  # every kind computed and stored
    table = StoredFigure._meta.db_table
    with CaptureQueriesContext(connection) as seen:
        again = live_figures.live_figures(campaign)
    assert again.current and set(again.figures) == set(live_figures.COMPUTE)
    reads = [q["sql"] for q in seen.captured_queries if table in q["sql"]]
    assert len(reads) == 1, reads
