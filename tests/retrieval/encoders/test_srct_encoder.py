"""The srct encoder end to end: register, train, embed, predict on a demo world and on a
dataset with uploaded ``.npz`` experts; the faiss equality on real outputs; error paths."""

import json
from io import StringIO

import numpy as np
import pytest
import torch
from django.core.management import CommandError, call_command

from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.datasets.roles import role_graphs
from retrieval.encoders.base import TrainingData, VideoInputs
from retrieval.encoders.features import ExpertSequences
from retrieval.encoders.registry import get_encoder, load_encoder
from retrieval.encoders.srct import (
    ExpertWidthError,
    SRCTEncoder,
    caption_inputs,
    collate_captions,
    node_weights,
    padded_experts,
)
from retrieval.encoders.text import load_spacy
from retrieval.models import Caption, RetrievalModel, Run
from retrieval.search.runs_service import load_run

WIDTHS = (6, 3, 5)
SMALL = {"embed_dim": 32, "heads": 2, "layers": 1, "batch_size": 16}


def _clip(rng: np.random.Generator, t: int = 4, n: int = 3, widths=WIDTHS) -> ExpertSequences:
    return ExpertSequences(
        rng.normal(size=(t, widths[0])).astype(np.float32),
        rng.normal(size=(t - 1, widths[1])).astype(np.float32),
        rng.normal(size=(n, widths[2])).astype(np.float32),
    )


CAPTIONS = [
    "a red disc moves left",
    "cut the roll with a sharp knife",
    "two blue squares",
    "a green star spins slowly near the top",
    "the man opens the door",
    "a small yellow triangle falls",
]


@pytest.fixture(scope="module")
def trained() -> tuple[SRCTEncoder, TrainingData]:
    rng = np.random.default_rng(0)
    clips = [_clip(rng, t=3 + i % 3, n=1 + i % 4) for i in range(6)]
    data = TrainingData(
        video_features=np.stack([c.pooled() for c in clips]),
        captions=CAPTIONS,
        caption_video=np.arange(6),
        video_keys=[f"v{i}" for i in range(6)],
        video_experts=clips,
    )
    encoder = SRCTEncoder(**SMALL)
    losses = encoder.fit(data, epochs=2, device="cpu")
    assert len(losses) == 2 and all(np.isfinite(losses))
    return encoder, data


def test_node_weights_average_the_pieces_inside_each_span():
    graph = role_graphs(["cut the roll with a sharp knife"], nlp=load_spacy())[0]
    spans = np.array([[0, 3], [4, 7], [8, 12], [13, 17], [18, 19], [20, 25], [26, 31]])
    weights = node_weights(graph, spans)
    texts = [node.text for node in graph.nodes]
    assert texts[1:] == ["cut", "the roll", "with a sharp knife"]
    np.testing.assert_allclose(weights[0], np.full(7, 1 / 7))  # sentence: every piece
    np.testing.assert_allclose(weights[1], [1, 0, 0, 0, 0, 0, 0])
    np.testing.assert_allclose(weights[2], [0, 0.5, 0.5, 0, 0, 0, 0])
    np.testing.assert_allclose(weights[3], [0, 0, 0, 0.25, 0.25, 0.25, 0.25])


def test_faiss_inner_product_is_the_mean_level_cosine_on_real_outputs(trained):
    encoder, data = trained
    net = encoder.net
    texts = encoder.encode_captions(CAPTIONS, device="cpu")
    videos = encoder.encode_videos(
        VideoInputs(keys=data.video_keys, experts=data.video_experts), device="cpu"
    )
    assert texts.shape == (6, 96) and videos.shape == (6, 96)
    with torch.no_grad():
        t = net.embed_texts(*collate_captions(caption_inputs(CAPTIONS, device="cpu"), "cpu"))
        v = net.embed_videos(*zip(*padded_experts(data.video_experts), strict=True))
    # independent reference: per level cosine with numpy, then the mean of the three
    t, v = t.numpy().astype(np.float64), v.numpy().astype(np.float64)
    cosines = np.zeros((6, 6, 3))
    for level in range(3):
        a, b = t[:, level], v[:, level]
        na = np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
        nb = np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
        cosines[:, :, level] = (a / na) @ (b / nb).T
    np.testing.assert_allclose(texts @ videos.T, cosines.mean(-1), atol=1e-5)
    assert np.abs(cosines).max() > 0.05  # not a trivially zero model


def test_batching_does_not_change_embeddings_and_save_load_round_trips(trained, tmp_path):
    encoder, data = trained
    inputs = VideoInputs(keys=data.video_keys, experts=data.video_experts)
    whole = encoder.encode_videos(inputs, device="cpu", batch_size=64)
    pieces = encoder.encode_videos(inputs, device="cpu", batch_size=2)
    np.testing.assert_allclose(whole, pieces, atol=1e-5)
    np.testing.assert_allclose(
        encoder.encode_captions(CAPTIONS, device="cpu", batch_size=64),
        encoder.encode_captions(CAPTIONS, device="cpu", batch_size=4),
        atol=1e-5,
    )
    encoder.save(tmp_path / "w.pt")
    again = load_encoder(tmp_path / "w.pt")
    np.testing.assert_allclose(again.encode_videos(inputs, device="cpu"), whole, atol=1e-6)


def test_expert_subset_zeroes_the_levels_of_the_experts_left_out(trained):
    _, data = trained
    encoder = SRCTEncoder(experts=["appearance"], **SMALL)
    encoder.fit(data, epochs=1, device="cpu")
    videos = encoder.encode_videos(
        VideoInputs(keys=data.video_keys, experts=data.video_experts), device="cpu"
    )
    assert np.count_nonzero(videos[:, 32:]) == 0 and np.count_nonzero(videos[:, :32])
    with pytest.raises(ValueError, match="must include 'appearance'"):
        SRCTEncoder(experts=["action"])


def test_semantic_positives_reach_the_loss(trained):
    _, data = trained
    every = TrainingData(
        video_features=data.video_features,
        captions=data.captions,
        caption_video=data.caption_video,
        positives=np.ones((6, 6), dtype=bool),
        video_experts=data.video_experts,
    )
    # every pair relevant: no negative anywhere, so the hardest-negative loss is zero
    assert SRCTEncoder(**SMALL).fit(every, epochs=1, device="cpu") == [0.0]
    assert SRCTEncoder(**SMALL).fit(data, epochs=1, device="cpu")[0] > 0.0


def test_wrong_expert_widths_are_a_clear_error(trained):
    encoder, _ = trained
    bad = [_clip(np.random.default_rng(1), widths=(6, 4, 5))]
    with pytest.raises(ExpertWidthError, match=r"video 'x': expert 'action' has shape \(3, 4\)"):
        encoder.encode_videos(VideoInputs(keys=["x"], experts=bad), device="cpu")


def test_registry_builds_srct():
    encoder = get_encoder("srct", embed_dim=64, heads=4)
    assert encoder.dim == 192 and encoder.trainable and encoder.uses_experts


# --- through the services and commands -------------------------------------------------


@pytest.fixture
def world(db):
    return create_demo_dataset(name="mini", n_videos=8, seed=4, workers=1)


def _register_train_embed_predict(dataset: str) -> Run:
    call_command(
        "register_model", dataset=dataset, name="s", encoder="srct", config=json.dumps(SMALL),
        stdout=StringIO(),
    )  # fmt: skip
    call_command("train", dataset=dataset, model="s", epochs=1, device="cpu", verbosity=0,
                 stdout=StringIO())  # fmt: skip
    log = RetrievalModel.objects.get(name="s").training_log[-1]
    assert log["epochs"] == 1 and log["device"] == "cpu" and np.isfinite(log["losses"][0])
    call_command("embed", dataset=dataset, model="s", device="cpu", stdout=StringIO())
    call_command("predict", dataset=dataset, model="s", k=3, stdout=StringIO())
    return Run.objects.get(name="s")


def _check_run(run: Run, dataset) -> None:
    queries = Caption.objects.filter(dataset=dataset, split="test", is_query=True).count()
    lists = load_run(run)
    test_videos = set(dataset.videos.filter(split="test").values_list("pk", flat=True))
    assert run.query_count == queries == len(lists) > 0
    assert lists.item_ids.shape == (queries, min(3, len(test_videos)))
    assert set(lists.item_ids.ravel().tolist()) <= test_videos
    assert np.all(np.diff(lists.scores, axis=1) <= 1e-6)
    assert np.all(np.abs(lists.scores) <= 1 + 1e-5)  # mean of cosines


def test_demo_world_register_train_embed_predict(world):
    call_command("features", dataset="mini", experts=True, stdout=StringIO())
    _check_run(_register_train_embed_predict("mini"), world)


def test_npz_dataset_register_train_embed_predict(world, tmp_path):
    rng = np.random.default_rng(3)
    keys = list(world.videos.order_by("key").values_list("key", flat=True))
    # vectors only: srct refuses to train and says what to run
    for key in keys:
        np.save(tmp_path / f"{key}.npy", np.ones(14, np.float32))
    call_command("features", dataset="mini", source=tmp_path, stdout=StringIO())
    call_command("register_model", dataset="mini", name="s", encoder="srct", stdout=StringIO())
    with pytest.raises(CommandError, match=r"no feature experts.*features --experts.*--from"):
        call_command("train", dataset="mini", model="s", epochs=1, device="cpu", verbosity=0)
    RetrievalModel.objects.filter(name="s").delete()
    for key in keys:
        (tmp_path / f"{key}.npy").unlink()
    for i, key in enumerate(keys):
        clip = _clip(rng, t=3 + i % 4, n=1 + i % 3)
        np.savez(tmp_path / f"{key}.npz", **clip.arrays())
    call_command("features", dataset="mini", source=tmp_path, stdout=StringIO())
    run = _register_train_embed_predict("mini")
    _check_run(run, world)
    # experts replaced by ones of another width: embedding says which video and which expert
    for key in keys:
        np.savez(tmp_path / f"{key}.npz", **_clip(rng, widths=(6, 3, 7)).arrays())
    call_command("features", dataset="mini", source=tmp_path, stdout=StringIO())
    with pytest.raises(CommandError, match=r"expert 'objects' has shape \(3, 7\).*T x 5"):
        call_command("embed", dataset="mini", model="s", device="cpu", stdout=StringIO())


def test_demo_models_with_srct_extract_experts_then_train_and_run(db):
    from retrieval.datasets.demo.runs import build_demo_models

    dataset = create_demo_dataset(name="demo6", n_videos=6, seed=2, workers=1)
    said: list[str] = []
    (run,) = build_demo_models(
        dataset, models=("srct",), k=2, epochs=1, device="cpu", say=said.append
    )
    assert said[0] == "Extracting video features and feature experts ..."
    assert run.name == "srct" and load_run(run).item_ids.shape[1] == 2
    assert RetrievalModel.objects.get(name="srct").training_log[-1]["epochs"] == 1
    said.clear()
    assert build_demo_models(dataset, models=("srct",), say=said.append)[0].pk == run.pk
    assert said == []  # nothing done again
