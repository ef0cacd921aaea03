"""The request's user and session read by hand-written SQL, and the permission cache's
invalidation (config/permission_cache.py, config/session_store.py)."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.models import Session
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config import permission_cache, roles
from config.session_store import SessionStore
from tests.factories import make_campaign

FIELDS = [field.attname for field in get_user_model()._meta.concrete_fields]


@pytest.mark.django_db
def test_the_user_is_the_one_the_orm_reads_in_one_statement():
    user = get_user_model().objects.create_user("ann", email="a@example.org", password="pw-1234567")
    user.last_login = timezone.now()
    user.save()
    backend = permission_cache.CachedPermissionBackend()
    with CaptureQueriesContext(connection) as queries:
        loaded = backend.get_user(user.pk)
    assert len(queries) == 1
    expected = ModelBackend().get_user(user.pk)
    assert [getattr(loaded, name) for name in FIELDS] == [getattr(expected, n) for n in FIELDS]
    assert isinstance(loaded.is_active, bool) and loaded.last_login.tzinfo is not None
    assert backend.get_user(str(user.pk)).pk == user.pk  # the session stores it as text
    assert backend.get_user(user.pk + 1000) is None
    assert backend.get_user("1; DROP TABLE auth_user") is None
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    assert backend.get_user(user.pk) is None  # deactivated: logged out on the next request


@pytest.mark.django_db
def test_a_session_loads_until_it_expires():
    store = SessionStore()
    store["answer"] = 42
    store.create()
    key = store.session_key
    with CaptureQueriesContext(connection) as queries:
        assert SessionStore(key).load() == {"answer": 42}
    assert len(queries) == 1
    Session.objects.filter(pk=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    expired = SessionStore(key)
    assert expired.load() == {} and expired.session_key is None
    assert SessionStore("no-such-session-key-000000000000").load() == {}


@pytest.mark.django_db
def test_a_logged_in_client_and_a_logout_go_through_the_store(client):
    user = get_user_model().objects.create_user("bob", password="pw-bob-12345")
    user.groups.add(roles.ensure_groups()[roles.ANNOTATOR])
    campaign = make_campaign(n_queries=3, depth=2, seed=1)
    assert client.login(username="bob", password="pw-bob-12345")
    assert client.post(f"/api/campaigns/{campaign.pk}/next/").status_code == 200
    client.logout()
    assert client.post(f"/api/campaigns/{campaign.pk}/next/").status_code in (401, 403)


@pytest.mark.django_db
def test_a_role_taken_away_stops_working_in_this_process_at_once():
    model = get_user_model()
    user = model.objects.create_user("carol", password="pw-carol-1234")
    group = roles.ensure_groups()[roles.ANNOTATOR]
    user.groups.add(group)
    assert model.objects.get(pk=user.pk).has_perm(roles.JUDGE_PAIRS)  # now cached
    with CaptureQueriesContext(connection) as queries:
        assert model.objects.get(pk=user.pk).has_perm(roles.JUDGE_PAIRS)
    assert not [q for q in queries if "auth_permission" in q["sql"]]  # read from the cache
    user.groups.remove(group)
    assert not model.objects.get(pk=user.pk).has_perm(roles.JUDGE_PAIRS)
    user.groups.add(group)
    assert model.objects.get(pk=user.pk).has_perm(roles.JUDGE_PAIRS)
    group.permissions.clear()  # a group's permissions change: every member's cache goes
    assert not model.objects.get(pk=user.pk).has_perm(roles.JUDGE_PAIRS)
