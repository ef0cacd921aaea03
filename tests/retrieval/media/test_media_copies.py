"""Browser copies: what a copy is (H.264/yuv420p + AAC, faststart, the source's picture), and
the ``media`` command and job that make each one once."""

import io
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import TestCase

from jobs import runner
from jobs.models import Job
from retrieval.media.probe import CopySettings, iso_layout, needs_copy, probe
from retrieval.media.service import media_table
from retrieval.media.transcode import make_copy, make_poster, output_size
from retrieval.models import DerivedMedia, Video
from tests.media_support import BLUE, RED, SPECS, import_records, make_clip, mean_colour

IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu", "media"],
    }
}


def test_output_size_keeps_shape_and_turns_upright():
    assert output_size(1920, 1080, 0, 720) == (1280, 720)
    assert output_size(1080, 1920, 0, 720) == (720, 1280)
    assert output_size(1920, 1080, 90, 720) == (720, 1280)
    assert output_size(320, 240, 0, 720) == (320, 240)
    assert all(side % 2 == 0 for side in output_size(321, 241, 0, 720))  # yuv420p


@pytest.mark.parametrize("kind", ["avi", "hevc", "prores", "mjpeg", "mkv", "big"])
def test_a_copy_plays_in_browsers_and_shows_the_source(tmp_path, kind):
    if kind == "big":
        source = make_clip(
            tmp_path / "big.mp4", "mp4_moov_end", seconds=0.5, fps=50, size=(1920, 1080)
        )
    else:
        source = make_clip(tmp_path / f"src{SPECS[kind].suffix}", kind)
    target = tmp_path / "copy.mp4"
    made = make_copy(source, target, CopySettings())
    copy = probe(target)
    assert (copy.container, copy.video_codec, copy.pix_fmt) == ("mp4", "h264", "yuv420p")
    assert copy.audio_codec == ("aac" if SPECS.get(kind, SPECS["mp4_moov_end"]).audio_codec else "")
    assert iso_layout(target) == (iso_layout(target)[0], True)  # moov before mdat: faststart
    assert needs_copy(copy, CopySettings()) == ()
    source_facts = probe(source)
    assert copy.duration == pytest.approx(source_facts.duration, abs=0.1)
    assert made.bytes == target.stat().st_size and made.source_seconds > 0
    if kind == "big":
        assert (copy.width, copy.height, copy.fps) == (1280, 720, 30.0)
    for at in (0.0, source_facts.duration * 0.8):
        assert np.abs(mean_colour(target, at) - mean_colour(source, at)).max() < 6, at
    assert np.abs(mean_colour(target, 0.0) - mean_colour(target, 0.8 * copy.duration)).max() > 50


def test_a_segment_clip_is_its_span(tmp_path):
    source = make_clip(tmp_path / "long.mp4", "mp4", seconds=4.0, first=RED, second=BLUE)
    target = tmp_path / "clip.mp4"
    make_copy(source, target, CopySettings(), start=2.5, end=3.5)
    clip = probe(target)
    assert clip.duration == pytest.approx(1.0, abs=0.1)
    assert clip.audio_codec == "aac"
    assert np.abs(mean_colour(target, 0.0) - mean_colour(source, 2.6)).max() < 6  # blue half
    poster = tmp_path / "poster.jpg"
    assert make_poster(source, poster, at=1.0) > 0 and poster.read_bytes()[:2] == b"\xff\xd8"


def import_clips(folder: Path, name: str = "media") -> None:
    records = [
        {"video_id": "avi", "caption_id": "a", "caption": "red then blue"},
        {"video_id": "mp4", "caption_id": "b", "caption": "red then blue"},
        {"video_id": "s1", "caption_id": "c", "caption": "red", "video_path": "mp4.mp4",
         "start": 0.1, "end": 0.4},
    ]  # fmt: skip
    import_records(records, folder, name, folder / "captions.jsonl")


@pytest.fixture
def folder(tmp_path) -> Path:
    make_clip(tmp_path / "avi.avi", "avi")
    make_clip(tmp_path / "mp4.mp4", "mp4")
    return tmp_path


@pytest.mark.django_db
def test_media_command_makes_each_file_once(folder):
    import_clips(folder)
    from retrieval.models import Dataset

    dataset = Dataset.objects.get(name="media")
    table = media_table(dataset)
    assert (table.as_is, table.pending, table.ready) == (1, 2, 0)
    waiting = DerivedMedia.objects.filter(status="pending")
    assert waiting.count() == 2  # the seconds of both files, each once
    assert table.pending_seconds == round(sum(f.source_seconds for f in waiting), 1) > 0
    check = io.StringIO()
    call_command("media", dataset="media", check=True, stdout=check)
    assert "waiting            2" in check.getvalue()
    assert not (Path(settings.MEDIA_ROOT) / "derived").exists()  # --check makes nothing
    out = io.StringIO()
    call_command("media", dataset="media", stdout=out)
    assert "[1/2] copy:" in out.getvalue() and "[2/2] clip:" in out.getvalue()
    assert "Made 2, reused 0, failed 0" in out.getvalue()
    videos = {video.key: video for video in Video.objects.all()}
    for key in ("avi", "s1"):
        name = videos[key].browser_media  # what a browser gets: the ready derived file
        assert name and name.startswith("derived/") and videos[key].source_url.endswith(name)
        assert videos[key].source_url == settings.MEDIA_URL + name
        assert probe(Path(settings.MEDIA_ROOT) / name).video_codec == "h264"
    assert videos["mp4"].source_url == videos["mp4"].media.url  # the original, as it is
    assert set(DerivedMedia.objects.values_list("status", flat=True)) == {"ready"}
    made, table = DerivedMedia.objects.all(), media_table(dataset)
    assert table.ready_seconds == round(sum(f.source_seconds for f in made), 1)
    assert table.ready_bytes == sum(f.bytes for f in made) and table.pending_seconds == 0
    stamps = {
        p: p.stat().st_mtime_ns for p in (Path(settings.MEDIA_ROOT) / "derived").rglob("*.mp4")
    }
    again = io.StringIO()
    call_command("media", dataset="media", stdout=again)
    assert "Made 0, reused 0, failed 0" in again.getvalue()
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    # Another dataset of the same files finds its copies made: ready at import.
    import_clips(folder, name="media-again")
    assert set(
        Video.objects.filter(dataset__name="media-again").values_list("media_state", flat=True)
    ) == {"as_is", "ready"}
    assert media_table(dataset).ready == 2


@pytest.mark.django_db
def test_a_file_already_made_is_reused_not_encoded(folder):
    import_clips(folder)
    call_command("media", dataset="media", stdout=io.StringIO())
    DerivedMedia.objects.update(status="pending")  # as if a worker stopped before recording
    out = io.StringIO()
    call_command("media", dataset="media", stdout=out)
    assert "Made 0, reused 2" in out.getvalue()


@pytest.mark.django_db
def test_the_import_queues_a_media_job(folder, settings):
    settings.TASKS = IMMEDIATE
    with TestCase.captureOnCommitCallbacks(execute=True):
        import_clips(folder)
    job = Job.objects.get(kind="media")
    assert job.status == Job.Status.SUCCEEDED and job.queue == "media"
    assert job.result["made"] == 2
    assert set(Video.objects.values_list("media_state", flat=True)) == {"as_is", "ready"}
    with TestCase.captureOnCommitCallbacks(execute=True):
        again = runner.submit("media", {"dataset": "media"})
    again.refresh_from_db()
    assert again.result["made"] == 0


@pytest.mark.django_db
def test_dataset_and_home_pages_show_the_media(folder, client):
    from django.contrib.auth import get_user_model

    import_clips(folder)
    admin = get_user_model().objects.create_superuser("boss", "b@example.org", "pw-boss-12345")
    client.force_login(admin)
    page = client.get("/datasets/media/").content.decode()
    assert 'id="media-table"' in page and 'id="media-waiting"' in page
    assert "2 videos wait for a browser file" in page
    assert "manage.py media --dataset media" in page  # no job is running
    Job.objects.create(kind="media", arguments={"dataset": "media"}, description="copies of media")
    home = client.get("/").content.decode()
    assert "copies of media" in home
    Job.objects.all().delete()
    call_command("media", dataset="media", stdout=io.StringIO())
    page = client.get("/datasets/media/").content.decode()
    assert 'id="media-waiting"' not in page and "Browser files made" in page


@pytest.mark.django_db
def test_a_source_changed_since_import_fails_with_its_reason(folder):
    import_clips(folder)
    make_clip(folder / "avi.avi", "avi", seconds=0.6)  # replaced after the import
    out = io.StringIO()
    call_command("media", dataset="media", stdout=out)
    assert "failed: " in out.getvalue() and "changed since it was imported" in out.getvalue()
    video = Video.objects.get(key="avi")
    assert video.media_state == Video.MediaState.FAILED and video.source_url == ""
    from retrieval.models import Dataset

    table = media_table(Dataset.objects.get(name="media"))
    assert (table.failed, table.ready) == (1, 1)
    assert "changed since it was imported" in table.failures[0][1]


@pytest.mark.django_db
def test_failed_files_are_tried_again_on_request(folder):
    import_clips(folder)
    original = (folder / "avi.avi").read_bytes()
    (folder / "avi.avi").write_bytes(original[:-10] + b"0123456789")  # changed: fails
    call_command("media", dataset="media", stdout=io.StringIO())
    assert Video.objects.get(key="avi").media_state == Video.MediaState.FAILED
    (folder / "avi.avi").write_bytes(original)
    out = io.StringIO()
    call_command("media", dataset="media", retry_failed=True, stdout=out)
    assert "1 failed file(s) to try again" in out.getvalue() and "Made 1" in out.getvalue()
    assert Video.objects.get(key="avi").media_state == Video.MediaState.READY


@pytest.mark.django_db
def test_an_import_queues_as_many_media_jobs_as_set(folder, settings):
    settings.TASKS = IMMEDIATE
    settings.FIREPOOL_MEDIA_JOBS = 3
    with TestCase.captureOnCommitCallbacks(execute=True):
        import_clips(folder)
    jobs = list(Job.objects.filter(kind="media").order_by("pk"))
    assert len(jobs) == 2  # one per waiting file at most
    assert sum(job.result["made"] for job in jobs) == 2


@pytest.mark.django_db
def test_a_failed_file_shared_by_a_new_import_says_failed(folder):
    import_clips(folder)
    DerivedMedia.objects.filter(kind="copy").update(status="failed", error="boom")
    import_clips(folder, name="media-again")
    video = Video.objects.get(dataset__name="media-again", key="avi")
    assert video.media_state == Video.MediaState.FAILED  # not waiting for a file nobody makes


def test_a_rotated_source_is_copied_upright(tmp_path):
    source = make_clip(tmp_path / "phone.mov", "mjpeg", size=(160, 120), rotation=90)
    assert probe(source).rotation == 90
    make_copy(source, tmp_path / "copy.mp4", CopySettings())
    copy = probe(tmp_path / "copy.mp4")
    assert (copy.width, copy.height, copy.rotation) == (120, 160, 0)
    # Turned 90 degrees counter-clockwise, as ffmpeg's autorotation turns it (checked by hand
    # with ffmpeg 5.1): the white top-left corner of the stored picture ends bottom-left.
    import av

    with av.open(str(tmp_path / "copy.mp4")) as container:
        picture = next(container.decode(video=0)).to_ndarray(format="rgb24")
    corners = [picture[:40, :30], picture[:40, -30:], picture[-40:, :30], picture[-40:, -30:]]
    assert [round(float(corner.mean())) > 200 for corner in corners] == [False, False, True, False]


def test_a_poster_that_cannot_be_cleaned_up_is_said_and_skipped(tmp_path, monkeypatch):
    """A poster's failure, its temporary file's clean-up included, is said and the file goes
    on without one: it never stops the media job."""
    from retrieval.media import service

    def broken_poster(source, target, at):
        target.write_bytes(b"half a JPEG")
        raise service.TranscodeError("no frame")

    def stuck(self, missing_ok=False):
        raise PermissionError("read-only folder")

    said = []
    monkeypatch.setattr(service, "make_poster", broken_poster)
    monkeypatch.setattr(Path, "unlink", stuck)
    target = tmp_path / "poster.jpg"
    assert service._write_poster(tmp_path, "clip.mp4", target, 0.0, said.append) is False
    assert said == ["no poster for clip.mp4: read-only folder"] and not target.exists()
