"""A new annotator account from the campaign's people page: the service makes it with the
annotator role and a working generated password, invites it in the same transaction, and
leaves nothing behind when it refuses; the page shows the password once, only admins may
ask, and odd names are a form error, never a 5xx. Also: the page's Admit button admits,
and a rule's pause names its rule."""

import html
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, connections, transaction
from django.test import Client

from annotation.gold import tasks as gold_queue
from annotation.judging import queue
from annotation.models import AnnotatorStanding, StandingEvent
from annotation.people import service as people_service
from config import roles
from tests.factories import add_gold, make_campaign, serve_all


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _add_url(campaign) -> str:
    return f"/campaigns/{campaign.pk}/annotators/add/"


def _counts() -> dict[str, int]:
    return {
        "users": get_user_model().objects.count(),
        "standings": AnnotatorStanding.objects.count(),
        "events": StandingEvent.objects.count(),
        "memberships": get_user_model().groups.through.objects.count(),
    }


def test_a_new_account_is_an_invited_annotator_whose_password_works(people):
    campaign = make_campaign(n_queries=2, depth=2, seed=21)
    admin = people["admin"]
    made = people_service.create_annotator(campaign, "newbie", "New@Example.ORG", admin)
    user = get_user_model().objects.get(username="newbie")
    assert made.id == user.pk and made.username == "newbie" and made.campaign == campaign.name
    assert made.email == user.email == "New@example.org"  # the domain's case normalised
    assert list(user.groups.values_list("name", flat=True)) == [roles.ANNOTATOR]
    assert roles.has_perm(user, roles.JUDGE_PAIRS)
    assert not user.is_staff and not user.is_superuser
    assert len(made.password) >= 16 and made.password not in user.password  # only a hash
    assert user.check_password(made.password)
    assert Client().login(username="newbie", password=made.password)
    (person,) = people_service.campaign_people(campaign).people
    assert person.username == "newbie"
    assert [(e.action, e.by) for e in person.history] == [("invited", admin.username)]
    assert queue.assign(campaign, user).current is not None  # may judge at once
    other = people_service.create_annotator(campaign, "newbie2", "", admin)
    assert other.password != made.password and other.email == ""


@pytest.mark.parametrize(
    "name, field",
    [
        ("annotator", "username"),  # taken
        ("ANNOTATOR", "username"),  # taken in another letter case
        ("slash/name", "username"),
        ("line\u2028break", "username"),
        ("zero\u200bwidth", "username"),
        ("<b>x</b>", "username"),
        ("x" * 151, "username"),
        ("", "username"),
    ],
)
def test_a_refused_name_makes_nothing(people, name, field):
    campaign = make_campaign(n_queries=2, depth=2, seed=22)
    before = _counts()
    with pytest.raises(people_service.AccountError) as refused:
        people_service.create_annotator(campaign, name, "", people["admin"])
    assert refused.value.field == field
    assert _counts() == before


def test_a_bad_email_or_a_failed_invitation_makes_nothing(people, monkeypatch):
    campaign = make_campaign(n_queries=2, depth=2, seed=23)
    before = _counts()
    with pytest.raises(people_service.AccountError) as refused:
        people_service.create_annotator(campaign, "fresh", "not an address", people["admin"])
    assert refused.value.field == "email"
    assert _counts() == before

    def broken(*args, **kwargs):
        raise people_service.PeopleError("the invitation failed")

    monkeypatch.setattr(people_service, "invite", broken)
    with pytest.raises(people_service.PeopleError, match="invitation failed"):
        people_service.create_annotator(campaign, "fresh", "", people["admin"])
    assert _counts() == before  # the account went with the invitation
    assert not get_user_model().objects.filter(username="fresh").exists()


def test_the_page_adds_an_annotator_and_shows_the_password_once(people):
    campaign = make_campaign(n_queries=2, depth=2, seed=24)
    admin = _client(people["admin"])
    page = admin.get(f"/campaigns/{campaign.pk}/annotators/")
    assert page.status_code == 200 and b'id="add-annotator"' in page.content
    action = re.search(
        r'<form method="post" action="([^"#]+)#add-annotator"', page.content.decode()
    )
    assert action and action.group(1) == _add_url(campaign)
    made_url = f"/campaigns/{campaign.pk}/annotators/made/"
    posted = admin.post(action.group(1), {"username": "walk-in", "email": ""})
    assert posted.status_code == 302 and posted["Location"] == made_url  # POST, redirect, GET
    response = admin.get(made_url)
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    password = re.search(r'id="new-password">([^<]+)<', response.content.decode()).group(1)
    password = html.unescape(password)
    assert Client().login(username="walk-in", password=password)
    reloaded = admin.get(made_url)  # a reload posts nothing again and shows no password
    assert reloaded.status_code == 200 and b'id="new-annotator-gone"' in reloaded.content
    assert password.encode() not in reloaded.content
    assert get_user_model().objects.filter(username__iexact="walk-in").count() == 1
    listed = admin.get(f"/campaigns/{campaign.pk}/annotators/")
    assert b'id="person-walk-in"' in listed.content
    assert password.encode() not in listed.content  # shown once: never again
    again = admin.post(_add_url(campaign), {"username": "Walk-In"})
    assert again.status_code == 400 and b"is taken" in again.content
    assert b'id="new-username-error"' in again.content
    assert get_user_model().objects.filter(username__iexact="walk-in").count() == 1


def test_only_admins_add_annotators_and_get_changes_nothing(people):
    campaign = make_campaign(n_queries=2, depth=2, seed=25)
    before = _counts()
    data = {"username": "sneaky"}
    assert _client(people["researcher"]).post(_add_url(campaign), data).status_code == 403
    assert _client(people["annotator"]).post(_add_url(campaign), data).status_code == 403
    anonymous = Client().post(_add_url(campaign), data)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    admin = _client(people["admin"])
    assert admin.get(_add_url(campaign), data).status_code == 405
    assert admin.post("/campaigns/999999/annotators/add/", data).status_code == 404
    assert _counts() == before
    page = _client(people["researcher"]).get(f"/campaigns/{campaign.pk}/annotators/")
    assert page.status_code == 200 and b'id="add-annotator"' not in page.content


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"username": "x" * 100_000},
        {"username": "a/b"},
        {"username": "a\u2028b"},
        {"username": "\x00"},
        {"username": "   "},
        {"username": "ok-name", "email": "x" * 10_000},
        {"username": "ok-name", "email": "\u2028@example.org"},
        {"username": "ok-name", "email": "a@b@example.org"},
    ],
)
def test_odd_input_is_a_form_error(people, data):
    campaign = make_campaign(n_queries=2, depth=2, seed=26)
    before = _counts()
    response = _client(people["admin"]).post(_add_url(campaign), data)
    assert response.status_code == 400
    assert b'class="error"' in response.content
    assert _counts() == before


def test_pressing_admit_on_the_page_admits(people):
    campaign = make_campaign(n_queries=6, depth=3, seed=27)
    add_gold(campaign, 8, qualification=True, training_pairs=4, tries=1)
    annotator = people["annotator"]
    serve_all(campaign, annotator, lambda pair: "relevant")  # half wrong: fails
    assert gold_queue.qualification(campaign, annotator).out_of_tries
    admin = _client(people["admin"])
    page = admin.get(f"/campaigns/{campaign.pk}/annotators/").content.decode()
    row = re.search(r'<tr id="person-annotator".*?</tr>', page, re.S).group(0)
    action = re.search(
        r'<form method="post" action="([^"]+)">\s*<input type="hidden" name="csrfmiddlewaretoken"'
        r'[^>]*>\s*<button type="submit" class="small secondary" name="admit">',
        row,
    )
    assert action, row
    response = admin.post(html.unescape(action.group(1)), follow=True)
    assert response.status_code == 200 and b"annotator is admitted" in response.content
    assert gold_queue.qualification(campaign, annotator).admitted
    (person,) = people_service.campaign_people(campaign).people
    assert person.qualification_state == "admitted"


def test_a_missing_annotator_group_is_made_again(people):
    """The role's group is (re)made with its permissions if a flush took it."""
    Group.objects.filter(name=roles.ANNOTATOR).delete()
    campaign = make_campaign(n_queries=2, depth=2, seed=28)
    made = people_service.create_annotator(campaign, "late", "", people["admin"])
    assert roles.has_perm(get_user_model().objects.get(pk=made.id), roles.JUDGE_PAIRS)


def test_a_made_account_shows_only_on_its_own_campaigns_page(people):
    first = make_campaign(n_queries=2, depth=2, seed=26)
    second = make_campaign(n_queries=2, depth=2, seed=27)
    admin = _client(people["admin"])
    assert admin.post(_add_url(first), {"username": "only-first"}).status_code == 302
    elsewhere = admin.get(f"/campaigns/{second.pk}/annotators/made/")
    assert b'id="new-password"' not in elsewhere.content
    assert b'id="new-annotator-gone"' in elsewhere.content
    own = admin.get(f"/campaigns/{first.pk}/annotators/made/")
    assert b'id="new-password"' in own.content and b"only-first" in own.content


def test_the_database_holds_one_account_per_username_in_any_letter_case(people):
    with pytest.raises(IntegrityError), transaction.atomic():
        get_user_model().objects.create_user("AnNoTaToR")
    get_user_model().objects.create_user("annotator-2")  # other names still go in


def test_a_race_lost_after_the_check_is_the_taken_error(people, monkeypatch):
    """Another admin makes the name between the service's check and its insert: the
    database's index refuses it, and the form gets the same error as for a taken name."""
    campaign = make_campaign(n_queries=2, depth=2, seed=26)
    monkeypatch.setattr(people_service, "_new_username", lambda username: username)
    before = _counts()
    with pytest.raises(people_service.AccountError, match="is taken") as refused:
        people_service.create_annotator(campaign, "Annotator", "", people["admin"])
    assert refused.value.field == "username"
    assert _counts() == before


def test_the_page_shows_a_race_lost_after_its_check_as_the_form_error(people, monkeypatch):
    """The page's own check passed (another admin made "ANNOTATOR" a moment later): the
    index refuses the insert and the page answers with the form's error (400), not a 500."""
    campaign = make_campaign(n_queries=2, depth=2, seed=28)
    monkeypatch.setattr(people_service, "case_twin", lambda *args, **kwargs: None)
    before = _counts()
    page = _client(people["admin"]).post(_add_url(campaign), {"username": "ANNOTATOR"})
    assert page.status_code == 400
    assert "the username &#x27;ANNOTATOR&#x27; is taken" in page.content.decode()
    assert _counts() == before


@pytest.mark.django_db(transaction=True)
def test_parallel_requests_make_one_account_per_letter_case(people):
    campaign = make_campaign(n_queries=2, depth=2, seed=27)
    names = ["Walk-In", "walk-in", "WALK-IN", "wAlK-iN"]
    barrier = threading.Barrier(len(names))

    def add(name: str) -> int:
        client = _client(people["admin"])
        barrier.wait()
        try:
            return client.post(_add_url(campaign), {"username": name}).status_code
        finally:
            connections.close_all()

    with ThreadPoolExecutor(len(names)) as pool:
        statuses = sorted(pool.map(add, names))
    assert statuses == [302, 400, 400, 400]  # one made (POST, redirect, GET)
    assert get_user_model().objects.filter(username__iexact="walk-in").count() == 1
