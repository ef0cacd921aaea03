"""The request's user and permission set read by one hand-written statement
(config/permission_cache.py), fresh in every process on every request, and the session engine
(Django's cached database sessions)."""

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.contrib.sessions.backends.cached_db import SessionStore
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config import permission_cache, roles
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
        loaded.has_perm(roles.JUDGE_PAIRS)
    assert len(queries) == 1  # the user and their permissions
    expected = ModelBackend().get_user(user.pk)
    assert [getattr(loaded, name) for name in FIELDS] == [getattr(expected, n) for n in FIELDS]
    assert isinstance(loaded.is_active, bool) and loaded.last_login.tzinfo is not None
    assert backend.get_user(str(user.pk)).pk == user.pk  # the session stores it as text
    assert backend.get_user(user.pk + 1000) is None
    assert backend.get_user("1; DROP TABLE auth_user") is None
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    assert backend.get_user(user.pk) is None  # deactivated: logged out on the next request


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["nobody", "annotator", "admin", "own and groups", "superuser"])
def test_the_permission_set_is_the_one_django_reads(who):
    """The set read with the user is ``ModelBackend``'s: none, one role's, several groups'
    and the user's own (overlapping), and every permission for a superuser."""
    model = get_user_model()
    user = model.objects.create_user("eve", password="pw-eve-1234567")
    groups = roles.ensure_groups()
    if who in ("annotator", "own and groups"):
        user.groups.add(groups[roles.ANNOTATOR])
    if who in ("admin", "own and groups"):
        user.groups.add(groups[roles.ADMIN])
    if who == "own and groups":
        user.user_permissions.add(*Permission.objects.filter(codename__startswith="view_")[:5])
    if who == "superuser":
        model.objects.filter(pk=user.pk).update(is_superuser=True)
    read = _requests_user(user).get_all_permissions()
    assert read == _truth(user)
    assert bool(read) == (who != "nobody")


def test_sessions_are_djangos_database_sessions_on_a_per_process_cache(settings):
    """The default cache is each process's own, so sessions are read from the database on
    every request (a logout then reaches every worker); a shared cache brings back cached
    database sessions (config.cache_url.session_engine, tested with the login throttle)."""
    assert settings.CACHES["default"]["BACKEND"].endswith("LocMemCache")
    assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.db"


@pytest.mark.django_db
def test_a_session_loads_until_it_expires():
    store = SessionStore()
    store["answer"] = 42
    store.create()
    key = store.session_key
    with CaptureQueriesContext(connection) as queries:
        assert SessionStore(key).load() == {"answer": 42}
    assert len(queries) == 0  # from the cache
    cache.delete(store.cache_key)  # another process's cache, or an evicted entry
    with CaptureQueriesContext(connection) as queries:
        assert SessionStore(key).load() == {"answer": 42}
    assert len(queries) == 1  # one read of the row, then cached again
    with CaptureQueriesContext(connection) as queries:
        assert SessionStore(key).load() == {"answer": 42}
    assert len(queries) == 0
    # Expired in the database and not in the cache: it does not exist.
    cache.delete(store.cache_key)
    Session.objects.filter(pk=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    expired = SessionStore(key)
    assert expired.load() == {} and expired.session_key is None
    # Saved with an expiry in the past: neither the cache nor the database keeps it.
    late = SessionStore()
    late["answer"] = 43
    late.set_expiry(-1)
    late.create()
    gone = SessionStore(late.session_key)
    assert gone.load() == {} and gone.session_key is None
    assert SessionStore("no-such-session-key-000000000000").load() == {}


@pytest.mark.django_db
def test_a_logged_in_client_and_a_logout_go_through_the_store(client):
    user = get_user_model().objects.create_user("bob", password="pw-bob-12345")
    user.groups.add(roles.ensure_groups()[roles.ANNOTATOR])
    campaign = make_campaign(n_queries=3, depth=2, seed=1)
    assert client.login(username="bob", password="pw-bob-12345")
    assert client.post(f"/api/campaigns/{campaign.pk}/next/").status_code == 200
    key = client.cookies["sessionid"].value
    client.logout()
    assert client.post(f"/api/campaigns/{campaign.pk}/next/").status_code in (401, 403)
    # The old cookie, replayed, names a session gone from the cache and the database alike.
    client.cookies["sessionid"] = key
    assert client.post(f"/api/campaigns/{campaign.pk}/next/").status_code in (401, 403)
    assert SessionStore(key).load() == {}


@pytest.mark.django_db
def test_a_role_taken_away_stops_working_in_every_process_at_once():
    model = get_user_model()
    user = model.objects.create_user("carol", password="pw-carol-1234")
    group = roles.ensure_groups()[roles.ANNOTATOR]
    user.groups.add(group)
    loaded = _requests_user(user)
    with CaptureQueriesContext(connection) as queries:
        assert loaded.has_perm(roles.JUDGE_PAIRS)
    assert not queries  # the set came with the user
    user.groups.remove(group)
    assert not _requests_user(user).has_perm(roles.JUDGE_PAIRS)
    user.groups.add(group)
    assert _requests_user(user).has_perm(roles.JUDGE_PAIRS)
    group.permissions.clear()  # a group's permissions change
    assert not _requests_user(user).has_perm(roles.JUDGE_PAIRS)
    roles.ensure_groups()
    assert _requests_user(user).has_perm(roles.JUDGE_PAIRS)
    # Another worker's change sends no signal to this process: the next request sees it.
    through = model.groups.through
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {connection.ops.quote_name(through._meta.db_table)} WHERE "
            f"{connection.ops.quote_name(through._meta.get_field('user').column)} = %s",
            [user.pk],
        )
    assert not _requests_user(user).has_perm(roles.JUDGE_PAIRS)


# -- every direction of every membership that grants permissions ---------------------------

RELATIONS = ("user.groups", "user.user_permissions", "group.permissions")
ACTIONS = ("add", "remove", "clear")


def _requests_user(user):
    """The user as a request reads it (the session's backend, with the remembered set)."""
    return permission_cache.CachedPermissionBackend().get_user(user.pk)


def _seen(user) -> frozenset[str]:
    """The user's permissions as a request sees them (read with the user)."""
    return frozenset(_requests_user(user).get_all_permissions())


def _truth(user) -> frozenset[str]:
    """The user's permissions read from the database by Django's own backend (no cache)."""
    return frozenset(ModelBackend().get_all_permissions(get_user_model().objects.get(pk=user.pk)))


@pytest.fixture
def members(db):
    """Two users the change is about (``a``, ``a2``: members of ``group``), one it is not
    (``b``, with a permission of their own group), and the permission that moves."""
    model = get_user_model()
    granted = Permission.objects.get(
        content_type__app_label="annotation", codename=roles.JUDGE_PAIRS.partition(".")[2]
    )
    own = Permission.objects.get(
        content_type__app_label="retrieval", codename=roles.VIEW_REPORTS.partition(".")[2]
    )
    group, other = Group.objects.create(name="g"), Group.objects.create(name="g2")
    other.permissions.add(own)
    users = {name: model.objects.create_user(name, password="pw-members-1") for name in "ab"}
    users["a2"] = model.objects.create_user("a2", password="pw-members-1")
    users["b"].groups.add(other)
    group.user_set.add(users["a"], users["a2"])
    return {"permission": granted, "group": group, **users}


def _prepare(m: dict, relation: str, action: str) -> None:
    """Before an add, ``a`` lacks the permission; before a remove or clear it holds it (and
    ``a`` is the group's only member where the group's members change)."""
    if relation == "user.groups":
        m["group"].permissions.add(m["permission"])
        m["a2"].groups.remove(m["group"])
        if action == "add":
            m["a"].groups.remove(m["group"])
    elif action != "add" and relation == "user.user_permissions":
        m["a"].user_permissions.add(m["permission"])
    elif action != "add":
        m["group"].permissions.add(m["permission"])


def _change(m: dict, relation: str, side: str, action: str) -> None:
    """``action`` on ``relation`` from the user's or group's side (forward) or from the far
    side (reverse: the group's users, the permission's users or groups)."""
    user, group, permission = m["a"], m["group"], m["permission"]
    if relation == "user.groups":
        manager, item = (user.groups, group) if side == "forward" else (group.user_set, user)
    elif relation == "user.user_permissions":
        manager, item = (
            (user.user_permissions, permission)
            if side == "forward"
            else (permission.user_set, user)
        )
    else:
        manager, item = (
            (group.permissions, permission) if side == "forward" else (permission.group_set, group)
        )
    if action == "clear":
        manager.clear()
    else:
        getattr(manager, action)(item)


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("side", ("forward", "reverse"))
@pytest.mark.parametrize("relation", RELATIONS)
def test_a_membership_change_reaches_the_right_users(members, relation, side, action):
    """Whichever side changes a membership, the users it concerns see the change at once,
    and everyone else keeps their (correct) permissions."""
    m = members
    _prepare(m, relation, action)
    people = ["a", "a2", "b"]
    before = {name: _seen(m[name]) for name in people}
    assert before == {name: _truth(m[name]) for name in people}
    _change(m, relation, side, action)
    after = {name: _seen(m[name]) for name in people}
    assert after == {name: _truth(m[name]) for name in people}
    assert after["a"] != before["a"], "the change concerns a"
    if relation == "group.permissions":
        assert after["a2"] != before["a2"], "a2 is a member of the group too"
    else:
        assert after["a2"] == before["a2"]
    assert after["b"] == before["b"] and after["b"]


def test_a_permission_deleted_or_renamed_is_seen_at_once(members):
    m = members
    m["group"].permissions.add(m["permission"])
    assert roles.JUDGE_PAIRS in _seen(m["a"])
    renamed = m["permission"]
    renamed.codename = "judge_pairs_renamed"
    renamed.save()
    assert _seen(m["a"]) == _truth(m["a"]) and roles.JUDGE_PAIRS not in _seen(m["a"])
    renamed.delete()
    assert _seen(m["a"]) == _truth(m["a"]) == frozenset()
    assert _seen(m["b"]) == _truth(m["b"]) == {roles.VIEW_REPORTS}


def test_the_users_statement_is_registered_when_django_starts(tmp_path):
    """Registered by an app's ready(), not when the backend is first imported, so start-up
    fills it with the others (a renamed field stops the start)."""
    script = "from config import raw_sql\nprint('user' in raw_sql.REGISTRY)"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))}
    env["FIREPOOL_VAR_DIR"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.stdout.split()[-1:] == ["True"], result.stdout + result.stderr


@pytest.mark.parametrize("role", [roles.RESEARCHER, roles.ANNOTATOR])
def test_a_role_taken_away_stops_fetching_media_at_once(client, db, role, _isolated_media):
    """A media file's remembered yes belongs to the permissions that earned it: a researcher
    (who may fetch any known file) or an annotator (a video of a campaign they judge) whose
    role is taken away is refused on the next request, not once the grant runs out."""
    campaign = make_campaign(n_queries=2, depth=1, seed=2)
    video = campaign.pairs.select_related("video").first().video
    (_isolated_media / "clip.webm").write_bytes(b"\x1aE\xdf\xa3 a video")
    video.media.name = "clip.webm"
    video.save(update_fields=["media"])
    user = get_user_model().objects.create_user("dana", password="pw-dana-12345")
    group = roles.ensure_groups()[role]
    user.groups.add(group)
    client.force_login(user)
    assert client.get("/media/clip.webm").status_code == 200
    user.groups.remove(group)
    assert client.get("/media/clip.webm").status_code == 404
    user.groups.add(group)
    assert client.get("/media/clip.webm").status_code == 200
