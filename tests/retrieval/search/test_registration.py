"""Registering models from embeddings and TREC runs; predict; export/import round trip."""

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from retrieval.models import Caption, RetrievalModel, Run, Video
from retrieval.search.runs_service import load_run, run_rankings
from tests.factories import query_dataset

D = 8


@pytest.fixture
def dataset(db):
    dataset, videos, _ = query_dataset("tiny")
    Video.objects.create(dataset=dataset, key="t0", split="train")
    Caption.objects.create(dataset=dataset, key="x0", text="extra", video=videos[0], split="test")
    return dataset


def write_embeddings(directory, captions=None, videos=None, caption_ids=None, video_ids=None):
    rng = np.random.default_rng(0)
    directory.mkdir(exist_ok=True)
    caption_ids = caption_ids if caption_ids is not None else [f"c{i}" for i in range(6)]
    video_ids = video_ids if video_ids is not None else [f"v{i}" for i in range(6)]
    if captions is None:
        captions = rng.normal(size=(len(caption_ids), D)).astype(np.float32)
    if videos is None:
        videos = rng.normal(size=(len(video_ids), D)).astype(np.float32)
    np.save(directory / "captions.npy", captions)
    np.save(directory / "videos.npy", videos)
    (directory / "caption_ids.txt").write_text("".join(f"{k}\n" for k in caption_ids))
    (directory / "video_ids.txt").write_text("".join(f"{k}\n" for k in video_ids))
    return directory


def test_register_embeddings_and_predict_matches_brute_force(dataset, tmp_path):
    rng = np.random.default_rng(5)
    captions = rng.normal(size=(6, D)).astype(np.float32)
    videos = rng.normal(size=(6, D)).astype(np.float32)
    write_embeddings(tmp_path / "emb", captions, videos)
    call_command("register_model", dataset="tiny", name="up", embeddings=tmp_path / "emb")
    call_command("predict", dataset="tiny", model="up", k=4)
    run = Run.objects.get(name="up")
    lists = load_run(run)
    assert lists.item_ids.shape == (6, 4)
    # Brute force cosine similarity in numpy.
    cn = captions / np.linalg.norm(captions, axis=1, keepdims=True)
    vn = videos / np.linalg.norm(videos, axis=1, keepdims=True)
    expected = np.argsort(-(cn @ vn.T), axis=1)[:, :4]
    video_pk = {v.key: v.pk for v in Video.objects.filter(dataset=dataset)}
    caption_pk = {c.key: c.pk for c in Caption.objects.filter(dataset=dataset)}
    for i in range(6):
        row = list(lists.query_ids).index(caption_pk[f"c{i}"])
        assert list(lists.item_ids[row]) == [video_pk[f"v{j}"] for j in expected[i]]
    # The train video is not in the test collection.
    assert video_pk["t0"] not in lists.item_ids


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: np.save(d / "videos.npy", np.ones((6, D + 1), np.float32)),
            "dimension 9 differs",
        ),
        (
            lambda d: np.save(d / "captions.npy", np.full((6, D), np.nan, np.float32)),
            "captions.npy, row 1, field 'column 0': value is not finite",
        ),
        (
            lambda d: (d / "video_ids.txt").write_text("v0\nv1\nv2\nv3\nv4\nv99\n"),
            "video_ids.txt, line 6, field 'id': unknown video 'v99'",
        ),
        (
            lambda d: (d / "caption_ids.txt").write_text("c0\nc1\nc1\nc3\nc4\nc5\n"),
            "caption_ids.txt, line 3, field 'id': duplicate id 'c1'",
        ),
        (lambda d: (d / "caption_ids.txt").write_text(""), "caption_ids.txt: empty file"),
        (lambda d: (d / "caption_ids.txt").write_text("c0\nc1\n"), "2 ids for 6 embedding rows"),
        (lambda d: (d / "videos.npy").unlink(), "videos.npy: missing file"),
        (lambda d: (d / "videos.npy").write_bytes(b"garbage"), "not a readable .npy array"),
    ],
)
def test_bad_embeddings_register_nothing(dataset, tmp_path, mutate, message):
    directory = write_embeddings(tmp_path / "emb")
    mutate(directory)
    with pytest.raises(CommandError) as error:
        call_command("register_model", dataset="tiny", name="bad", embeddings=directory)
    assert message in str(error.value)
    assert not RetrievalModel.objects.exists()


RUN = """c0 Q0 v3 1 0.9 sys
c0 Q0 v1 2 0.5 sys
c0 Q0 v2 3 0.5 sys
c1 Q0 v0 1 2.0 sys
c1 Q0 v4 7 3.25 sys
"""


def test_run_file_ranked_by_score_with_trec_ties(dataset, tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(RUN)
    call_command("register_model", dataset="tiny", name="sys", run=path)
    rankings = run_rankings(Run.objects.get(name="sys"))
    # Ties at 0.5 go to the larger docno first (trec_eval); the rank column is ignored.
    assert rankings["c0"] == [("v3", 0.9), ("v2", 0.5), ("v1", 0.5)]
    assert rankings["c1"] == [("v4", 3.25), ("v0", 2.0)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("c0 Q0 v1 1 0.5\n", "line 1"),
        ("c0 Q0 v1 1 abc sys\n", "field 'score'"),
        ("c0 Q0 v1 1 nan sys\n", "field 'score'"),
        ("c0 Q0 v1 1 0.5 sys\nc0 Q0 v1 2 0.4 sys\n", "line 2"),
        ("c9 Q0 v1 1 0.5 sys\n", "unknown caption key 'c9'"),
        ("c0 Q0 v77 1 0.5 sys\n", "'v77' is not a known video"),
    ],
)
def test_bad_run_file_registers_nothing(dataset, tmp_path, text, message):
    path = tmp_path / "run.txt"
    path.write_text(text)
    with pytest.raises(CommandError) as error:
        call_command("register_model", dataset="tiny", name="sys", run=path)
    assert message in str(error.value)
    assert not RetrievalModel.objects.exists() and not Run.objects.exists()


def test_export_import_round_trip_is_identical(dataset, tmp_path):
    rng = np.random.default_rng(1)
    captions = rng.normal(size=(6, D)).astype(np.float32)
    videos = rng.normal(size=(6, D)).astype(np.float32)
    videos[4] = videos[2]  # exact score ties between v2 and v4 for every query
    write_embeddings(tmp_path / "emb", captions, videos)
    call_command("register_model", dataset="tiny", name="up", embeddings=tmp_path / "emb")
    call_command("predict", dataset="tiny", model="up", k=6)
    first = tmp_path / "first.run"
    call_command("export_run", dataset="tiny", model="up", output=first)
    call_command("register_model", dataset="tiny", name="again", run=first)
    second = tmp_path / "second.run"
    call_command("export_run", dataset="tiny", model="again", output=second)
    original = run_rankings(Run.objects.get(name="up"))
    reread = run_rankings(Run.objects.get(name="again"))
    assert original == reread

    def without_run_id(path):
        return [line.rsplit(" ", 1)[0] for line in path.read_text().splitlines()]

    assert without_run_id(first) == without_run_id(second)
    for ranking in original.values():
        keys = [key for key, _ in ranking]
        assert keys.index("v4") < keys.index("v2")  # tie: larger docno first


def test_ivf_predict_reports_recall(dataset, tmp_path):
    write_embeddings(tmp_path / "emb")
    call_command("register_model", dataset="tiny", name="up", embeddings=tmp_path / "emb")
    call_command("predict", dataset="tiny", model="up", k=3, index="ivf", nlist=1)
    run = Run.objects.get(name="up")
    assert run.metadata["index"] == "ivf"
    assert run.metadata["recall_at_k_vs_exact"] == 1.0  # one list visited = exhaustive


def test_duplicate_model_name_refused(dataset, tmp_path):
    write_embeddings(tmp_path / "emb")
    call_command("register_model", dataset="tiny", name="up", embeddings=tmp_path / "emb")
    with pytest.raises(CommandError, match="already has a model named 'up'"):
        call_command("register_model", dataset="tiny", name="up", embeddings=tmp_path / "emb")
    assert RetrievalModel.objects.count() == 1


def test_unknown_dataset_and_model(dataset):
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        call_command("predict", dataset="nope", model="x")
    with pytest.raises(CommandError, match="has no model named 'x'"):
        call_command("predict", dataset="tiny", model="x")


def test_predict_reuses_the_saved_exact_index(dataset, tmp_path, monkeypatch):
    from retrieval.search import index as faiss_index

    write_embeddings(tmp_path / "emb")
    call_command("register_model", dataset="tiny", name="up", embeddings=tmp_path / "emb")
    call_command("predict", dataset="tiny", model="up", k=3)
    first = load_run(Run.objects.get(name="up"))
    built = []
    original = faiss_index.build_index
    monkeypatch.setattr(
        faiss_index, "build_index", lambda *a, **k: built.append(1) or original(*a, **k)
    )
    call_command("predict", dataset="tiny", model="up", k=3)
    assert built == []  # the index saved by the first predict was loaded, not rebuilt
    again = load_run(Run.objects.get(name="up"))
    np.testing.assert_array_equal(first.item_ids, again.item_ids)
