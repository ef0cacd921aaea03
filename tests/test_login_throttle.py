"""Failed logins are throttled per username and client address, and per address."""

import threading
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core import checks
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory
from django.utils import timezone

from config import login_throttle
from config.cache_url import cache_from_url, session_engine
from config.models import AttemptCount

PASSWORD = "pw-right-horse-battery"


@pytest.fixture(autouse=True)
def _fresh_counters(settings):
    """Every test starts with empty counters and the default limits (5 and 50 in 300 s)."""
    settings.FIREPOOL_LOGIN_FAILURES_PER_USER = 5
    settings.FIREPOOL_LOGIN_FAILURES_PER_IP = 50
    settings.FIREPOOL_LOGIN_WINDOW_SECONDS = 300
    settings.FIREPOOL_TRUSTED_PROXIES = 0
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("alice", password=PASSWORD)


def login(client, username: str, password: str, ip: str = "10.0.0.1", url: str = "/login/"):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=ip)


def fail(client, times: int, username: str = "alice", ip: str = "10.0.0.1") -> None:
    for _ in range(times):
        response = login(client, username, "wrong-password", ip)
        assert response.status_code == 200  # the form again, with its error
        assert b"didn&#x27;t match" in response.content or b"didn't match" in response.content


def test_sixth_attempt_is_refused_without_checking_the_password(client, user):
    fail(client, 5)
    with mock.patch.object(ModelBackend, "authenticate", autospec=True) as authenticate:
        response = login(client, "alice", PASSWORD)
    authenticate.assert_not_called()
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 300
    assert b"Too many login attempts" in response.content
    assert b"Traceback" not in response.content
    assert "_auth_user_id" not in client.session


def test_a_successful_login_resets_the_usernames_count(client, user):
    fail(client, 4)
    assert login(client, "alice", PASSWORD).status_code == 302
    client.logout()
    fail(client, 5)  # five more failures are allowed again
    assert login(client, "alice", PASSWORD).status_code == 429


def test_username_variants_share_a_counter(client, user):
    fail(client, 2, "alice")
    fail(client, 3, " ALICE ")
    assert login(client, "alice", PASSWORD).status_code == 429


def test_other_addresses_and_usernames_are_not_held_up(client, user):
    fail(client, 5)
    assert login(client, "alice", PASSWORD, ip="10.0.0.2").status_code == 302
    client.logout()
    get_user_model().objects.create_user("bob", password=PASSWORD)
    assert login(client, "bob", PASSWORD).status_code == 302


def test_per_address_cap_across_usernames(client, user, settings):
    settings.FIREPOOL_LOGIN_FAILURES_PER_IP = 8
    for name in ("u1", "u2", "u3", "u4"):
        fail(client, 2, name)
    # Alice has not failed at all, but this address has used its eight attempts.
    assert login(client, "alice", PASSWORD).status_code == 429
    assert login(client, "alice", PASSWORD, ip="10.0.0.9").status_code == 302


def test_successful_logins_do_not_use_up_the_address(client, user, settings):
    settings.FIREPOOL_LOGIN_FAILURES_PER_IP = 3
    for _ in range(5):
        assert login(client, "alice", PASSWORD).status_code == 302
        client.logout()
    fail(client, 3, "mallory")
    assert login(client, "alice", PASSWORD).status_code == 429


def test_the_window_ends(client, user, monkeypatch):
    fail(client, 5)
    assert login(client, "alice", PASSWORD).status_code == 429
    later = timezone.now() + timedelta(seconds=301)
    monkeypatch.setattr(timezone, "now", lambda: later)
    assert login(client, "alice", PASSWORD).status_code == 302


def test_admin_login_is_throttled_too(client, user):
    for _ in range(5):
        assert login(client, "alice", "wrong", url="/admin/login/").status_code == 200
    response = login(client, "alice", PASSWORD, url="/admin/login/")
    assert response.status_code == 429


@pytest.mark.django_db(transaction=True)
def test_parallel_attempts_cannot_slip_past_the_limit():
    """Attempts are counted before the password is checked, atomically: a burst gets 5 tries
    (two gunicorn workers on PostgreSQL: tests/test_every_worker.py)."""
    request = RequestFactory().post("/login/", REMOTE_ADDR="10.0.0.7")
    allowed = []
    barrier = threading.Barrier(20)

    def attempt() -> None:
        barrier.wait()
        allowed.append(login_throttle.check_attempt(request, "alice") == 0)

    threads = [threading.Thread(target=attempt) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(allowed) == 5


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [
        (0, "203.0.113.9", "10.0.0.1"),  # no trusted proxy: the header is ignored
        (1, "203.0.113.9", "203.0.113.9"),
        (1, "198.51.100.1, 203.0.113.9", "203.0.113.9"),  # the left one could be forged
        (2, "198.51.100.1, 203.0.113.9", "198.51.100.1"),
        (2, "203.0.113.9", "10.0.0.1"),  # fewer hops than proxies: fall back
    ],
)
def test_client_address_behind_trusted_proxies(settings, proxies, forwarded, expected):
    settings.FIREPOOL_TRUSTED_PROXIES = proxies
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
    assert login_throttle.client_ip(request) == expected


def test_the_counts_are_in_the_database_not_the_cache(client, user):
    """Whatever the cache (each worker's own, by default), every worker adds to one count."""
    fail(client, 3)
    cache.clear()  # another worker's cache knows nothing of these
    fail(client, 2)
    assert login(client, "alice", PASSWORD).status_code == 429
    assert AttemptCount.objects.count() == 2  # this username and address, this address


@pytest.mark.parametrize(
    ("url", "backend", "location"),
    [
        ("locmem://", "locmem.LocMemCache", "firepool"),
        ("db://", "db.DatabaseCache", "firepool_cache"),
        ("db://my_cache", "db.DatabaseCache", "my_cache"),
        ("redis://cache:6379/0", "redis.RedisCache", "redis://cache:6379/0"),
        ("file:///var/cache/firepool", "filebased.FileBasedCache", "/var/cache/firepool"),
    ],
)
def test_cache_url(url, backend, location):
    config = cache_from_url(url)
    assert config["BACKEND"] == f"django.core.cache.backends.{backend}"
    assert config["LOCATION"] == location


@pytest.mark.parametrize("url", ["memcache://x", "file://relative/path", "nonsense"])
def test_bad_cache_url(url):
    with pytest.raises(ImproperlyConfigured):
        cache_from_url(url)


@pytest.mark.parametrize(
    ("url", "engine"),
    [
        ("locmem://", "db"),  # each worker's own: a logout would reach one worker only
        ("db://", "db"),  # a table read instead of a table
        ("redis://cache:6379/0", "cached_db"),
        ("file:///var/cache/firepool", "cached_db"),
    ],
)
def test_sessions_are_cached_only_in_a_shared_cache(url, engine):
    assert session_engine(cache_from_url(url)) == f"django.contrib.sessions.backends.{engine}"


@pytest.mark.parametrize(
    ("engine", "url", "refused"),
    [
        ("cached_db", "locmem://", True),
        ("cache", "locmem://", True),
        ("db", "locmem://", False),
        ("cached_db", "file:///tmp/firepool-cache", False),
    ],
)
def test_deploy_check_refuses_sessions_in_a_per_process_cache(settings, engine, url, refused):
    settings.SESSION_ENGINE = f"django.contrib.sessions.backends.{engine}"
    settings.CACHES = {"default": cache_from_url(url)}
    errors = checks.run_checks(include_deployment_checks=True, tags=[checks.Tags.security])
    assert ("firepool.E001" in {error.id for error in errors}) is refused
