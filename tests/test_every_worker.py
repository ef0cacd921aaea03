"""With two real gunicorn workers and the default settings (the per-process cache), a logout
holds on every worker and the login and upload limits count every worker's attempts.

Requests go in parallel bursts, so both sync workers serve some of each burst (a sync worker
serves one request at a time). PostgreSQL only, like the other tests that start gunicorn.
"""

import http.client
import threading
from concurrent.futures import ThreadPoolExecutor
from http.cookies import SimpleCookie
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.authtoken.models import Token

from config import roles
from tests.factories import make_campaign, query_dataset
from tests.server_support import Server, free_port

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="gunicorn serves the test database on PostgreSQL (`make test` starts one)",
    ),
    pytest.mark.django_db(transaction=True),
]

PASSWORD = "pw-right-horse-battery"
CSRF = "c" * 32
BURST = 20
UPLOADS = 3
"""Run files a user may upload per hour, in the server these tests start."""


class Browser:
    """Cookies kept across plain HTTP requests to one server."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookies = {"csrftoken": CSRF}
        self.lock = threading.Lock()

    def request(self, method: str, path: str, body: dict | str | None = None, headers=None):
        """The status of one request (``body``: a form's fields, or the body itself)."""
        with self.lock:
            cookie = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
            sent = {"Cookie": cookie, "X-CSRFToken": self.cookies["csrftoken"]}
        if isinstance(body, dict):
            body = urlencode(body)
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        sent.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body, sent)
            response = conn.getresponse()
            response.read()
            with self.lock:
                for header in response.headers.get_all("Set-Cookie") or []:
                    for name, morsel in SimpleCookie(header).items():
                        self.cookies[name] = morsel.value
            return response.status
        finally:
            conn.close()

    def burst(self, method: str, path: str, body=None, headers=None) -> list[int]:
        """``BURST`` requests at once; their statuses."""
        with ThreadPoolExecutor(BURST) as pool:
            answers = [pool.submit(self.request, method, path, body, headers) for _ in range(BURST)]
            return [answer.result() for answer in answers]


@pytest.fixture
def server(tmp_path):
    env = {"FIREPOOL_RUN_UPLOAD_RATE": f"{UPLOADS}/hour"}
    server = Server(free_port(), tmp_path / "gunicorn.log", workers=2, env=env)
    server.start()
    try:
        server.wait_until_up()
        yield server
    finally:
        server.kill()


@pytest.fixture
def alice(db):
    user = get_user_model().objects.create_user("alice", password=PASSWORD)
    user.groups.add(roles.ensure_groups()[roles.ANNOTATOR])
    return user


def log_in(browser: Browser) -> None:
    status = browser.request("POST", "/login/", {"username": "alice", "password": PASSWORD})
    assert status == 302
    assert "sessionid" in browser.cookies


def test_a_logout_holds_on_every_worker(server, alice):
    campaign = make_campaign()
    browser = Browser(server.port)
    log_in(browser)
    old = dict(browser.cookies)
    # Both workers read the session (with cached sessions on the per-process cache, each
    # would keep its own copy now).
    assert set(browser.burst("GET", "/judge/")) == {200}
    assert browser.request("POST", "/logout/") == 302
    browser.cookies = old  # the cookie a thief copied before the logout
    assert set(browser.burst("GET", "/judge/")) == {302}  # to the login page
    assert set(browser.burst("POST", f"/api/campaigns/{campaign.pk}/next/")) == {403}


def test_parallel_wrong_passwords_get_exactly_the_limits_tries(server, alice):
    browser = Browser(server.port)
    wrong = {"username": "alice", "password": "wrong-password"}
    statuses = browser.burst("POST", "/login/", wrong)
    assert sorted(statuses) == [200] * 5 + [429] * (BURST - 5)  # the form again, or refused
    right = {"username": "alice", "password": PASSWORD}
    assert browser.request("POST", "/login/", right) == 429


def test_parallel_uploads_past_the_limit_are_refused(server, db):
    query_dataset("tiny")
    researcher = get_user_model().objects.create_user("res", password=PASSWORD)
    researcher.groups.add(roles.ensure_groups()[roles.RESEARCHER])
    token = Token.objects.create(user=researcher).key
    boundary = "firepool-boundary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nmine\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="run"; filename="r.txt"\r\n'
        f"Content-Type: text/plain\r\n\r\nnot a run\r\n--{boundary}--\r\n"
    )
    headers = {
        "Authorization": f"Token {token}",
        "Content-Type": f"multipart/form-data; boundary={boundary}",
    }
    statuses = Browser(server.port).burst("POST", "/api/datasets/tiny/runs/", body, headers)
    assert sorted(statuses) == [400] * UPLOADS + [429] * (BURST - UPLOADS)  # 400: not a run
