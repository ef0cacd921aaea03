"""Posters for every file: a file that plays as it is gets a first-frame poster from the same
``media`` job that makes the browser copies and segment clips, shown while its video loads,
on the judging page's task, and as its thumbnail in the admin's video list."""

import io
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import TestCase
from PIL import Image

from jobs.models import Job
from retrieval.media.probe import fingerprint
from retrieval.media.service import as_is_poster_name
from retrieval.models import Video
from tests.media_support import BLUE, RED, import_records, make_clip

IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu", "media"],
    }
}


@pytest.fixture
def folder(tmp_path) -> Path:
    make_clip(tmp_path / "red.mp4", "mp4", first=RED, second=BLUE)
    make_clip(tmp_path / "blue.webm", "webm", first=BLUE, second=RED)
    make_clip(tmp_path / "msvd.avi", "avi")
    return tmp_path


def import_clips(folder: Path, name: str = "posters", avi: bool = True) -> None:
    records = [
        {"video_id": "red", "caption_id": "a", "caption": "red", "video_path": "red.mp4"},
        {"video_id": "red2", "caption_id": "b", "caption": "red again", "video_path": "red.mp4"},
        {"video_id": "blue", "caption_id": "c", "caption": "blue", "video_path": "blue.webm"},
    ]
    if avi:
        records.append({"video_id": "avi", "caption_id": "d", "caption": "avi",
                        "video_path": "msvd.avi"})  # fmt: skip
    import_records(records, folder, name, folder / "captions.jsonl")


def centre(path: Path) -> np.ndarray:
    """Mean RGB of a poster's lower-right quarter (away from the clip's white corner)."""
    with Image.open(path) as image:
        assert image.format == "JPEG"
        still = np.asarray(image.convert("RGB"), dtype=float)
    return still[still.shape[0] // 2 :, still.shape[1] // 2 :].reshape(-1, 3).mean(0)


@pytest.mark.django_db
def test_files_that_play_as_they_are_get_a_first_frame_poster(folder, monkeypatch):
    from retrieval.media import service as media

    monkeypatch.setattr(media, "POSTER_BATCH", 2)  # three videos: two batches
    import_clips(folder)
    videos = {video.key: video for video in Video.objects.all()}
    assert {videos[k].media_state for k in ("red", "red2", "blue")} == {"as_is"}
    assert all(video.poster_url == "" for video in videos.values())  # none made yet
    out = io.StringIO()
    call_command("media", dataset="posters", stdout=out)
    assert "Made 1, reused 0, failed 0" in out.getvalue()
    assert "2 posters of files that play as they are" in out.getvalue()  # red.mp4 once
    root = Path(settings.MEDIA_ROOT)
    videos = {video.key: video for video in Video.objects.all()}
    for key, colour in (("red", RED), ("red2", RED), ("blue", BLUE)):
        video = videos[key]
        name = as_is_poster_name(fingerprint(root / video.media.name))
        assert video.probe["poster"] == name
        assert video.poster_url == settings.MEDIA_URL + name
        assert np.abs(centre(root / name) - np.array(colour)).max() < 14, key
    assert videos["avi"].poster_url.endswith(videos["avi"].browser_media[:-4] + ".jpg")
    stamps = {p: p.stat().st_mtime_ns for p in (root / "derived").rglob("*.jpg")}
    assert len(stamps) == 3 and not list((root / "derived").rglob("*partial*"))
    again = io.StringIO()
    call_command("media", dataset="posters", stdout=again)
    assert "0 posters" in again.getvalue()
    # Another dataset of the same files finds the posters made: named, not written again.
    import_clips(folder, name="posters-again")
    call_command("media", dataset="posters-again", stdout=io.StringIO())
    assert {p: p.stat().st_mtime_ns for p in root.joinpath("derived").rglob("*.jpg")} == stamps
    assert Video.objects.get(dataset__name="posters-again", key="red").poster_url == (
        videos["red"].poster_url
    )


@pytest.mark.django_db
def test_an_import_of_playable_files_alone_queues_the_poster_job(folder, settings):
    settings.TASKS = IMMEDIATE
    with TestCase.captureOnCommitCallbacks(execute=True):
        import_clips(folder, avi=False)
    job = Job.objects.get(kind="media")
    assert job.status == Job.Status.SUCCEEDED
    assert (job.result["made"], job.result["posters"]) == (0, 2)
    assert all(video.poster_url for video in Video.objects.all())


@pytest.mark.django_db
def test_a_file_without_a_frame_gets_no_poster_and_is_not_tried_again(folder):
    import_clips(folder, avi=False)
    blue = Video.objects.get(key="blue")
    (Path(settings.MEDIA_ROOT) / blue.media.name).write_bytes(b"not a video any more")
    out = io.StringIO()
    call_command("media", dataset="posters", stdout=out)
    assert f"no poster for {blue.media.name}" in out.getvalue()
    blue.refresh_from_db()
    assert blue.probe["poster"] == "" and blue.poster_url == ""
    assert Video.objects.get(key="red").poster_url


@pytest.mark.django_db
def test_who_may_fetch_a_playable_file_may_fetch_its_poster(folder, monkeypatch, client):
    from django.contrib.auth import get_user_model

    from config.roles import ANNOTATOR, RESEARCHER, ensure_groups
    from retrieval.media import access as media_access

    import_clips(folder, avi=False)
    call_command("media", dataset="posters", stdout=io.StringIO())
    video = Video.objects.get(key="blue")
    poster = video.probe["poster"]
    groups = ensure_groups()
    users = {}
    for role in (RESEARCHER, ANNOTATOR):
        users[role] = get_user_model().objects.create_user(f"u-{role}", password="pw-long-1x")
        users[role].groups.add(groups[role])
    assert media_access.may_fetch(users[RESEARCHER], poster)
    assert not media_access.may_fetch(users[RESEARCHER], "derived/posters/00/unknown.jpg")
    monkeypatch.setattr(media_access, "_grants", [])
    assert not media_access.may_fetch(users[ANNOTATOR], poster)
    monkeypatch.setattr(media_access, "_grants", [lambda user, name: name == video.media.name])
    assert media_access.may_fetch(users[ANNOTATOR], poster)
    assert not media_access.may_fetch(users[ANNOTATOR], "derived/posters/00/unknown.jpg")
    client.force_login(users[RESEARCHER])
    got = client.get(video.poster_url)
    assert got.status_code == 200
    assert b"".join(got.streaming_content)[:2] == b"\xff\xd8"


@pytest.mark.django_db
def test_the_admin_video_list_shows_every_files_thumbnail(folder, client):
    from django.contrib.auth import get_user_model

    import_clips(folder)
    call_command("media", dataset="posters", stdout=io.StringIO())
    admin = get_user_model().objects.create_superuser("boss", "b@example.org", "pw-boss-12345")
    client.force_login(admin)
    page = client.get("/admin/retrieval/video/").content.decode()
    for video in Video.objects.all():
        assert f'<img src="{video.poster_url}"' in page, video.key
