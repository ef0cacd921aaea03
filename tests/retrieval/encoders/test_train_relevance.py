"""Training with semantic positives (Wray et al., CVPR 2021, §4.3): `train --relevance PROXY
--threshold T`."""

import hashlib
import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.encoders import service as encoding
from retrieval.encoders import training as training_module
from retrieval.encoders.mme import MMEEncoder
from retrieval.models import Caption, RetrievalModel, Video
from retrieval.proxies.service import ProxyOptions, ProxyRelevance, proxy_relevance


@pytest.fixture
def world(db, tmp_path):
    """A tiny demo world whose videos carry random 16-d features (no frame decoding)."""
    dataset = create_demo_dataset(name="rel", n_videos=24, seed=5, workers=1)
    rng = np.random.default_rng(0)
    source = tmp_path / "features"
    source.mkdir()
    for key in dataset.videos.values_list("key", flat=True):
        np.save(source / f"{key}.npy", rng.normal(size=16).astype(np.float32))
    encoding.link_feature_files(dataset, source)
    return dataset


def train_rows(dataset):
    """Caption pks, their video pks, and the train videos' pks, all in pk order."""
    videos = list(Video.objects.filter(dataset=dataset, split="train").order_by("pk"))
    captions = list(
        Caption.objects.filter(dataset=dataset, video__split="train")
        .order_by("pk")
        .values_list("pk", "video_id")
    )
    return [pk for pk, _ in captions], [v for _, v in captions], [v.pk for v in videos]


def expected_positives(dataset, proxy: str, threshold: float) -> np.ndarray:
    """S.T >= T by dictionary look-ups on the proxy's own ids, independent of the service."""
    rel = proxy_relevance(dataset, ProxyOptions(proxy, split="train"))
    caption_pks, _, video_pks = train_rows(dataset)
    row_of_video = {pk: i for i, pk in enumerate(rel.video_ids.tolist())}
    column_of_caption = {
        pk: int(rel.items.caption_text[i]) for i, pk in enumerate(rel.caption_ids.tolist())
    }
    out = np.zeros((len(caption_pks), len(video_pks)), dtype=bool)
    for i, c in enumerate(caption_pks):
        for j, v in enumerate(video_pks):
            out[i, j] = rel.matrix[row_of_video[v], column_of_caption[c]] >= threshold
    return out


@pytest.fixture
def captured(monkeypatch):
    """Replace MME's fit with one that records the TrainingData it is handed."""
    seen = []

    def fit(self, data, **kwargs):
        seen.append(data)
        return [1.0]

    monkeypatch.setattr(MMEEncoder, "fit", fit)
    return seen


def test_bow_positives_are_the_thresholded_proxy(world, captured):
    model = encoding.register_encoder(world, "m", "mme")
    encoding.train(model, device="cpu", relevance="bow", threshold=0.2)
    data = captured[-1]
    expected = expected_positives(world, "bow", 0.2)
    assert isinstance(data.positives, np.ndarray) and data.positives.dtype == bool
    np.testing.assert_array_equal(data.positives, expected)
    rows = np.arange(len(data.captions))
    assert data.positives[rows, data.caption_video].all()  # every caption's own video
    assert data.positives.sum() > len(data.captions)  # strictly more than instance
    full = data.positive_mask(rows, np.arange(data.n_videos))
    np.testing.assert_array_equal(full, expected)
    log = RetrievalModel.objects.get(pk=model.pk).training_log[-1]
    assert log["relevance"] == "bow" and log["threshold"] == 0.2
    assert log["positives_per_caption"] == pytest.approx(expected.sum(1).mean(), abs=1e-4)
    assert log["positives_per_caption"] > 1

    encoding.train(model, device="cpu")
    assert captured[-1].positives is None
    log = RetrievalModel.objects.get(pk=model.pk).training_log[-1]
    assert log["relevance"] == "instance" and log["threshold"] is None
    assert log["positives_per_caption"] == 1.0


def test_default_threshold_is_0_4(world, captured):
    model = encoding.register_encoder(world, "m", "mme")
    encoding.train(model, device="cpu", relevance="pos")
    np.testing.assert_array_equal(captured[-1].positives, expected_positives(world, "pos", 0.4))
    assert model.training_log[-1]["threshold"] == encoding.DEFAULT_THRESHOLD == 0.4


def test_positives_are_aligned_by_pk_not_by_position(world):
    rel = proxy_relevance(world, ProxyOptions("bow", split="train"))
    caption_pks, _, video_pks = train_rows(world)
    straight = encoding.semantic_positives(rel, video_pks, caption_pks, 0.2)
    # The same relevance with its videos and captions in another order.
    rng = np.random.default_rng(3)
    v_order = rng.permutation(len(rel.video_ids))
    c_order = rng.permutation(len(rel.caption_ids))
    shuffled = ProxyRelevance(
        options=rel.options,
        video_ids=rel.video_ids[v_order],
        caption_ids=rel.caption_ids[c_order],
        items=type(rel.items)(
            caption_video=rel.items.caption_video[c_order],
            n_videos=rel.items.n_videos,
            caption_text=rel.items.caption_text[c_order],
            representative=rel.items.representative,
        ),
        matrix=rel.matrix[v_order],
    )
    np.testing.assert_array_equal(
        encoding.semantic_positives(shuffled, video_pks, caption_pks, 0.2), straight
    )
    with pytest.raises(encoding.EncodingError, match=r"lacks 1 of the .* training captions"):
        encoding.semantic_positives(rel, video_pks, [*caption_pks, 10**9], 0.2)
    with pytest.raises(encoding.EncodingError, match="training videos"):
        encoding.semantic_positives(rel, [*video_pks, 10**9], caption_pks, 0.2)


def test_train_command_end_to_end_with_pos_relevance(world):
    call_command("register_model", dataset="rel", name="m", encoder="mme", stdout=StringIO())
    out = StringIO()
    call_command(
        "train",
        "--dataset=rel",
        "--model=m",
        "--relevance=pos",
        "--threshold=0.5",
        "--epochs=1",
        "--device=cpu",
        "--format=json",
        stdout=out,
    )
    printed = json.loads(out.getvalue())
    model = RetrievalModel.objects.get(name="m")
    log = model.training_log[-1]
    assert printed == log
    assert log["relevance"] == "pos" and log["threshold"] == 0.5 and log["epochs"] == 1
    assert log["positives_per_caption"] >= 1 and np.isfinite(log["losses"]).all()
    assert model.weights
    table = StringIO()
    call_command(
        "train",
        "--dataset=rel",
        "--model=m",
        "--relevance=bow",
        "--epochs=1",
        "--device=cpu",
        "--verbosity=0",
        stdout=table,
    )
    assert "bow relevance S >= 0.4" in table.getvalue()
    assert "positive videos per caption" in table.getvalue()


def test_jpose_joint_loss_sees_the_proxy_positives(world, monkeypatch):
    """JPoSE's joint space trains on S >= T; its PoS spaces keep their bag relevance."""
    seen = []
    original = training_module.batch_relevance

    def spy(data, caption_idx, video_idx, device):
        relevance = original(data, caption_idx, video_idx, device)
        own = data.caption_video[caption_idx][:, None] == video_idx[None, :]
        seen.append((int(relevance.tv.sum()), int(own.sum())))
        return relevance

    monkeypatch.setattr(training_module, "batch_relevance", spy)
    model = encoding.register_encoder(world, "j", "jpose")
    encoding.train(model, epochs=1, device="cpu", relevance="bow", threshold=0.2)
    assert seen and sum(tv for tv, _ in seen) > sum(own for _, own in seen)
    assert model.training_log[-1]["relevance"] == "bow"


def weights_state(model):
    """The model's weights path, the weights file's digest and its training log."""
    model.refresh_from_db()
    digest = hashlib.sha256(encoding.resolve(model.weights).read_bytes()).hexdigest()
    return model.weights, digest, model.training_log


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--relevance=bow", "--threshold=0"], r"threshold must be in \(0, 1\], got 0"),
        (["--relevance=syn", "--threshold=1.5"], r"threshold must be in \(0, 1\], got 1.5"),
        (["--relevance=pos", "--threshold=nan"], r"threshold: Enter a number"),
        (["--threshold=0.4"], "a threshold needs a proxy relevance"),
        (["--relevance=instance", "--threshold=0.4"], "a threshold needs a proxy relevance"),
        (["--relevance=cosine"], "relevance: Select a valid choice. cosine is not one of"),
    ],
)
def test_bad_combinations_are_refused_and_change_nothing(world, captured, args, message):
    model = encoding.register_encoder(world, "m", "mme")
    encoding.train(model, device="cpu")
    before = weights_state(model)
    with pytest.raises(CommandError, match=message):
        call_command("train", "--dataset=rel", "--model=m", *args, stdout=StringIO())
    assert weights_state(model) == before
    assert len(captured) == 1  # the encoder was never asked to fit again


def test_service_refuses_unknown_relevance(world, captured):
    model = encoding.register_encoder(world, "m", "mme")
    with pytest.raises(encoding.EncodingError, match="unknown relevance 'cosine'"):
        encoding.train(model, relevance="cosine")
    with pytest.raises(CommandError, match="relevance: Select a valid choice. cosine is not one"):
        call_command("train", dataset="rel", model="m", relevance="cosine", stdout=StringIO())
    model.refresh_from_db()
    assert not model.weights and not model.training_log and not captured
