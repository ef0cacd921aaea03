"""Admins create campaigns from chosen runs in the admin UI."""

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Campaign, Pair
from tests.factories import make_campaign


@pytest.fixture
def admin_client(client, db):
    client.force_login(
        get_user_model().objects.create_superuser("root", "r@example.org", "pw-root-123")
    )
    return client


def form_data(dataset, run, **extra):
    data = {
        "name": "from-admin",
        "dataset": dataset.pk,
        "runs": [run.pk],
        "depth": 2,
        "seed": 0,
        "second_label_rate": 0.5,
        "max_labels": 3,
        "lease_seconds": 300,
        "guidelines": "Every element must be present.",
    }
    data.update(extra)
    return data


def test_admin_creates_campaign_by_pooling(admin_client):
    source = make_campaign(n_queries=3, depth=3)
    run = source.runs.get()
    page = admin_client.get("/admin/annotation/campaign/add/")
    assert page.status_code == 200 and b"Runs whose top-k" in page.content
    response = admin_client.post("/admin/annotation/campaign/add/", form_data(source.dataset, run))
    assert response.status_code == 302, response.content[:2000]
    campaign = Campaign.objects.get(name="from-admin")
    assert Pair.objects.filter(campaign=campaign).count() == 6  # 3 queries x depth 2
    assert campaign.run_names() == [run.name]
    assert campaign.created_by.username == "root"


def test_admin_form_rejects_bad_depth(admin_client):
    source = make_campaign(n_queries=3, depth=3)
    run = source.runs.get()
    response = admin_client.post(
        "/admin/annotation/campaign/add/", form_data(source.dataset, run, depth=9)
    )
    assert response.status_code == 200
    assert b"shallower than depth 9" in response.content
    assert not Campaign.objects.filter(name="from-admin").exists()


@pytest.fixture
def role_users(db):
    from django.core.management import call_command

    call_command("create_demo_users", verbosity=0)
    User = get_user_model()
    return {name: User.objects.get(username=name) for name in ("admin", "researcher", "annotator1")}


@pytest.mark.parametrize(
    ("who", "path", "expected"),
    [
        ("researcher", "/admin/retrieval/dataset/", 200),
        ("researcher", "/admin/annotation/campaign/", 200),
        ("researcher", "/admin/retrieval/dataset/add/", 403),
        ("researcher", "/admin/annotation/campaign/add/", 403),
        ("researcher", "/admin/auth/user/", 403),
        ("admin", "/admin/auth/user/", 200),
        ("admin", "/admin/annotation/campaign/add/", 200),
        ("annotator1", "/admin/retrieval/dataset/", 302),
        ("annotator1", "/", 302),
        ("researcher", "/", 200),
    ],
)
def test_roles_reach_what_they_should(client, role_users, who, path, expected):
    client.force_login(role_users[who])
    response = client.get(path)
    assert response.status_code == expected
    if who == "annotator1" and path == "/":
        assert response["Location"] == "/judge/"


def test_admin_form_says_when_nothing_is_left_to_judge(admin_client):
    source = make_campaign(n_queries=3, depth=3)
    run = source.runs.get()
    # The source campaign's pairs are all judged, so a second campaign would pool nothing.
    Pair.objects.filter(campaign=source).update(
        label_count=1, needed=0, open_slots=0, status="irrelevant"
    )
    response = admin_client.post(
        "/admin/annotation/campaign/add/", form_data(source.dataset, run, depth=3)
    )
    assert response.status_code == 200
    assert b"no pair left to judge" in response.content
    assert not Campaign.objects.filter(name="from-admin").exists()


def test_admin_site_cannot_write_a_pairs_state(admin_client):
    """A pair's status and counters change only through the pair-state owner: even an admin's
    POST to the pair's change form is refused and the row stays as it was (it used to save a
    hand-typed status, adjudication or hold)."""
    campaign = make_campaign(n_queries=2, depth=2)
    pair = campaign.pairs.order_by("pk").first()
    before = Pair.objects.filter(pk=pair.pk).values().get()
    page = admin_client.get(f"/admin/annotation/pair/{pair.pk}/change/")
    assert page.status_code == 200 and b'name="status"' not in page.content
    response = admin_client.post(
        f"/admin/annotation/pair/{pair.pk}/change/",
        {"status": "relevant", "held": "on", "double": "on", "adjudicated": "relevant"},
    )
    assert response.status_code == 403
    assert admin_client.get("/admin/annotation/pair/add/").status_code == 403
    assert admin_client.get("/admin/annotation/escalation/add/").status_code == 403
    assert Pair.objects.filter(pk=pair.pk).values().get() == before


@pytest.mark.parametrize(
    "url",
    [
        "/admin/annotation/pair/",
        "/admin/annotation/goldpair/",
        "/admin/annotation/qualificationattempt/",
        "/admin/annotation/annotatorstanding/",
        "/admin/annotation/campaign/",
    ],
)
def test_admin_lists_never_read_a_campaigns_provenance(admin_client, url):
    """The provenance blob is megabytes at FIRE's scale; no list shows it, none reads it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import GoldPair
    from tests.factories import add_gold, make_campaign

    campaign = make_campaign(n_queries=3)
    add_gold(campaign, n=2)
    assert GoldPair.objects.exists()
    column = Campaign._meta.get_field("provenance").column
    with CaptureQueriesContext(connection) as captured:
        page = admin_client.get(url)
    assert page.status_code == 200
    assert not [q["sql"] for q in captured.captured_queries if column in q["sql"]]
