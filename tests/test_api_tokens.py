"""The API tokens page: make a named token (its key shown once), use it with the scoring API,
revoke it (then a 401); old DRF keys keep working; odd input is a 400, never a 5xx."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.authtoken.models import Token

from config import api_tokens, roles
from config.models import ApiToken
from tests.factories import query_dataset

KEY = re.compile(r"fp_[A-Za-z0-9_-]{40}")


def login(name: str, role: str | None) -> Client:
    user = get_user_model().objects.create_user(name, password="pw-long-enough-1")
    if role:
        user.groups.add(roles.ensure_groups()[role])
    client = Client()
    client.force_login(user)
    client.user = user
    return client


def make(client: Client, name: str) -> str:
    answer = client.post("/account/tokens/", {"name": name})
    assert answer.status_code == 200, answer.content
    assert "no-store" in answer["Cache-Control"]
    return KEY.search(answer.content.decode()).group()


def scores_api(key: str):
    """Any token-authenticated request: the scores of a job nobody has (404 once let in)."""
    return Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/scores/999999/")


@pytest.mark.django_db
def test_a_key_is_shown_once_stored_hashed_and_opens_the_api_until_revoked():
    researcher = login("res", roles.RESEARCHER)
    key = make(researcher, "laptop")
    token = ApiToken.objects.get()
    assert token.name == "laptop" and token.user == researcher.user
    assert token.digest == api_tokens.digest(key) and key not in token.digest
    assert token.last_used_at is None

    listing = researcher.get("/account/tokens/").content.decode()
    assert "laptop" in listing and key not in listing and key[:8] in listing
    assert "never" in listing

    assert scores_api(key).status_code == 404  # let in: the job does not exist
    token.refresh_from_db()
    assert token.last_used_at is not None

    answer = researcher.post(f"/account/tokens/{token.pk}/revoke/", follow=True)
    assert answer.status_code == 200 and "Revoked the token" in answer.content.decode()
    assert not ApiToken.objects.exists()
    assert scores_api(key).status_code == 401


@pytest.mark.django_db
def test_several_named_tokens_each_revoked_alone_and_only_by_their_owner():
    researcher = login("res", roles.RESEARCHER)
    admin = login("boss", roles.ADMIN)
    first, second = make(researcher, "one"), make(researcher, "two")
    theirs = make(admin, "admin's")
    one = ApiToken.objects.get(name="one")
    assert admin.post(f"/account/tokens/{one.pk}/revoke/").status_code == 404
    assert ApiToken.objects.count() == 3
    researcher.post(f"/account/tokens/{one.pk}/revoke/")
    assert scores_api(first).status_code == 401
    assert scores_api(second).status_code == 404 and scores_api(theirs).status_code == 404
    assert "admin&#x27;s" not in researcher.get("/account/tokens/").content.decode()


@pytest.mark.django_db
def test_a_token_uploads_a_run():
    query_dataset("tiny")
    researcher = login("res", roles.RESEARCHER)
    key = make(researcher, "script")
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    answer = client.post("/api/datasets/tiny/runs/", {"name": "mine"})
    assert answer.status_code == 400  # let in, then told what is missing (the run file)
    assert "run" in answer.json()["detail"]


@pytest.mark.django_db
def test_keys_made_by_drf_create_token_keep_working_and_unknown_keys_are_401():
    researcher = login("res", roles.RESEARCHER)
    legacy = Token.objects.create(user=researcher.user).key
    assert scores_api(legacy).status_code == 404
    assert scores_api("fp_" + "x" * 40).status_code == 401
    assert scores_api("not-a-key").status_code == 401
    assert Client(HTTP_AUTHORIZATION="Token").get("/api/scores/1/").status_code == 401


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("", "This field is required"),
        ("   ", "This field is required"),
        ("x" * 101, "101 characters long, over the limit of 100"),
        ("laptop\u202e", "invisible format character (U+202E)"),
        ("a\x00b", "Null characters are not allowed"),
    ],
)
def test_odd_names_are_a_400_with_a_message(name, error):
    researcher = login("res", roles.RESEARCHER)
    answer = researcher.post("/account/tokens/", {"name": name})
    assert answer.status_code == 400 and error in answer.content.decode()
    assert not ApiToken.objects.exists()


@pytest.mark.django_db
def test_a_taken_name_and_too_many_tokens_are_refused():
    researcher = login("res", roles.RESEARCHER)
    make(researcher, "same")
    answer = researcher.post("/account/tokens/", {"name": " same "})
    assert answer.status_code == 400 and "already" in answer.content.decode()
    for i in range(api_tokens.MAX_TOKENS - 1):
        api_tokens.create(researcher.user, f"t{i}")
    answer = researcher.post("/account/tokens/", {"name": "one more"})
    assert answer.status_code == 400 and "revoke one first" in answer.content.decode()


@pytest.mark.django_db
def test_anonymous_users_go_to_login_and_annotators_are_refused():
    answer = Client().get("/account/tokens/")
    assert answer.status_code == 302 and answer["Location"].startswith("/login/")
    assert login("ann", roles.ANNOTATOR).get("/account/tokens/").status_code == 403
    assert Client().post("/account/tokens/", {"name": "x"}).status_code == 302
    assert not ApiToken.objects.exists()


@pytest.mark.django_db
def test_the_migration_lists_earlier_drf_keys_and_revoking_one_ends_it():
    from importlib import import_module

    from django.apps import apps

    copy_drf_tokens = import_module("config.migrations.0001_api_tokens").copy_drf_tokens
    researcher = login("res", roles.RESEARCHER)
    legacy = Token.objects.create(user=researcher.user).key
    copy_drf_tokens(apps, None)
    token = ApiToken.objects.get()
    assert token.digest == api_tokens.digest(legacy) and token.prefix == legacy[:8]
    assert "made on the server" in researcher.get("/account/tokens/").content.decode()
    assert scores_api(legacy).status_code == 404
    researcher.post(f"/account/tokens/{token.pk}/revoke/")
    assert not Token.objects.exists() and scores_api(legacy).status_code == 401
