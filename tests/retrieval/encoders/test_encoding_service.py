"""Built-in encoders through the services: register, features, train, resumable embed, predict."""

from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.encoders import service as encoding
from retrieval.models import Caption, RetrievalModel, Run
from retrieval.search.runs_service import load_run


class PowerCut(Exception):
    """Stands in for a crash in the middle of embedding."""


@pytest.fixture
def world(db):
    return create_demo_dataset(name="mini", n_videos=24, seed=4, workers=1)


def test_unknown_encoder_registers_nothing(world):
    with pytest.raises(CommandError, match="unknown encoder 'clip'"):
        call_command("register_model", dataset="mini", name="x", encoder="clip")
    with pytest.raises(CommandError, match="bad settings for random"):
        call_command(
            "register_model", dataset="mini", name="x", encoder="random", config='{"nope": 1}'
        )
    assert not RetrievalModel.objects.exists()


def test_untrained_model_cannot_embed(world):
    call_command("register_model", dataset="mini", name="m", encoder="mme")
    with pytest.raises(CommandError, match="must be trained first"):
        call_command("embed", dataset="mini", model="m")


def test_features_train_embed_predict(world):
    call_command("features", dataset="mini", stdout=StringIO())
    assert not world.videos.filter(features="").exists()
    call_command("register_model", dataset="mini", name="m", encoder="mme", stdout=StringIO())
    out = StringIO()
    call_command(
        "train", dataset="mini", model="m", epochs=3, device="cpu", verbosity=0, stdout=out
    )
    model = RetrievalModel.objects.get(name="m")
    log = model.training_log[-1]
    assert log["epochs"] == 3 and log["device"] == "cpu" and len(log["losses"]) == 3
    call_command("embed", dataset="mini", model="m", device="cpu", stdout=StringIO())
    call_command("predict", dataset="mini", model="m", k=5, stdout=StringIO())
    run = Run.objects.get(name="m")
    queries = Caption.objects.filter(dataset=world, split="test", is_query=True).count()
    lists = load_run(run)
    assert run.query_count == queries == len(lists)
    assert lists.item_ids.shape == (queries, 5)
    test_videos = set(world.videos.filter(split="test").values_list("pk", flat=True))
    assert set(lists.item_ids.ravel().tolist()) <= test_videos
    assert np.all(np.diff(lists.scores, axis=1) <= 1e-6)  # ranked by score


def test_embedding_resumes_after_interruption(world, monkeypatch):
    model = encoding.register_encoder(world, "r", "random", {"seed": 1})
    monkeypatch.setattr(encoding, "CHUNK", 8)
    from retrieval.encoders.random import RandomEncoder

    calls = []
    crashed = []
    original = RandomEncoder.encode_captions

    def flaky(self, texts, **kwargs):
        calls.append(len(texts))
        if len(calls) == 2 and not crashed:
            crashed.append(True)
            raise PowerCut("power cut")
        return original(self, texts, **kwargs)

    monkeypatch.setattr(RandomEncoder, "encode_captions", flaky)
    with pytest.raises(PowerCut):
        encoding.embed(model, device="cpu")
    assert calls == [8, 8]
    calls.clear()
    first = encoding.embed(model, device="cpu")
    n_captions = Caption.objects.filter(dataset=world, split="test").count()
    # The first chunk came from disk: only the remaining captions were encoded again.
    assert sum(calls) == n_captions - 8
    monkeypatch.setattr(RandomEncoder, "encode_captions", original)
    model.embeddings = ""
    again = encoding.embed(model, device="cpu")
    np.testing.assert_array_equal(first.captions, again.captions)
    np.testing.assert_array_equal(first.videos, again.videos)


def test_hit_matrices_follow_the_relevance_rule(world):
    from retrieval.datasets.demo.scene import Assertion, Scene, is_relevant
    from retrieval.models import Video
    from retrieval.scoring.evaluation import ground_truth_hits, original_hits

    model = encoding.register_encoder(world, "r", "random", {"seed": 3})
    encoding.embed(model, device="cpu")
    from retrieval.search.service import predict

    run = predict(model, k=6)
    lists = load_run(run)
    exact, original = ground_truth_hits(run), original_hits(run)
    captions = {c.pk: c for c in Caption.objects.filter(dataset=world)}
    scenes = {
        v.pk: Scene.from_dict(v.metadata["scene"]) for v in Video.objects.filter(dataset=world)
    }
    for row, query in enumerate(lists.query_ids.tolist()):
        assertion = Assertion.from_dict(captions[query].metadata["assertion"])
        for col, video in enumerate(lists.item_ids[row].tolist()):
            assert exact[row, col] == is_relevant(assertion, scenes[video])
            assert original[row, col] == (video == captions[query].video_id)
    assert (original <= exact).all()


def test_unreadable_video_is_a_clear_error_and_the_others_get_features(world, settings):
    from pathlib import Path

    from retrieval.models import Video

    broken = Video.objects.filter(dataset=world).order_by("pk")[5]
    (Path(settings.MEDIA_ROOT) / broken.media.name).write_bytes(b"not a video")
    with pytest.raises(CommandError, match=rf"video '{broken.key}'.*cannot read frames"):
        call_command("features", dataset="mini", stdout=StringIO())
    assert set(world.videos.filter(features="").values_list("key", flat=True)) == {broken.key}


def test_feature_files_are_checked_before_any_is_attached(world, tmp_path):
    keys = list(world.videos.order_by("key").values_list("key", flat=True))
    for key in keys[:-1]:
        np.save(tmp_path / f"{key}.npy", np.ones(8, np.float32))
    np.save(tmp_path / f"{keys[-1]}.npy", np.ones(9, np.float32))
    with pytest.raises(CommandError, match="9 values, others have 8"):
        call_command("features", dataset="mini", source=tmp_path, stdout=StringIO())
    assert not world.videos.exclude(features="").exists()
    np.save(tmp_path / f"{keys[-1]}.npy", np.ones(8, np.float32))
    call_command("features", dataset="mini", source=tmp_path, stdout=StringIO())
    assert not world.videos.filter(features="").exists()
