"""Debian's nginx with the shipped ``deploy/nginx/firepool.conf`` in front of the app.

The app (Django's threaded test server, ``FIREPOOL_MEDIA_SERVER = "nginx"``) only authorises; nginx sends
the bytes from its internal location. Checked from outside, over real HTTP: ranges and whole
files with the right bytes and types, 304 and If-Range from nginx's validators, caching
from the app's answer, names with spaces, Unicode and ``%``, a dataset's linked folder; and
that nobody without access (anonymous, an annotator outside the campaign) gets a byte, that
``/protected-media/`` cannot be asked for directly, and that traversals lead nowhere.
"""

import http.client
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import connections
from django.test import Client
from django.test.testcases import LiveServerThread

from config import roles
from retrieval.models import Dataset, Video
from tests.factories import make_campaign, make_user
from tests.nginx_support import Nginx, needs_nginx

pytestmark = needs_nginx

PAYLOAD = bytes(range(256)) * 4000  # 1 MB, every offset distinguishable
SECRET = b"never served: outside the media root"
CSS = b"body { color: black }"


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


@dataclass
class Front:
    """nginx in front of the live server, and the session cookies of the test's users."""

    port: int
    sessions: dict[str, str]

    def get(self, path: str, user: str | None = None, **headers: str) -> Answer:
        """GET ``path`` as sent (no normalising), as ``user``; headers by their HTTP name."""
        send = {name.replace("_", "-"): value for name, value in headers.items()}
        if user is not None:
            send["Cookie"] = f"sessionid={self.sessions[user]}"
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request("GET", path, headers=send)
            response = connection.getresponse()
            return Answer(response.status, response.headers, response.read())
        finally:
            connection.close()


def _session(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.fixture
def app_port(transactional_db):
    """The app on a free port, in a thread of this process (the test database included).

    Not pytest-django's ``live_server``: like Django's, that one serves MEDIA_URL from the
    media root itself, before any view, so it would check nothing here.
    """
    shared = {c.alias: c for c in connections.all() if c.vendor == "sqlite" and c.is_in_memory_db()}
    for connection in shared.values():
        connection.inc_thread_sharing()
    thread = LiveServerThread(
        "127.0.0.1", static_handler=lambda _media_files: WSGIHandler(), connections_override=shared
    )
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    yield thread.port
    thread.terminate()
    for connection in shared.values():
        connection.dec_thread_sharing()


@pytest.fixture
def front(app_port, settings, _isolated_media, tmp_path):
    settings.FIREPOOL_MEDIA_SERVER = "nginx"
    media = _isolated_media
    dataset = Dataset.objects.create(name="front")
    for name in ("videos/clip.mkv", "videos/clip.avi", "videos/clip.webm", "derived/ab12/clip.mp4"):
        (media / name).parent.mkdir(parents=True, exist_ok=True)
        (media / name).write_bytes(PAYLOAD)
        Video.objects.create(dataset=dataset, key=name, media=name)
    odd = "videos/a b \u00fc \u540d 100% #1?.webm"
    (media / odd).write_bytes(PAYLOAD)
    Video.objects.create(dataset=dataset, key="odd", media=odd)
    # A dataset imported in place: datasets/<name> links to its folder outside the media root.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "v1.webm").write_bytes(PAYLOAD)
    (media / "datasets").mkdir()
    (media / "datasets" / "corpus").symlink_to(corpus, target_is_directory=True)
    Video.objects.create(dataset=dataset, key="linked", media="datasets/corpus/v1.webm")
    (tmp_path / "secret.txt").write_bytes(SECRET)
    # An annotator's campaign, with one video file of its own.
    campaign = make_campaign()
    judged = campaign.pairs.first().video
    judged.media.name = "videos/judged.webm"
    judged.save(update_fields=["media"])
    (media / "videos" / "judged.webm").write_bytes(PAYLOAD)
    static = tmp_path / "static"
    (static / "css").mkdir(parents=True)
    (static / "css" / "app.css").write_bytes(CSS)
    (static / "css" / "app.0123456789ab.css").write_bytes(CSS)
    sessions = {
        role: _session(make_user(f"front-{role}", role))
        for role in (roles.RESEARCHER, roles.ANNOTATOR)
    }
    with Nginx(tmp_path / "nginx", f"127.0.0.1:{app_port}", static, media) as nginx:
        yield Front(nginx.port, sessions)


RESEARCHER, ANNOTATOR = roles.RESEARCHER, roles.ANNOTATOR


def test_a_range_gets_exactly_its_bytes_from_nginx(front):
    answer = front.get("/media/videos/clip.mkv", RESEARCHER, Range="bytes=1000-1999")
    assert answer.status == 206
    assert answer.body == PAYLOAD[1000:2000]
    assert answer.headers["Content-Range"] == f"bytes 1000-1999/{len(PAYLOAD)}"
    assert answer.headers["Content-Length"] == "1000"
    assert answer.headers["Content-Type"] == "video/x-matroska"
    assert answer.headers["Server"].startswith("nginx")
    assert "X-Accel-Redirect" not in answer.headers  # nginx consumed it
    suffix = front.get("/media/videos/clip.mkv", RESEARCHER, Range="bytes=-10")
    assert suffix.status == 206 and suffix.body == PAYLOAD[-10:]


@pytest.mark.parametrize(
    ("name", "media_type"),
    [
        ("videos/clip.mkv", "video/x-matroska"),  # not in nginx's own mime.types
        ("videos/clip.avi", "video/x-msvideo"),
        ("videos/clip.webm", "video/webm"),
    ],
)
def test_the_whole_file_with_the_app_s_type(front, name, media_type):
    answer = front.get(f"/media/{name}", RESEARCHER)
    assert answer.status == 200
    assert answer.body == PAYLOAD
    assert answer.headers["Content-Length"] == str(len(PAYLOAD))
    assert answer.headers["Content-Type"] == media_type
    assert answer.headers["Accept-Ranges"] == "bytes"
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["Cache-Control"] == "private, no-cache"


def test_validators_304_and_if_range(front):
    first = front.get("/media/videos/clip.webm", RESEARCHER)
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert etag and modified
    again = front.get("/media/videos/clip.webm", RESEARCHER, If_None_Match=etag)
    assert again.status == 304 and again.body == b""
    since = front.get("/media/videos/clip.webm", RESEARCHER, If_Modified_Since=modified)
    assert since.status == 304 and since.body == b""
    ranged = front.get("/media/videos/clip.webm", RESEARCHER, Range="bytes=0-99", If_Range=etag)
    assert ranged.status == 206 and ranged.body == PAYLOAD[:100]
    stale = front.get("/media/videos/clip.webm", RESEARCHER, Range="bytes=0-99", If_Range='"stale"')
    assert stale.status == 200 and stale.body == PAYLOAD


def test_fingerprinted_copies_are_kept_a_year(front):
    answer = front.get("/media/derived/ab12/clip.mp4", RESEARCHER, Range="bytes=0-9")
    assert answer.status == 206 and answer.body == PAYLOAD[:10]
    assert answer.headers["Cache-Control"] == "private, max-age=31536000, immutable"
    assert answer.headers["Content-Type"] == "video/mp4"


def test_names_with_spaces_unicode_and_percent(front):
    name = "videos/a b \u00fc \u540d 100% #1?.webm"
    answer = front.get("/media/" + quote(name), RESEARCHER, Range="bytes=5-9")
    assert answer.status == 206 and answer.body == PAYLOAD[5:10]


def test_a_dataset_s_linked_folder_is_served(front):
    answer = front.get("/media/datasets/corpus/v1.webm", RESEARCHER, Range="bytes=10-19")
    assert answer.status == 206 and answer.body == PAYLOAD[10:20]


def test_an_annotator_gets_the_videos_of_their_campaign_and_nothing_else(front):
    answer = front.get("/media/videos/judged.webm", ANNOTATOR, Range="bytes=0-99")
    assert answer.status == 206 and answer.body == PAYLOAD[:100]
    for name in ("videos/clip.webm", "datasets/corpus/v1.webm", "derived/ab12/clip.mp4"):
        refused = front.get(f"/media/{name}", ANNOTATOR, Range="bytes=0-99")
        assert refused.status == 404, name
        assert PAYLOAD[:64] not in refused.body and len(refused.body) < 10_000, name


def test_anonymous_users_are_sent_to_the_login_page(front):
    for name in ("videos/judged.webm", "videos/clip.webm"):
        answer = front.get(f"/media/{name}", Range="bytes=0-99")
        assert answer.status == 302, name
        assert answer.headers["Location"].startswith("/login/")
        assert PAYLOAD[:64] not in answer.body


def test_protected_media_cannot_be_asked_for_directly(front):
    for user in (None, ANNOTATOR, RESEARCHER):
        for path in (
            "/protected-media/videos/clip.webm",
            "/protected-media/videos/judged.webm",
            "/protected-media/datasets/corpus/v1.webm",
            "/protected-media/",
        ):
            answer = front.get(path, user)
            assert answer.status == 404, (user, path)
            assert PAYLOAD[:64] not in answer.body, (user, path)


TRAVERSALS = [
    "/media/../secret.txt",
    "/media/../../secret.txt",
    "/media/%2e%2e/secret.txt",
    "/media/%2e%2e/%2e%2e/secret.txt",
    "/media/videos/..%2f..%2f..%2fsecret.txt",
    "/media/datasets/corpus/../../../secret.txt",
    "/media/datasets/corpus/%2e%2e/%2e%2e/%2e%2e/secret.txt",
    "/media/../protected-media/videos/clip.webm",
    "/media/%2e%2e/protected-media/videos/clip.webm",
    "/protected-media/../secret.txt",
    "/protected-media/videos/../../secret.txt",
    "/protected-media/..%2fsecret.txt",
    "/static/../secret.txt",
    "/static/..%2fsecret.txt",
    "/static/css/../../secret.txt",
    "/static../secret.txt",
    "/media/" + "%2e%2e/" * 8 + "etc/passwd",
]


def test_traversals_lead_nowhere(front):
    for path in TRAVERSALS:
        answer = front.get(path, RESEARCHER)
        assert answer.status in (400, 404), (path, answer.status)
        assert SECRET not in answer.body and PAYLOAD[:64] not in answer.body, path
        assert b"root:" not in answer.body, path


def test_static_files_come_from_nginx(front):
    answer = front.get("/static/css/app.css")
    assert answer.status == 200 and answer.body == CSS
    assert answer.headers["Cache-Control"] == "max-age=3600"
    hashed = front.get("/static/css/app.0123456789ab.css")
    assert hashed.status == 200 and hashed.body == CSS
    assert hashed.headers["Cache-Control"] == "public, max-age=315360000, immutable"


def test_pages_are_proxied_to_the_app(front):
    answer = front.get("/login/")
    assert answer.status == 200 and b"<form" in answer.body
