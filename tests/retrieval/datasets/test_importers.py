"""Caption-file parsers, the import service and the ``import_dataset`` command."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from retrieval.datasets.importing import import_dataset
from retrieval.formats.epic import parse_epic_csv
from retrieval.formats.generic import parse_csv, parse_jsonl
from retrieval.formats.msrvtt import parse_msrvtt_csv, parse_msrvtt_json
from retrieval.formats.records import (
    FormatError,
    parse_bool,
    parse_class_ids,
    parse_relative_path,
    parse_str_list,
    parse_timestamp,
)
from retrieval.models import Caption, Dataset, Video
from tests.media_support import playable_bytes

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "import"


def fixture(name: str) -> Path:
    return FIXTURES / name


def run_import(captions: Path, fmt: str = "jsonl", name: str = "demo", **options) -> dict:
    """Run the command with JSON output and return the parsed summary."""
    out = io.StringIO()
    call_command(
        "import_dataset",
        name=name,
        format=fmt,
        captions=str(captions),
        output="json",
        quiet=True,
        stdout=out,
        **options,
    )
    return json.loads(out.getvalue())


def counts() -> tuple[int, int, int]:
    return Dataset.objects.count(), Video.objects.count(), Caption.objects.count()


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(playable_bytes(90.0))
    return path


# --- shared field parsers ----------------------------------------------------------------


def test_format_error_reads_as_one_line():
    error = FormatError(
        Path("captions.jsonl"), 17, "caption_id", "duplicate key 'v3#2' (first seen on line 3)"
    )
    assert str(error) == (
        "captions.jsonl, line 17, field 'caption_id': duplicate key 'v3#2' (first seen on line 3)"
    )
    assert str(FormatError("x.csv", None, None, "empty file")) == "x.csv: empty file"
    located = FormatError("d.json", 4, "video_id", "unknown video", where="sentences[{}]")
    assert str(located) == "d.json, sentences[4], field 'video_id': unknown video"


@pytest.mark.parametrize(
    "value, expected",
    [([3, 10], [3, 10]), ("[3, 10]", [3, 10]), ("3 10", [3, 10]), ("7", [7]), ("", []), (None, [])],
)
def test_parse_class_ids(value, expected):
    assert parse_class_ids(value) == expected


@pytest.mark.parametrize("value", ["[3, x]", "3 ten", [1.5], {"a": 1}, "[1, 2"])
def test_parse_class_ids_rejects(value):
    with pytest.raises(ValueError):
        parse_class_ids(value)


@pytest.mark.parametrize("value", ["../x.mp4", "a/../../x.mp4", "/etc/passwd", "a\\..\\b"])
def test_parse_relative_path_rejects_escapes(value):
    with pytest.raises(ValueError):
        parse_relative_path(value)


def test_small_parsers():
    assert parse_relative_path("clips/./v1.mp4") == "clips/v1.mp4"
    assert parse_timestamp("00:01:02.10") == pytest.approx(62.1)
    assert parse_timestamp("01:00:00.5") == pytest.approx(3600.5)
    assert parse_bool("Yes") is True and parse_bool("0") is False and parse_bool("") is None
    assert parse_str_list("['tap', 'sponge']") == ["tap", "sponge"]
    with pytest.raises(ValueError):
        parse_timestamp("4 seconds")
    with pytest.raises(ValueError):
        parse_str_list("__import__('os')")


# --- parsers without the database ---------------------------------------------------------


def test_parse_jsonl():
    records = list(parse_jsonl(fixture("good.jsonl")))
    assert [r.caption_key for r in records] == ["v1#0", "v1#1", "v2#0", "v3#0", "v3#1", "v4#0"]
    assert [r.line for r in records] == [1, 2, 4, 5, 6, 7]  # the blank line 3 is skipped
    assert records[1].metadata == {"verb_classes": [3], "noun_classes": [10, 12]}
    assert records[2].duration == 12.5
    assert (records[3].start, records[3].end, records[3].is_query) == (1.5, 4.0, None)
    assert records[4].is_query is False
    assert records[5].split == "" and records[5].video_url == "https://example.org/v4.mp4"


def test_parse_csv():
    records = list(parse_csv(fixture("good.csv")))
    assert [r.caption_key for r in records] == ["v1#0", "v1#1", "v2#0", "v3#0", "v3#1", "v4#0"]
    assert [r.line for r in records] == [2, 3, 5, 7, 8, 9]  # a quoted caption spans 5-6
    assert records[1].text == "someone cuts vegetables, quickly"
    assert records[1].metadata == {"verb_classes": [3], "noun_classes": [10, 12]}
    assert records[2].text == "a dog runs\non the beach"
    assert records[0].video_path == "clips/v1.mp4"
    assert (records[3].start, records[3].end) == (1.5, 4.0)
    assert records[4].is_query is False and records[5].is_query is True


def test_parse_msrvtt_json():
    records = list(parse_msrvtt_json(fixture("msrvtt_data.json")))
    assert [r.caption_key for r in records] == ["0", "1", "2", "3", "4"]
    assert [r.split for r in records] == ["train", "train", "validate", "test", "test"]
    first = records[0]
    assert first.video_key == "video0" and first.text == "a car is shown"
    assert first.start is None and first.duration == pytest.approx(11.72)
    assert first.video_metadata == {
        "category": 9,
        "youtube_url": "https://www.youtube.com/watch?v=9lZi22qLlEo",
        "source_start": 137.72,
        "source_end": 149.44,
    }


def test_parse_msrvtt_csv():
    records = list(parse_msrvtt_csv(fixture("msrvtt_1ka_test.csv")))
    assert [(r.caption_key, r.video_key) for r in records] == [
        ("ret0", "video9770"),
        ("ret1", "video7606"),
        ("ret2", "video9334"),
    ]
    assert all(r.split == "test" and r.is_query for r in records)
    assert records[0].video_metadata == {"vid_key": "msr9770"}


def test_parse_epic_csv():
    records = list(parse_epic_csv(fixture("epic_retrieval.csv")))
    assert [r.video_key for r in records] == ["P01_11_0", "P01_11_1", "P02_03_7"]
    assert all(r.video_key == r.caption_key for r in records)
    second = records[1]
    assert (second.start, second.end) == (4.0, 6.5)
    assert second.media_key == "P01_11"
    assert second.metadata == {
        "verb_classes": [2],
        "noun_classes": [11, 38],
        "verb": "wash",
        "nouns": ["tap", "sponge"],
    }
    assert second.video_metadata == {
        "parent_video": "P01_11",
        "participant_id": "P01",
        "start_frame": 240,
        "stop_frame": 390,
    }


BAD_FILES = [
    # (format, file, position, field, words in the message)
    ("csv", "bad_missing_column.csv", "line 1", "caption", "missing required column"),
    ("jsonl", "bad_missing_field.jsonl", "line 2", "caption", "missing required field"),
    ("jsonl", "bad_duplicate_key.jsonl", "line 4", "caption_id", "first seen on line 2"),
    ("jsonl", "bad_invalid_json.jsonl", "line 2", None, "invalid JSON"),
    ("jsonl", "bad_utf8.jsonl", "line 2", None, "invalid UTF-8"),
    ("jsonl", "bad_end_before_start.jsonl", "line 2", "end", "not after start"),
    ("csv", "bad_start_not_number.csv", "line 3", "start", "not a number"),
    ("jsonl", "bad_wrong_type.jsonl", "line 1", "caption_id", "expected a string"),
    ("csv", "bad_empty_caption.csv", "line 3", "caption", "empty caption"),
    ("jsonl", "bad_conflict.jsonl", "line 2", "start", "line 1"),
    ("jsonl", "bad_path_traversal.jsonl", "line 2", "video_path", "escapes"),
    ("msrvtt-json", "bad_unknown_video.json", "sentences[2]", "video_id", "unknown video"),
    ("msrvtt-csv", "bad_msrvtt_missing_column.csv", "line 1", "sentence", "missing"),
    ("epic-csv", "bad_epic_timestamp.csv", "line 3", "start_timestamp", "HH:MM:SS"),
]

PARSERS = {
    "jsonl": parse_jsonl,
    "csv": parse_csv,
    "msrvtt-json": parse_msrvtt_json,
    "msrvtt-csv": parse_msrvtt_csv,
    "epic-csv": parse_epic_csv,
}


@pytest.mark.django_db
@pytest.mark.parametrize("fmt, name, position, field, words", BAD_FILES)
def test_bad_file_is_rejected_and_nothing_is_written(fmt, name, position, field, words):
    before = counts()
    with pytest.raises(CommandError) as raised:
        run_import(fixture(name), fmt)
    message = str(raised.value)
    assert message.startswith(str(fixture(name)))
    assert f", {position}" in message
    if field:
        assert f"field {field!r}" in message
    assert words in message
    assert "\n" not in message
    assert counts() == before


def test_parsers_raise_format_errors_for_bad_files():
    """Errors the parser itself can see are raised while streaming, before any import."""
    for fmt, name, position, field, _ in BAD_FILES:
        if name in {"bad_duplicate_key.jsonl", "bad_conflict.jsonl"}:
            continue  # found by the import, which sees all records
        with pytest.raises(FormatError) as raised:
            list(PARSERS[fmt](fixture(name)))
        assert raised.value.field == field, name
        assert position.endswith(f"{raised.value.line}" + ("]" if "[" in position else "")), name


def test_missing_file_is_a_format_error(tmp_path):
    with pytest.raises(FormatError, match="No such file"):
        list(parse_jsonl(tmp_path / "absent.jsonl"))


# --- importing ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_import_jsonl():
    summary = run_import(fixture("good.jsonl"))
    assert summary["dataset_created"] is True
    assert (summary["videos_created"], summary["captions"], summary["queries"]) == (4, 6, 1)
    assert summary["splits"] == {"": 1, "test": 2, "train": 3}
    dataset = Dataset.objects.get(name="demo")
    assert dataset.source_format == "jsonl"
    assert dataset.metadata["imports"][0]["captions"] == 6
    queries = set(Caption.objects.filter(is_query=True).values_list("key", flat=True))
    assert queries == {"v3#0"}  # test split by default, but v3#1 says is_query false
    caption = Caption.objects.get(key="v1#1")
    assert caption.video.key == "v1" and caption.text == "someone cuts vegetables"
    assert caption.metadata == {"verb_classes": [3], "noun_classes": [10, 12]}
    v3 = Video.objects.get(key="v3")
    assert (v3.start, v3.end, v3.split, v3.media.name) == (1.5, 4.0, "test", "")
    assert Video.objects.get(key="v2").duration == 12.5
    assert Video.objects.get(key="v4").url == "https://example.org/v4.mp4"


@pytest.mark.django_db
def test_split_option_fills_only_missing_splits():
    summary = run_import(fixture("good.jsonl"), split="test")
    assert summary["splits"] == {"test": 3, "train": 3}
    v4 = Caption.objects.get(key="v4#0")
    assert (v4.split, v4.is_query, v4.video.split) == ("test", True, "test")


@pytest.mark.django_db
def test_import_csv_with_videos_outside_media_root_links_them(tmp_path, settings):
    videos = tmp_path / "elsewhere"
    touch(videos / "clips" / "v1.mp4")
    touch(videos / "v2.webm")
    touch(videos / "v3.MP4")
    touch(videos / "v3.mov")  # same directory: mp4 is preferred
    touch(videos / "sub" / "v4.mkv")
    summary = run_import(fixture("good.csv"), "csv", name="My Set", videos=str(videos))
    assert summary["media_link"] == "datasets/my-set"
    link = Path(settings.MEDIA_ROOT) / "datasets" / "my-set"
    assert link.is_symlink() and link.resolve() == videos.resolve()
    media = dict(Video.objects.values_list("key", "media"))
    assert media == {
        "v1": "datasets/my-set/clips/v1.mp4",
        "v2": "datasets/my-set/v2.webm",
        "v3": "datasets/my-set/v3.MP4",
        "v4": "datasets/my-set/sub/v4.mkv",
    }
    video = Video.objects.get(key="v1")
    assert Path(video.media.path).is_file()
    assert Path(video.media.path).is_relative_to(Path(settings.MEDIA_ROOT))
    assert Caption.objects.get(key="v4#0").is_query is True


@pytest.mark.django_db
def test_videos_inside_media_root_need_no_link(settings):
    videos = Path(settings.MEDIA_ROOT) / "msrvtt"
    for key in ("video0", "video1", "video2"):
        touch(videos / f"{key}.mp4")
    summary = run_import(fixture("msrvtt_data.json"), "msrvtt-json", videos=str(videos))
    assert summary["media_link"] == ""
    assert not (Path(settings.MEDIA_ROOT) / "datasets").exists()
    assert Video.objects.get(key="video1").media.name == "msrvtt/video1.mp4"


@pytest.mark.django_db
def test_missing_video_file_is_an_unknown_video_and_writes_nothing(tmp_path, settings):
    videos = tmp_path / "vids"
    touch(videos / "clips" / "v1.mp4")
    touch(videos / "v2.mp4")
    touch(videos / "v3.mp4")
    with pytest.raises(CommandError) as raised:
        run_import(fixture("good.csv"), "csv", videos=str(videos))
    message = str(raised.value)
    assert "line 9, field 'video_id': unknown video 'v4'" in message
    assert counts() == (0, 0, 0)
    assert not (Path(settings.MEDIA_ROOT) / "datasets" / "demo").is_symlink()


@pytest.mark.django_db
def test_missing_video_path_names_the_column(tmp_path):
    videos = tmp_path / "vids"
    touch(videos / "v2.mp4")
    with pytest.raises(CommandError, match=r"line 2, field 'video_path': unknown video"):
        run_import(fixture("good.csv"), "csv", videos=str(videos))


@pytest.mark.django_db
def test_ambiguous_video_file_is_rejected(tmp_path):
    videos = tmp_path / "vids"
    touch(videos / "a" / "v1.mp4")
    touch(videos / "b" / "v1.mp4")
    with pytest.raises(CommandError, match="ambiguous video 'v1'"):
        run_import(fixture("good.jsonl"), videos=str(videos))


@pytest.mark.django_db
def test_existing_link_to_another_directory_is_refused(tmp_path, settings):
    other = tmp_path / "other"
    other.mkdir()
    link = Path(settings.MEDIA_ROOT) / "datasets" / "demo"
    link.parent.mkdir()
    link.symlink_to(other)
    videos = tmp_path / "vids"
    touch(videos / "v1.mp4")
    with pytest.raises(CommandError, match="already exists"):
        run_import(fixture("good.jsonl"), videos=str(videos))


@pytest.mark.django_db
def test_import_msrvtt_json():
    summary = run_import(fixture("msrvtt_data.json"), "msrvtt-json", name="MSR-VTT")
    assert (summary["videos_created"], summary["captions"], summary["queries"]) == (3, 5, 2)
    video = Video.objects.get(key="video2")
    assert video.split == "test" and video.metadata["category"] == 3
    assert video.start is None and video.duration == pytest.approx(10.07)
    assert set(video.captions.values_list("key", flat=True)) == {"3", "4"}
    assert Caption.objects.get(key="2").split == "validate"


@pytest.mark.django_db
def test_import_msrvtt_csv():
    summary = run_import(fixture("msrvtt_1ka_test.csv"), "msrvtt-csv")
    assert (summary["videos_created"], summary["captions"], summary["queries"]) == (3, 3, 3)
    caption = Caption.objects.get(key="ret1")
    assert (caption.video.key, caption.split, caption.is_query) == ("video7606", "test", True)
    assert caption.text == "a little girl does gymnastics"


@pytest.mark.django_db
def test_import_epic_with_parent_videos(tmp_path):
    videos = tmp_path / "EPIC-KITCHENS"
    touch(videos / "P01" / "videos" / "P01_11.MP4")
    touch(videos / "P02" / "videos" / "P02_03.MP4")
    (videos / "P01" / "rgb_frames" / "P01_11").mkdir(parents=True)
    summary = run_import(
        fixture("epic_retrieval.csv"), "epic-csv", videos=str(videos), split="test"
    )
    assert (summary["videos_created"], summary["captions"], summary["queries"]) == (3, 3, 3)
    clip = Video.objects.get(key="P01_11_1")
    assert clip.media.name == "datasets/demo/P01/videos/P01_11.MP4"
    assert Video.objects.get(key="P01_11_0").media.name == clip.media.name
    assert (clip.start, clip.end) == (4.0, 6.5)
    assert clip.metadata["parent_video"] == "P01_11"
    caption = Caption.objects.get(key="P02_03_7")
    assert caption.video.key == "P02_03_7" and caption.text == "open fridge"
    assert caption.metadata["verb_classes"] == [3] and caption.metadata["noun_classes"] == [12]


@pytest.mark.django_db
def test_epic_missing_parent_video_names_the_video_id_column(tmp_path):
    videos = tmp_path / "vids"
    touch(videos / "P01_11.mp4")
    with pytest.raises(CommandError, match=r"line 4, field 'video_id': unknown video 'P02_03'"):
        run_import(fixture("epic_retrieval.csv"), "epic-csv", videos=str(videos))
    assert counts() == (0, 0, 0)


@pytest.mark.django_db
def test_video_url_template():
    run_import(
        fixture("epic_retrieval.csv"),
        "epic-csv",
        video_url="https://cdn.example.org/{video_id}.MP4#t={start:.2f},{end:.2f}",
    )
    clip = Video.objects.get(key="P01_11_1")
    assert clip.url == "https://cdn.example.org/P01_11.MP4#t=4.00,6.50"
    assert clip.source_url == clip.url


@pytest.mark.django_db
def test_video_url_template_overrides_file_url_and_needs_known_fields():
    run_import(fixture("good.jsonl"), video_url="https://h/{key}.mp4")
    assert Video.objects.get(key="v4").url == "https://h/v4.mp4"
    with pytest.raises(CommandError, match="unknown placeholder"):
        run_import(fixture("good.jsonl"), name="other", video_url="https://h/{nope}.mp4")
    with pytest.raises(CommandError, match=r"line 1, field 'start': --video-url uses \{start\}"):
        run_import(fixture("good.jsonl"), name="other", video_url="https://h/{key}#t={start}")


@pytest.mark.django_db
def test_videos_and_video_url_are_exclusive(tmp_path):
    with pytest.raises(CommandError):
        run_import(fixture("good.jsonl"), videos=str(tmp_path), video_url="https://h/{key}")


@pytest.mark.django_db
def test_train_then_test_reuses_videos(tmp_path):
    train = tmp_path / "train.jsonl"
    test = tmp_path / "test.jsonl"
    train.write_text(
        '{"video_id": "a", "caption_id": "a0", "caption": "one", "split": "train", "start": 1}\n'
        '{"video_id": "b", "caption_id": "b0", "caption": "two", "split": "train"}\n'
    )
    test.write_text(
        '{"video_id": "a", "caption_id": "a1", "caption": "three", "split": "test"}\n'
        '{"video_id": "c", "caption_id": "c0", "caption": "four", "split": "test"}\n'
    )
    run_import(train)
    summary = run_import(test, "jsonl")
    assert summary["dataset_created"] is False
    assert (summary["videos_created"], summary["videos_reused"], summary["captions"]) == (1, 1, 2)
    assert counts() == (1, 3, 4)
    a = Video.objects.get(key="a")
    assert a.split == "train" and a.start == 1  # a reused video keeps its attributes
    assert set(a.captions.values_list("key", flat=True)) == {"a0", "a1"}
    assert len(Dataset.objects.get().metadata["imports"]) == 2


@pytest.mark.django_db
def test_duplicate_key_against_database():
    run_import(fixture("good.jsonl"))
    with pytest.raises(CommandError) as raised:
        run_import(fixture("good.jsonl"))
    assert "line 1, field 'caption_id': duplicate key 'v1#0' (already in dataset 'demo')" in str(
        raised.value
    )
    assert counts() == (1, 4, 6)


@pytest.mark.django_db
def test_conflict_with_stored_video(tmp_path):
    run_import(fixture("good.jsonl"))
    more = tmp_path / "more.jsonl"
    more.write_text(
        '{"video_id": "v3", "caption_id": "x", "caption": "c", "split": "test", '
        '"start": 2, "end": 4}\n'
    )
    with pytest.raises(CommandError, match=r"line 1, field 'start': video 'v3' has start 2"):
        run_import(more)
    assert counts() == (1, 4, 6)


@pytest.mark.django_db
def test_error_on_last_line_after_thousands_of_good_lines_writes_nothing(tmp_path):
    path = tmp_path / "big.jsonl"
    lines = [
        json.dumps({"video_id": f"v{i // 4}", "caption_id": f"c{i}", "caption": "x", "split": ""})
        for i in range(12_000)
    ]
    lines.append(json.dumps({"video_id": "v0", "caption_id": "c17", "caption": "x", "split": ""}))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CommandError, match="line 12001, field 'caption_id': duplicate key 'c17'"):
        run_import(path)
    assert counts() == (0, 0, 0)


@pytest.mark.django_db
def test_empty_file_is_rejected(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    with pytest.raises(CommandError, match="no captions found"):
        run_import(path)
    assert counts() == (0, 0, 0)


@pytest.mark.django_db
def test_table_output_and_progress():
    out = io.StringIO()
    call_command(
        "import_dataset",
        "--name=demo",
        "--format=jsonl",
        f"--captions={fixture('good.jsonl')}",
        stdout=out,
    )
    text = out.getvalue()
    assert "into new dataset 'demo'" in text and "captions" in text and "6" in text
    seen: list[int] = []
    import_dataset("again", "csv", fixture("good.csv"), progress=seen.append)
    assert sum(seen) == 6


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite lets one import write at a time (BEGIN IMMEDIATE): no race to test",
)
@pytest.mark.django_db(transaction=True)
def test_two_imports_creating_one_dataset_at_once_both_land(tmp_path):
    """Two imports of a new dataset's files at once (two admins, two job workers): the one
    whose insert of the dataset waits on the other's (PostgreSQL's unique index) adds to the
    dataset the other made, as if it had come second. Before, it failed on the name's
    unique constraint, an error no user could act on."""
    import threading

    from django.db import transaction

    second = tmp_path / "second.jsonl"
    second.write_text(
        json.dumps({"caption_id": "w1#0", "video_id": "w1", "caption": "a dog", "split": "test"})
        + "\n"
    )
    created, go, results = threading.Event(), threading.Event(), {}

    def first_import():
        try:
            with transaction.atomic():
                results["first"] = import_dataset("race", "jsonl", fixture("good.jsonl"))
                created.set()  # the dataset's row is written, not committed
                go.wait(10)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            results["first"] = exc
            created.set()
        finally:
            connection.close()

    def second_import():
        try:
            created.wait(10)
            results["second"] = import_dataset("race", "jsonl", second)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            results["second"] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=first_import), threading.Thread(target=second_import)]
    for thread in threads:
        thread.start()
    threads[1].join(1.0)  # the second waits on the first's uncommitted dataset
    go.set()
    for thread in threads:
        thread.join(30)
    assert not isinstance(results["first"], BaseException), results["first"]
    assert not isinstance(results["second"], BaseException), results["second"]
    assert results["first"].dataset_created and not results["second"].dataset_created
    dataset = Dataset.objects.get(name="race")
    assert set(dataset.captions.values_list("key", flat=True)) >= {"w1#0", "v1#1"}
    assert [entry["file"] for entry in dataset.metadata["imports"]] == [
        "good.jsonl",
        "second.jsonl",
    ]
