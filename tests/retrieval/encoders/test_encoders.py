"""Built-in encoders and the video feature extractor, on a tiny demo world (no database)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from retrieval.datasets.demo.render import render_frames, write_webm
from retrieval.datasets.demo.scene import Background, Scene, SceneObject
from retrieval.datasets.demo.world import TEST, TRAIN, build_world
from retrieval.encoders.base import (
    TrainingData,
    VideoInputs,
    resolve_device,
    thresholded,
)
from retrieval.encoders.features import (
    FEATURE_DIM,
    FEATURE_NAMES,
    extract_clips_features,
    extract_features,
    extract_frames_features,
)
from retrieval.encoders.jpose import JPoSEEncoder
from retrieval.encoders.losses import triplet_loss
from retrieval.encoders.minilm import MiniLMEncoder
from retrieval.encoders.mme import MMEEncoder
from retrieval.encoders.random import RandomEncoder
from retrieval.encoders.registry import ENCODERS, get_encoder, load_encoder
from retrieval.encoders.text import split_pos

EPOCHS = 12


def _scene(colour: str, motion: str, shape: str = "circle", kind: str = "plain") -> Scene:
    x = {"left": 0.75, "right": 0.25}.get(motion, 0.5)
    obj = SceneObject(shape=shape, colour=colour, motion=motion, x=x, y=0.5, radius=0.11)
    if kind == "grass":
        background = Background(kind="grass", colour=(46, 104, 34), colour2=(78, 150, 52))
    else:
        background = Background(kind="plain", colour=(38, 38, 46))
    return Scene(background=background, objects=(obj,), seed=1)


def _feature(vector: np.ndarray, name: str) -> float:
    return float(vector[FEATURE_NAMES.index(name)])


class Split:
    """A demo world cut into training data and test-split inputs, queries and truth."""

    def __init__(self, n_videos: int, seed: int) -> None:
        world = build_world(n_videos, seed=seed)
        videos = list(world.videos)
        features = extract_clips_features([render_frames(v.scene) for v in videos])
        train = [i for i, v in enumerate(videos) if v.split == TRAIN]
        test = [i for i, v in enumerate(videos) if v.split == TEST]
        column = {videos[i].key: j for j, i in enumerate(train)}
        captions = [c for c in world.captions if c.split == TRAIN]
        self.train_captions = captions
        self.data = TrainingData(
            video_features=features[train],
            captions=[c.text for c in captions],
            caption_video=np.array([column[c.video_key] for c in captions]),
            video_keys=[videos[i].key for i in train],
        )
        keys = [videos[i].key for i in test]
        self.queries = world.queries()
        known = [
            [c.text for c in world.captions if c.video_key == k and not c.is_query] for k in keys
        ]
        self.inputs = VideoInputs(keys=keys, features=features[test], captions=known)
        self.truth = world.relevance(self.queries, split=TEST)
        self.origin = np.array([keys.index(q.video_key) for q in self.queries])
        self.world = world

    def scores(self, encoder) -> np.ndarray:
        queries = encoder.encode_captions([q.text for q in self.queries], device="cpu")
        return queries @ encoder.encode_videos(self.inputs, device="cpu").T

    def quality(self, encoder) -> dict[str, float]:
        """Correct@5 (any exhaustively relevant video in the top 5) and origin mean rank."""
        order = np.argsort(-self.scores(encoder), axis=1, kind="stable")
        correct = np.mean([self.truth[i, order[i, :5]].any() for i in range(len(order))])
        ranks = np.array(
            [np.flatnonzero(order[i] == self.origin[i])[0] + 1 for i in range(len(order))]
        )
        return {"correct@5": float(correct), "mean_rank": float(ranks.mean())}


@pytest.fixture(scope="module")
def split() -> Split:
    torch.manual_seed(0)
    return Split(120, seed=5)


@pytest.fixture(scope="module")
def mme(split) -> tuple[MMEEncoder, list[float]]:
    encoder = MMEEncoder()
    return encoder, encoder.fit(split.data, epochs=EPOCHS, seed=0, device="cpu")


@pytest.fixture(scope="module")
def jpose(split) -> tuple[JPoSEEncoder, list[float]]:
    encoder = JPoSEEncoder()
    return encoder, encoder.fit(split.data, epochs=EPOCHS, seed=0, device="cpu")


def test_registry_names_the_five_encoders():
    assert set(ENCODERS) == {"random", "minilm", "mme", "jpose", "srct"}
    assert get_encoder("random", dim=32).dim == 32
    with pytest.raises(KeyError):
        get_encoder("nope")


def test_resolve_device_auto_follows_cuda():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert resolve_device("cpu").type == "cpu"


def test_random_is_per_key_and_order_independent():
    encoder = RandomEncoder(seed=7)
    keys = ["v1", "v2", "v3", "v4"]
    forward = encoder.encode_videos(VideoInputs(keys=keys))
    backward = encoder.encode_videos(VideoInputs(keys=keys[::-1]))
    assert forward.shape == (4, 256) and forward.dtype == np.float32
    np.testing.assert_array_equal(forward, backward[::-1])
    np.testing.assert_array_equal(
        forward[1], RandomEncoder(seed=7).encode_videos(VideoInputs(["v2"]))[0]
    )
    np.testing.assert_allclose(np.linalg.norm(forward, axis=1), 1.0, rtol=1e-5)
    assert not np.allclose(forward[0], RandomEncoder(seed=8).encode_videos(VideoInputs(["v1"]))[0])
    captions = encoder.encode_captions(["a red ball", "a blue star", "a red ball"])
    np.testing.assert_array_equal(captions[0], captions[2])


def test_minilm_captions_are_384_d_unit_and_semantic():
    encoder = MiniLMEncoder()
    e = encoder.encode_captions(
        [
            "a red ball moves left",
            "a crimson ball slides to the left",
            "three green squares on grass",
        ],
        device="cpu",
    )
    assert e.shape == (3, 384) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, rtol=1e-5)
    assert e[0] @ e[1] > e[0] @ e[2] + 0.2


def test_minilm_video_is_mean_of_its_captions_and_zero_without():
    encoder = MiniLMEncoder()
    inputs = VideoInputs(keys=["a", "b"], captions=[["a red ball", "a ball moves left"], []])
    videos = encoder.encode_videos(inputs, device="cpu")
    captions = encoder.encode_captions(["a red ball", "a ball moves left"], device="cpu")
    mean = captions.mean(0)
    np.testing.assert_allclose(videos[0], mean / np.linalg.norm(mean), atol=1e-5)
    assert not videos[1].any()


def test_pos_split_treats_mis_tagged_motion_words_as_verbs():
    split = split_pos(
        ["a red ball moves left", "a crimson disc rolls to the left past a blue star"]
    )
    assert split[0].verbs == ("move", "left") and split[0].nouns == ("red", "ball")
    assert split[1].verbs == ("roll", "left") and "disc" in split[1].nouns


def test_features_have_documented_dim_and_are_deterministic(tmp_path):
    frames = render_frames(_scene("red", "left"))
    path = tmp_path / "clip.webm"
    write_webm(frames, path)
    first, second = extract_features(path), extract_features(path)
    assert first.shape == (FEATURE_DIM,) == (len(FEATURE_NAMES),) and first.dtype == np.float32
    assert np.isfinite(first).all()
    np.testing.assert_array_equal(first, second)
    batched = extract_frames_features(torch.from_numpy(np.stack([frames, frames])))
    assert batched.shape == (2, FEATURE_DIM)
    np.testing.assert_allclose(batched[0].numpy(), batched[1].numpy(), atol=1e-6)
    # Decoded VP9 stays close to the raw frames on the motion cues.
    assert _feature(first, "pooled_dx") == pytest.approx(
        _feature(batched[0].numpy(), "pooled_dx"), abs=0.03
    )


def test_features_separate_direction_colour_and_spin():
    scenes = {
        "red-left": _scene("red", "left"),
        "red-right": _scene("red", "right"),
        "blue-left": _scene("blue", "left", shape="square"),
        "blue-still": _scene("blue", "still", shape="square"),
        "blue-spin": _scene("blue", "spinning", shape="square"),
        "red-grow": _scene("red", "growing", shape="star", kind="grass"),
    }
    f = dict(
        zip(
            scenes, extract_clips_features([render_frames(s) for s in scenes.values()]), strict=True
        )
    )
    assert _feature(f["red-left"], "pooled_dx") < -0.2 < 0.2 < _feature(f["red-right"], "pooled_dx")
    assert _feature(f["red-left"], "bin00_area") > 0.1 > _feature(f["blue-left"], "bin00_area")
    blue = ("bin07_area", "bin08_area")
    assert max(_feature(f["blue-left"], b) for b in blue) > 0.1
    assert max(_feature(f["red-left"], b) for b in blue) < 0.01
    assert _feature(f["blue-spin"], "pooled_detail_turn") > 0.8
    assert _feature(f["blue-still"], "pooled_detail_turn") < 0.1
    assert _feature(f["red-grow"], "pooled_log_growth") > 1.0
    assert _feature(f["red-grow"], "tex_grad_weak") > _feature(f["red-left"], "tex_grad_weak") + 0.2


def test_triplet_loss_is_zero_only_beyond_the_margin():
    anchors = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    positive = torch.eye(2, dtype=torch.bool)
    assert triplet_loss(anchors, anchors, positive, margin=0.2).item() == 0.0
    close = torch.nn.functional.normalize(torch.tensor([[1.0, 0.1], [1.0, 0.0]]), dim=1)
    assert triplet_loss(close, close, positive, margin=0.2).item() > 0.1


@pytest.mark.parametrize("name", ["mme", "jpose"])
def test_training_lowers_the_loss(name, mme, jpose):
    history = {"mme": mme, "jpose": jpose}[name][1]
    assert len(history) == EPOCHS and all(np.isfinite(history))
    assert history[-1] < 0.5 * history[0]


def test_training_is_seeded(split):
    first = MMEEncoder().fit(split.data, epochs=2, seed=4, device="cpu")
    again = MMEEncoder().fit(split.data, epochs=2, seed=4, device="cpu")
    other = MMEEncoder().fit(split.data, epochs=2, seed=5, device="cpu")
    assert first == again and first != other


def test_trained_models_beat_random_and_differ(split, mme, jpose):
    random_q = split.quality(RandomEncoder())
    for encoder in (mme[0], jpose[0]):
        q = split.quality(encoder)
        assert q["correct@5"] > random_q["correct@5"] + 0.2, (encoder.name, q, random_q)
        assert q["mean_rank"] < 0.6 * random_q["mean_rank"], (encoder.name, q, random_q)
    a, b = split.scores(mme[0]), split.scores(jpose[0])
    assert not np.allclose(a, b)
    assert (a.argmax(1) == b.argmax(1)).mean() < 1.0


def test_embeddings_are_unit_vectors(split, mme, jpose):
    for encoder in (mme[0], jpose[0]):
        v = encoder.encode_videos(split.inputs, device="cpu")
        c = encoder.encode_captions(["a red ball moves left", "there is a star"], device="cpu")
        assert v.shape == (len(split.inputs), 256) and c.shape == (2, 256)
        np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-4)
        np.testing.assert_allclose(np.linalg.norm(c, axis=1), 1.0, rtol=1e-4)


@pytest.mark.parametrize("name", ["random", "minilm", "mme", "jpose"])
def test_save_load_round_trip(name, split, mme, jpose, tmp_path):
    encoder = {
        "random": RandomEncoder(seed=3),
        "minilm": MiniLMEncoder(),
        "mme": mme[0],
        "jpose": jpose[0],
    }[name]
    path = tmp_path / f"{name}.pt"
    encoder.save(path)
    loaded = load_encoder(path)
    assert type(loaded) is type(encoder) and loaded.config() == encoder.config()
    texts = ["a red ball moves left", "two squares spin on grass"]
    np.testing.assert_array_equal(
        loaded.encode_captions(texts, device="cpu"), encoder.encode_captions(texts, device="cpu")
    )
    np.testing.assert_array_equal(
        loaded.encode_videos(split.inputs, device="cpu"),
        encoder.encode_videos(split.inputs, device="cpu"),
    )


def test_untrained_model_refuses_to_encode():
    with pytest.raises(RuntimeError):
        MMEEncoder().encode_captions(["a ball"], device="cpu")
    with pytest.raises(TypeError):
        RandomEncoder().fit(TrainingData(np.zeros((1, 2)), ["a"], np.array([0])))


def test_training_with_thresholded_semantic_positives(split):
    """Wray et al., CVPR 2021, §4.3: positives S >= T; here S is the demo's exact relevance."""
    train_videos = [v for v in split.world.videos if v.split == TRAIN]
    from retrieval.datasets.demo.scene import relevance_matrix

    similarity = relevance_matrix(
        [c.assertion for c in split.train_captions], [v.scene for v in train_videos]
    )
    positives = thresholded(similarity.astype(np.float32), 0.5)
    data = TrainingData(
        split.data.video_features, split.data.captions, split.data.caption_video, positives
    )
    assert data.positive_mask(np.array([0]), np.arange(data.n_videos)).sum() >= 1
    history = MMEEncoder(batch_size=64).fit(data, epochs=2, seed=0, device="cpu")
    assert len(history) == 2 and all(np.isfinite(history))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_and_cuda_agree(split, mme, jpose):
    frames = torch.from_numpy(
        np.stack([render_frames(_scene("red", "left")), render_frames(_scene("blue", "up"))])
    )
    cpu = extract_frames_features(frames).numpy()
    gpu = extract_frames_features(frames.cuda()).cpu().numpy()
    np.testing.assert_allclose(gpu, cpu, rtol=1e-3, atol=1e-3)
    for encoder in (mme[0], jpose[0]):
        for kind in ("captions", "videos"):
            if kind == "captions":
                texts = ["a red ball moves left", "there is a star"]
                a, b = (encoder.encode_captions(texts, device=d) for d in ("cpu", "cuda"))
            else:
                a, b = (encoder.encode_videos(split.inputs, device=d) for d in ("cpu", "cuda"))
            np.testing.assert_allclose(b, a, atol=2e-3)
