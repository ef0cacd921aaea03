"""Video files at import: every file probed, broken ones refused or left out, segments checked,
and a pending browser copy or segment clip for each video that needs one."""

import json
from pathlib import Path

import pytest
from django.core.management.base import CommandError

from retrieval.media.probe import CopySettings, ProbeError, needs_copy, probe
from retrieval.models import Caption, Dataset, DerivedMedia, Video
from tests.media_support import SPECS, import_records, make_clip, truncate


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps({"split": "test", **record}) + "\n" for record in records))
    return path


def run_import(captions: Path, videos: Path, name: str = "clips", **options) -> dict:
    records = [json.loads(line) for line in captions.read_text().splitlines()]
    return import_records(records, videos, name, captions, **options)


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> Path:
    """One small file of each kind a benchmark ships, plus broken ones."""
    folder = tmp_path_factory.mktemp("clips")
    for kind, spec in SPECS.items():
        make_clip(folder / f"{kind}{spec.suffix}", kind)
    make_clip(folder / "big.mp4", "mp4_moov_end", seconds=0.5, fps=50, size=(1920, 1080))
    truncate(make_clip(folder / "cut.mp4", "mp4", seconds=2))
    truncate(make_clip(folder / "cut_moov_end.mp4", "mp4_moov_end"))
    (folder / "junk.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64)
    return folder


def test_probe_reads_every_kind(clips):
    settings = CopySettings()
    facts = {
        path.name: probe(path)
        for path in clips.iterdir()
        if path.stem in SPECS or path.stem == "big"
    }
    avi = facts["avi.avi"]
    assert (avi.container, avi.video_codec, avi.audio_codec) == ("avi", "mpeg4", "mp3")
    assert (avi.width, avi.height, avi.fps) == (160, 120, 25.0)
    assert avi.duration == pytest.approx(1.0, abs=0.1)
    mp4 = facts["mp4.mp4"]
    assert (mp4.container, mp4.video_codec, mp4.audio_codec, mp4.moov_first) == (
        "mp4", "h264", "aac", True
    )  # fmt: skip
    assert mp4.audio_channels == 2 and mp4.audio_rate == 48000
    assert needs_copy(mp4, settings) == ()
    assert needs_copy(facts["webm.webm"], settings) == ()
    big = facts["big.mp4"]
    assert (big.width, big.height, big.fps, big.moov_first) == (1920, 1080, 50.0, False)
    assert len(needs_copy(big, settings)) == 3  # moov at the end, 1080p, 50 fps
    assert facts["prores.mov"].container == "mov"
    assert facts["hevc.mp4"].video_codec == "hevc"
    assert facts["mjpeg.mov"].video_codec == "mjpeg"
    assert facts["mkv.mkv"].container == "matroska"
    for name in ("avi.avi", "mkv.mkv", "hevc.mp4", "prores.mov", "mjpeg.mov", "mp4_moov_end.mp4"):
        assert needs_copy(facts[name], settings), name
    assert len({fact.fingerprint for fact in facts.values()}) == len(facts)


@pytest.mark.parametrize(
    "name, reason",
    [
        ("cut.mp4", "truncated"),
        ("cut_moov_end.mp4", "does not open"),
        ("junk.mp4", "does not open"),
    ],
)
def test_probe_refuses_broken_files(clips, name, reason):
    with pytest.raises(ProbeError, match=reason):
        probe(clips / name)


@pytest.mark.django_db
def test_import_probes_files_and_plans_browser_files(clips, tmp_path):
    captions = write_jsonl(
        tmp_path / "captions.jsonl",
        [
            {"video_id": "avi", "caption_id": "a", "caption": "red then blue"},
            {"video_id": "mp4", "caption_id": "b", "caption": "red then blue"},
            {"video_id": "webm", "caption_id": "c", "caption": "red then blue"},
            {"video_id": "hevc", "caption_id": "d", "caption": "red then blue"},
            {"video_id": "s1", "caption_id": "e", "caption": "red", "video_path": "mp4.mp4",
             "start": 0.1, "end": 0.4},
            {"video_id": "s2", "caption_id": "f", "caption": "blue", "video_path": "mp4.mp4",
             "start": 0.6, "end": 0.9},
        ],
    )  # fmt: skip
    summary = run_import(captions, clips)
    assert summary["videos_created"] == 6 and summary["derived_pending"] == 4
    videos = {video.key: video for video in Video.objects.all()}
    assert videos["avi"].probe["video_codec"] == "mpeg4"
    assert videos["mp4"].media_state == Video.MediaState.AS_IS
    assert videos["mp4"].source_url.endswith("mp4.mp4")
    assert videos["webm"].media_state == Video.MediaState.AS_IS
    for key in ("avi", "hevc", "s1", "s2"):
        assert videos[key].media_state == Video.MediaState.PENDING, key
        assert videos[key].source_url == ""  # not served until its file is made
    kinds = dict(DerivedMedia.objects.values_list("source", "kind"))
    assert kinds[videos["avi"].media.name] == "copy"
    clips_ = DerivedMedia.objects.filter(kind="clip").order_by("start")
    assert [(c.start, c.end) for c in clips_] == [(0.0, 0.9), (0.1, 1.0)]  # 0.5 s margins
    # The same import again into another dataset shares the derived rows.
    run_import(captions, clips, name="again")
    assert DerivedMedia.objects.count() == 4


@pytest.mark.django_db
@pytest.mark.parametrize("broken", ["cut.mp4", "junk.mp4"])
def test_a_broken_file_stops_the_import_naming_it(clips, tmp_path, broken):
    captions = write_jsonl(
        tmp_path / "captions.jsonl",
        [
            {"video_id": "mp4", "caption_id": "a", "caption": "fine"},
            {"video_id": "bad", "caption_id": "b", "caption": "broken", "video_path": broken},
        ],
    )
    with pytest.raises(CommandError) as caught:
        run_import(captions, clips)
    message = str(caught.value)
    assert "line 2" in message and "video_path" in message and broken in message
    assert "does not decode" in message
    assert (Dataset.objects.count(), Video.objects.count(), DerivedMedia.objects.count()) == (
        0,
        0,
        0,
    )


@pytest.mark.django_db
def test_skip_broken_imports_the_rest_and_lists_the_broken(clips, tmp_path):
    captions = write_jsonl(
        tmp_path / "captions.jsonl",
        [
            {"video_id": "mp4", "caption_id": "a", "caption": "fine"},
            {"video_id": "bad", "caption_id": "b", "caption": "broken", "video_path": "cut.mp4"},
            {
                "video_id": "bad",
                "caption_id": "c",
                "caption": "broken too",
                "video_path": "cut.mp4",
            },
            {"video_id": "avi", "caption_id": "d", "caption": "fine"},
        ],
    )
    summary = run_import(captions, clips, skip_broken=True)
    assert summary["captions"] == 2 and summary["skipped_captions"] == 2
    assert [(item["file"], item["line"]) for item in summary["broken"]] == [
        (f"{summary['media_link']}/cut.mp4", 2)
    ]
    assert set(Video.objects.values_list("key", flat=True)) == {"mp4", "avi"}
    assert set(Caption.objects.values_list("key", flat=True)) == {"a", "d"}
    history = Dataset.objects.get().metadata["imports"][-1]
    assert (
        history["broken"][0]["reason"].startswith("its last")
        or "truncated" in history["broken"][0]["reason"]
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "span, field", [({"start": 1.5, "end": 1.8}, "start"), ({"start": 0.2, "end": 3.0}, "end")]
)
def test_a_segment_outside_its_file_names_line_and_field(clips, tmp_path, span, field):
    captions = write_jsonl(
        tmp_path / "captions.jsonl",
        [
            {"video_id": "mp4", "caption_id": "a", "caption": "fine"},
            {
                "video_id": "s",
                "caption_id": "b",
                "caption": "late",
                "video_path": "mp4.mp4",
                **span,
            },
        ],
    )
    with pytest.raises(CommandError, match=f"line 2, field '{field}'.*lies"):
        run_import(captions, clips)
    assert Video.objects.count() == 0


@pytest.mark.django_db
def test_the_upload_job_skips_broken_files_and_queues_the_copies(clips, tmp_path, settings):
    from django.test import TestCase

    from jobs import runner
    from jobs.models import Job
    from retrieval.datasets.uploads import input_name, new_input_folder

    settings.TASKS = {
        "default": {
            "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
            "QUEUES": ["default", "gpu", "media"],
        }
    }
    settings.FIREPOOL_JOB_INPUT_DIR = tmp_path / "uploads"
    upload = write_jsonl(
        new_input_folder() / "captions",
        [
            {"video_id": "avi", "caption_id": "a", "caption": "fine"},
            {"video_id": "bad", "caption_id": "b", "caption": "broken", "video_path": "junk.mp4"},
        ],
    )
    arguments = {
        "name": "uploaded", "format": "jsonl", "captions": input_name(upload),
        "videos": str(clips), "skip_broken": "1",
    }  # fmt: skip
    with TestCase.captureOnCommitCallbacks(execute=True):
        job = runner.submit("import_dataset", arguments)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert [item["line"] for item in job.result["broken"]] == [2]
    assert job.result["browser_files_to_make"] == 1
    media = Job.objects.get(kind="media")
    assert media.status == Job.Status.SUCCEEDED and media.result["made"] == 1
    assert Video.objects.get(key="avi").media_state == Video.MediaState.READY
