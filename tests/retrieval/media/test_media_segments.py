"""Segments are what gets judged: a clip per segment, the span inside it, where it sits in its
recording, and features of exactly that span."""

import io
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from PIL import Image

from retrieval.encoders.features import decode_frames, span_times
from retrieval.media.probe import probe
from retrieval.media.service import segment_label
from retrieval.models import Dataset, Video
from tests.media_support import BLUE, RED, import_records, make_clip, mean_colour


def test_span_times_cover_the_segment():
    assert span_times(2.0, 4.0, 4).tolist() == [2.25, 2.75, 3.25, 3.75]


def test_a_span_decodes_only_its_frames(tmp_path):
    path = make_clip(tmp_path / "r.mp4", "mp4", seconds=2.0, first=RED, second=BLUE)
    red = decode_frames(path, n=4, size=32, span=(0.1, 0.8)).reshape(-1, 3).mean(0)
    blue = decode_frames(path, n=4, size=32, span=(1.2, 1.9)).reshape(-1, 3).mean(0)
    assert red[0] > red[2] + 80 and blue[2] > blue[0] + 80
    whole = decode_frames(path, n=4, size=32)
    assert whole.shape == (4, 32, 32, 3)


@pytest.fixture
def recording(db, tmp_path) -> Dataset:
    """A 4-second recording, red then blue, and two segments of it (EPIC-KITCHENS style)."""
    folder = tmp_path / "videos"
    make_clip(folder / "P01_01.mp4", "mp4", seconds=4.0, first=RED, second=BLUE)
    records = [
        {"video_id": "P01_01_0", "caption_id": "n0", "caption": "red", "video_path": "P01_01.mp4",
         "start": 0.5, "end": 1.5},
        {"video_id": "P01_01_1", "caption_id": "n1", "caption": "blue", "video_path": "P01_01.mp4",
         "start": 2.5, "end": 3.5},
    ]  # fmt: skip
    import_records(records, folder, "epic", tmp_path / "captions.jsonl")
    return Dataset.objects.get(name="epic")


def test_each_segment_gets_a_clip_of_its_span(recording):
    call_command("media", dataset="epic", stdout=io.StringIO())
    root = Path(settings.MEDIA_ROOT)
    for video, colour in zip(Video.objects.order_by("key"), (RED, BLUE), strict=True):
        assert video.media_state == Video.MediaState.READY
        clip = root / video.browser_media
        facts = probe(clip)
        assert facts.duration == pytest.approx(1.0 + 2 * 0.5, abs=0.1)  # span + margins
        assert facts.size < (root / video.media.name).stat().st_size
        assert video.browser_start == pytest.approx(video.start - 0.5)
        assert video.media_fragment == "#t=0.500,1.500"
        middle = mean_colour(clip, 1.0)
        assert np.abs(middle - (np.array(colour) * 15 / 16 + 255 / 16)).max() < 8
        assert segment_label(video).startswith(
            f"0:0{int(video.start)}-0:0{int(video.end)} of P01_01, 0:04"
        )
        # Its poster: a JPEG beside the clip, of the segment's first frame.
        assert video.poster_url == settings.MEDIA_URL + video.browser_media[:-4] + ".jpg"
        with Image.open(root / (video.browser_media[:-4] + ".jpg")) as poster:
            assert poster.format == "JPEG"
            still = np.asarray(poster.convert("RGB"), dtype=float)
        centre = still[still.shape[0] // 2 :, still.shape[1] // 2 :].reshape(-1, 3).mean(0)
        assert np.abs(centre - np.array(colour)).max() < 12, centre


def test_two_segments_of_one_recording_get_different_features(recording):
    call_command("features", dataset="epic", device="cpu", stdout=io.StringIO())
    root = Path(settings.MEDIA_ROOT)
    first, second = (np.load(root / v.features.name) for v in Video.objects.order_by("key"))
    assert first.shape == second.shape and not np.allclose(first, second)


def test_whoever_may_fetch_an_original_may_fetch_its_clip(recording, monkeypatch):
    from django.contrib.auth import get_user_model

    from config.roles import ANNOTATOR, RESEARCHER, ensure_groups
    from retrieval.media import access as media_access

    call_command("media", dataset="epic", stdout=io.StringIO())
    video = Video.objects.order_by("key").first()
    groups = ensure_groups()
    users = {}
    for role in (RESEARCHER, ANNOTATOR):
        users[role] = get_user_model().objects.create_user(f"u-{role}", password="pw-long-1x")
        users[role].groups.add(groups[role])
    assert media_access.may_fetch(users[RESEARCHER], video.browser_media)
    monkeypatch.setattr(media_access, "_grants", [])
    assert not media_access.may_fetch(users[ANNOTATOR], video.browser_media)
    monkeypatch.setattr(media_access, "_grants", [lambda user, name: name == video.media.name])
    assert media_access.may_fetch(users[ANNOTATOR], video.browser_media)
    assert not media_access.may_fetch(users[ANNOTATOR], "derived/00/unknown.mp4")
    # Annotators get the segment's clip, never the whole recording it was cut from; those
    # who may see every video still may.
    assert not media_access.may_fetch(users[ANNOTATOR], video.media.name)
    assert media_access.may_fetch(users[RESEARCHER], video.media.name)
    poster = video.browser_media[:-4] + ".jpg"  # a clip's poster goes with the clip
    monkeypatch.setattr(media_access, "_grants", [])
    assert not media_access.may_fetch(users[ANNOTATOR], poster)
    monkeypatch.setattr(media_access, "_grants", [lambda user, name: name == video.media.name])
    assert media_access.may_fetch(users[ANNOTATOR], poster)
