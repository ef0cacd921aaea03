"""Video delivery: Range parsing and the media view (FIRE judging needs seekable video)."""

import pytest
from django.contrib.auth import get_user_model

from retrieval.byte_range import ByteRange, UnsatisfiableRange, parse_range

PAYLOAD = bytes(range(256)) * 40  # 10,240 bytes, every offset distinguishable


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("bytes=0-99", ByteRange(0, 99, 1000)),
        ("bytes=100-", ByteRange(100, 999, 1000)),
        ("bytes=-10", ByteRange(990, 999, 1000)),
        ("bytes=-5000", ByteRange(0, 999, 1000)),
        ("bytes=990-5000", ByteRange(990, 999, 1000)),
        ("bytes = 5-6", ByteRange(5, 6, 1000)),
        ("items=0-5", None),
        ("bytes=0-5,10-20", None),
        ("bytes=abc-", None),
        ("bytes=9-3", None),
        ("bytes", None),
    ],
)
def test_parse_range(header, expected):
    assert parse_range(header, 1000) == expected


@pytest.mark.parametrize("header", ["bytes=1000-", "bytes=5000-6000", "bytes=-0"])
def test_parse_range_unsatisfiable(header):
    with pytest.raises(UnsatisfiableRange):
        parse_range(header, 1000)


def test_content_range_and_length():
    byte_range = ByteRange(10, 19, 100)
    assert byte_range.length == 10
    assert byte_range.content_range == "bytes 10-19/100"


@pytest.fixture
def clip(_isolated_media):
    path = _isolated_media / "videos" / "clip.webm"
    path.parent.mkdir()
    path.write_bytes(PAYLOAD)
    return path


@pytest.fixture
def logged_in(client, db):
    user = get_user_model().objects.create_user("viewer", password="pw-viewer-123")
    client.force_login(user)
    return client


def _body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_full_file_advertises_ranges(logged_in, clip):
    response = logged_in.get("/media/videos/clip.webm")
    assert response.status_code == 200
    assert response["Accept-Ranges"] == "bytes"
    assert response["Content-Type"] == "video/webm"
    assert response["Content-Length"] == str(len(PAYLOAD))
    assert _body(response) == PAYLOAD


@pytest.mark.parametrize(
    ("header", "first", "last"),
    [
        ("bytes=0-1", 0, 1),
        ("bytes=1000-2047", 1000, 2047),
        ("bytes=10000-", 10000, 10239),
        ("bytes=-7", 10233, 10239),
    ],
)
def test_range_returns_exact_bytes(logged_in, clip, header, first, last):
    response = logged_in.get("/media/videos/clip.webm", HTTP_RANGE=header)
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes {first}-{last}/{len(PAYLOAD)}"
    assert response["Content-Length"] == str(last - first + 1)
    assert _body(response) == PAYLOAD[first : last + 1]


def test_unsatisfiable_range_is_416(logged_in, clip):
    response = logged_in.get("/media/videos/clip.webm", HTTP_RANGE="bytes=999999-")
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{len(PAYLOAD)}"


def test_head_range_has_headers_without_body(logged_in, clip):
    response = logged_in.head("/media/videos/clip.webm", HTTP_RANGE="bytes=0-9")
    assert response.status_code == 206
    assert response["Content-Length"] == "10"
    assert _body(response) == b""


def test_post_not_allowed(logged_in, clip):
    assert logged_in.post("/media/videos/clip.webm").status_code == 405


def test_anonymous_redirected_to_login(client, clip, db):
    response = client.get("/media/videos/clip.webm")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_missing_file_is_404(logged_in, clip):
    assert logged_in.get("/media/videos/nope.webm").status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/media/../config/settings.py",
        "/media/%2e%2e/config/settings.py",
        "/media/videos/../../secret.txt",
        "/media//etc/passwd",
    ],
)
def test_nothing_outside_media_root(logged_in, clip, path, _isolated_media):
    (_isolated_media.parent / "secret.txt").write_text("secret")
    response = logged_in.get(path)
    assert response.status_code == 404
