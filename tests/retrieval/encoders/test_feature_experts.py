"""Feature experts: appearance, action and object sequences from frames, and uploaded .npz."""

import zipfile
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from retrieval.datasets.demo.render import render_frames
from retrieval.datasets.demo.scene import Background, Scene, SceneObject
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.encoders import service as encoding
from retrieval.encoders.features import (
    ACTION_NAMES,
    APPEARANCE_NAMES,
    EXPERT_DIMS,
    OBJECT_NAMES,
    extract_experts,
)
from retrieval.formats.expert_features import read_experts
from retrieval.formats.records import FormatError


def _scene(*objects: tuple[str, str, str], x: float = 0.5) -> Scene:
    placed = tuple(
        SceneObject(
            shape=shape,
            colour=colour,
            motion=motion,
            x=x + 0.3 * i - 0.15 * (len(objects) - 1),
            y=0.5,
            radius=0.11,
        )
        for i, (shape, colour, motion) in enumerate(objects)
    )
    return Scene(background=Background(kind="plain", colour=(38, 38, 46)), objects=placed, seed=1)


def _column(array: np.ndarray, names: tuple[str, ...], name: str) -> np.ndarray:
    return array[:, names.index(name)]


def test_shapes_dtypes_and_determinism():
    frames = render_frames(_scene(("circle", "red", "left"), x=0.75))
    first, second = extract_experts(frames), extract_experts(frames)
    assert first.appearance.shape == (16, EXPERT_DIMS["appearance"]) == (16, len(APPEARANCE_NAMES))
    assert first.action.shape == (15, len(ACTION_NAMES))
    assert first.objects.shape == (16, len(OBJECT_NAMES))  # one red region per frame
    for name, array in first.arrays().items():
        assert array.dtype == np.float32 and np.isfinite(array).all(), name
        np.testing.assert_array_equal(array, second.arrays()[name])
    assert first.pooled().shape == (sum(EXPERT_DIMS.values()),)


def test_action_follows_the_direction_of_each_colour():
    left = extract_experts(render_frames(_scene(("circle", "red", "left"), x=0.75)))
    right = extract_experts(render_frames(_scene(("circle", "red", "right"), x=0.25)))
    still = extract_experts(render_frames(_scene(("circle", "red", "still"))))
    red_dx = [_column(e.action, ACTION_NAMES, "bin00_dx").sum() for e in (left, right, still)]
    assert red_dx[0] < -2.0 and red_dx[1] > 2.0 and abs(red_dx[2]) < 0.2
    assert _column(still.action, ACTION_NAMES, "luma_change").max() < 0.01
    assert _column(left.action, ACTION_NAMES, "luma_change").mean() > 0.02
    vivid_x = _column(left.appearance, APPEARANCE_NAMES, "vivid_x")
    assert vivid_x[0] > 0.6 > 0.4 > vivid_x[-1]


def test_objects_are_regions_with_colour_and_shape():
    pair = extract_experts(
        render_frames(_scene(("circle", "red", "still"), ("square", "blue", "still")))
    )
    assert pair.objects.shape[0] == 32  # two regions in each of 16 frames
    hue_cos = _column(pair.objects, OBJECT_NAMES, "hue_cos")
    assert (hue_cos > 0.9).sum() == 16 and (hue_cos < -0.3).sum() == 16  # red, blue
    shapes = {
        shape: extract_experts(render_frames(_scene((shape, "yellow", "still")))).objects
        for shape in ("circle", "square", "star")
    }

    def symmetry(shape: str, order: int) -> float:
        return float(_column(shapes[shape], OBJECT_NAMES, f"symmetry{order}").mean())

    assert symmetry("square", 4) > symmetry("circle", 4) + 0.2
    assert symmetry("star", 5) > symmetry("circle", 5) + 0.5
    assert _column(shapes["circle"], OBJECT_NAMES, "time").tolist() == pytest.approx(
        np.linspace(0, 1, 16).tolist()
    )


def test_no_vivid_region_gives_one_empty_object():
    frames = np.full((16, 64, 64, 3), 40, dtype=np.uint8)
    experts = extract_experts(frames)
    assert experts.objects.shape == (1, len(OBJECT_NAMES)) and not experts.objects.any()


def _npz(path: Path, **arrays) -> Path:
    np.savez(path, **arrays)
    return path


def _good(t: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "appearance": rng.random((t, 6), dtype=np.float32),
        "action": rng.random((t, 3)),
        "objects": rng.integers(0, 5, (2, 5)),
    }


def test_read_experts_round_trip(tmp_path):
    arrays = _good()
    read = read_experts(_npz(tmp_path / "v.npz", **arrays))
    assert list(read) == ["appearance", "action", "objects"]
    for name, array in read.items():
        assert array.dtype == np.float32
        np.testing.assert_allclose(array, arrays[name], rtol=1e-6)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"objects": None}, r"v\.npz, field 'objects': missing array"),
        ({"action": np.zeros((4,))}, r"v\.npz, field 'action': expected a non-empty 2-D array"),
        ({"appearance": np.zeros((0, 6))}, r"v\.npz, field 'appearance': expected a non-empty"),
        ({"objects": np.zeros((2, 5), complex)}, r"v\.npz, field 'objects': expected real numbers"),
        ({"action": np.array([["a", "b"]])}, r"v\.npz, field 'action': expected real numbers"),
        ({"objects": np.array([[1.0, np.nan]])}, r"v\.npz, 'objects' row 1, field 'column 1'"),
    ],
)
def test_read_experts_names_file_and_array(tmp_path, change, message):
    arrays = {**_good(), **change}
    path = _npz(tmp_path / "v.npz", **{k: v for k, v in arrays.items() if v is not None})
    with pytest.raises(FormatError, match=message):
        read_experts(path)


def test_read_experts_refuses_pickles_and_non_archives(tmp_path):
    arrays = _good()
    with zipfile.ZipFile(tmp_path / "v.npz", "w") as archive:
        for name in ("appearance", "action"):
            with archive.open(f"{name}.npy", "w") as handle:
                np.save(handle, arrays[name])
        with archive.open("objects.npy", "w") as handle:
            np.save(handle, np.array([[object()]], dtype=object), allow_pickle=True)
    with pytest.raises(FormatError, match=r"field 'objects': holds Python objects"):
        read_experts(tmp_path / "v.npz")
    (tmp_path / "w.npz").write_bytes(b"not a zip")
    with pytest.raises(FormatError, match=r"w\.npz: not a readable \.npz archive"):
        read_experts(tmp_path / "w.npz")


@pytest.fixture
def world(db):
    return create_demo_dataset(name="tiny", n_videos=6, seed=4, workers=1)


def test_features_from_npz_store_experts_and_a_pooled_vector(world, tmp_path):
    keys = list(world.videos.order_by("key").values_list("key", flat=True))
    for number, key in enumerate(keys):
        _npz(tmp_path / f"{key}.npz", **_good(t=3 + number))
    bad = _good()
    bad["objects"] = np.zeros((2, 7))
    _npz(tmp_path / f"{keys[-1]}.npz", **bad)
    with pytest.raises(
        CommandError, match=rf"{keys[-1]}\.npz, field 'objects': 7 columns, others have 5"
    ):
        call_command("features", dataset="tiny", source=tmp_path, stdout=StringIO())
    assert not world.videos.exclude(features="").exists()
    _npz(tmp_path / f"{keys[-1]}.npz", **_good())
    call_command("features", dataset="tiny", source=tmp_path, stdout=StringIO())
    videos = list(world.videos.order_by("key"))
    experts = encoding.load_experts(videos)
    assert [e.appearance.shape[0] for e in experts[:-1]] == list(range(3, 3 + len(keys) - 1))
    np.testing.assert_allclose(experts[0].action, _good(t=3)["action"], rtol=1e-6)
    vectors = encoding.load_features(videos)
    assert vectors.shape == (len(keys), 6 + 3 + 5)
    np.testing.assert_allclose(vectors[0], experts[0].pooled())


def test_features_experts_from_the_demo_videos(world):
    call_command("features", dataset="tiny", stdout=StringIO())
    videos = list(world.videos.order_by("pk"))
    with pytest.raises(encoding.EncodingError, match="no feature experts"):
        encoding.load_experts(videos)
    call_command("features", dataset="tiny", experts=True, stdout=StringIO())
    experts = encoding.load_experts(videos)
    assert {e.appearance.shape for e in experts} == {(16, len(APPEARANCE_NAMES))}
    assert {e.action.shape for e in experts} == {(15, len(ACTION_NAMES))}
    assert all(e.objects.shape[0] >= 1 for e in experts)
    assert encoding.load_features(videos).shape[0] == len(videos)
