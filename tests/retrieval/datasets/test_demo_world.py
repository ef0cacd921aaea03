"""The synthetic demo world: determinism, the FIRE §3.1 relevance rule, clips, service, command."""

import json
import re
from io import StringIO
from pathlib import Path

import av
import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from retrieval.datasets.demo import captions as grammar
from retrieval.datasets.demo import service as demo_service
from retrieval.datasets.demo.captions import captions_for_scene
from retrieval.datasets.demo.render import (
    FPS,
    N_FRAMES,
    OBJECT_RGB,
    SIZE,
    render_frames,
    write_webm,
)
from retrieval.datasets.demo.scene import (
    MOVING,
    Assertion,
    Background,
    ObjectSpec,
    Scene,
    SceneObject,
    is_relevant,
    relevance_matrix,
    sample_scene,
)
from retrieval.datasets.demo.service import (
    DemoDatasetExists,
    create_demo_dataset,
    ground_truth_relevance,
)
from retrieval.datasets.demo.world import TEST, TRAIN, build_world
from retrieval.models import Caption, Dataset, Video

PLAIN = Background(kind="plain", colour=(38, 38, 46))
STRIPES = Background(kind="stripes", colour=(38, 38, 46), colour2=(90, 90, 90), stripe_width=0.1)
GRASS = Background(kind="grass", colour=(46, 104, 34), colour2=(78, 150, 52))


def obj(shape="circle", colour="red", motion="still", x=0.5, y=0.5, radius=0.12):
    return SceneObject(shape=shape, colour=colour, motion=motion, x=x, y=y, radius=radius)


def scene(*objects, background=PLAIN):
    return Scene(background=background, objects=tuple(objects), seed=7)


def spec(**kwargs):
    return ObjectSpec(**kwargs)


def claim(*specs, background=None, relation=None):
    return Assertion(objects=tuple(specs), background=background, relation=relation)


@pytest.fixture(scope="module")
def world():
    return build_world(600, seed=0)


# --- determinism -------------------------------------------------------------------------


def test_same_seed_gives_the_same_world_and_other_seeds_differ():
    first, again = build_world(40, seed=3), build_world(40, seed=3)
    assert first == again
    other = build_world(40, seed=4)
    assert [v.scene for v in other.videos] != [v.scene for v in first.videos]
    assert [c.text for c in other.captions] != [c.text for c in first.captions]


def test_keys_splits_and_queries(world):
    keys = [v.key for v in world.videos]
    assert keys[0] == "demo-v0001" and len(set(keys)) == 600
    test_videos = [v for v in world.videos if v.split == TEST]
    assert len(test_videos) == 200
    by_video: dict[str, list] = {}
    for caption in world.captions:
        by_video.setdefault(caption.video_key, []).append(caption)
        assert caption.key.startswith(f"{caption.video_key}-c")
    for video in world.videos:
        own = by_video[video.key]
        queries = [c for c in own if c.is_query]
        assert all(c.split == video.split for c in own)
        assert len(queries) == (1 if video.split == TEST else 0)
        if video.split == TRAIN:
            assert 4 <= len(own) <= 6
        else:
            assert len(own) >= 2
        assert len({c.text for c in own}) == len(own)


def test_scene_and_assertion_survive_json(world):
    for video in world.videos[:50]:
        assert Scene.from_dict(json.loads(json.dumps(video.scene.to_dict()))) == video.scene
    for caption in world.captions[:200]:
        data = json.loads(json.dumps(caption.assertion.to_dict()))
        assert Assertion.from_dict(data) == caption.assertion


# --- the relevance rule (FIRE §3.1) ------------------------------------------------------


def test_every_stated_attribute_must_be_present():
    red_ball_left = scene(obj("circle", "red", "left"), background=STRIPES)
    assert is_relevant(claim(spec(shape="circle", colour="red")), red_ball_left)
    assert is_relevant(claim(spec(motion="left"), background="stripes"), red_ball_left)
    assert not is_relevant(claim(spec(shape="circle", colour="blue")), red_ball_left)
    assert not is_relevant(claim(spec(shape="square")), red_ball_left)
    assert not is_relevant(claim(spec(motion="right")), red_ball_left)
    assert not is_relevant(claim(spec(shape="circle"), background="grass"), red_ball_left)
    # Attributes must hold of the same object: a red square and a blue ball are no red ball.
    mixed = scene(obj("square", "red", x=0.25), obj("circle", "blue", x=0.75))
    assert not is_relevant(claim(spec(shape="circle", colour="red")), mixed)


def test_moving_means_any_motion_but_still():
    moving = claim(spec(motion=MOVING))
    assert is_relevant(moving, scene(obj(motion="bouncing")))
    assert is_relevant(moving, scene(obj(motion="still", x=0.25), obj(motion="up", x=0.75)))
    assert not is_relevant(moving, scene(obj(motion="still")))
    assert is_relevant(claim(spec(motion="still")), scene(obj(motion="still")))


def test_counts_are_exact_and_apply_to_the_whole_description():
    two_squares = claim(spec(shape="square", count=2))
    squares = [
        obj("square", "red", x=0.2),
        obj("square", "red", x=0.5),
        obj("square", "blue", x=0.8),
    ]
    assert is_relevant(two_squares, scene(*squares[:2]))
    assert not is_relevant(two_squares, scene(*squares[:1]))
    assert not is_relevant(two_squares, scene(*squares))
    assert is_relevant(claim(spec(shape="square", colour="red", count=2)), scene(*squares))
    assert is_relevant(claim(spec(count=3)), scene(*squares))
    assert not is_relevant(claim(spec(count=2)), scene(*squares))
    # A singular noun phrase means "at least one".
    assert is_relevant(claim(spec(shape="square")), scene(*squares))


def test_relations_need_distinct_objects():
    past = claim(
        spec(shape="circle", colour="red", motion="left"),
        spec(shape="star", colour="blue"),
        relation="past",
    )
    both = scene(obj("circle", "red", "left", x=0.7, y=0.3), obj("star", "blue", y=0.75))
    assert is_relevant(past, both)
    assert not is_relevant(past, scene(obj("circle", "red", "left", x=0.7)))
    wrong_motion = scene(obj("circle", "red", "right", x=0.3, y=0.3), obj("star", "blue", y=0.75))
    assert not is_relevant(past, wrong_motion)
    two_balls = claim(spec(shape="circle"), spec(shape="circle"), relation="and")
    assert not is_relevant(two_balls, scene(obj("circle")))
    assert is_relevant(two_balls, scene(obj("circle", x=0.25), obj("circle", x=0.75)))


def test_generic_captions_are_relevant_to_many_videos(world):
    scenes = [v.scene for v in world.videos]
    generic = relevance_matrix([claim(spec(motion=MOVING))], scenes)[0]
    specific = relevance_matrix(
        [claim(spec(shape="star", colour="red", motion="left"), background="grass")], scenes
    )[0]
    assert generic.mean() > 0.6
    assert specific.sum() < 10


def test_every_caption_is_relevant_to_its_origin(world):
    matrix = world.relevance()
    column = {v.key: i for i, v in enumerate(world.videos)}
    origins = np.array([column[c.video_key] for c in world.captions])
    assert matrix[np.arange(len(world.captions)), origins].all()


def test_relevance_matrix_agrees_with_is_relevant():
    small = build_world(80, seed=11)
    captions = list(small.captions)
    matrix = small.relevance(captions)
    expected = np.array(
        [[is_relevant(c.assertion, v.scene) for v in small.videos] for c in captions]
    )
    assert matrix.dtype == bool
    assert (matrix == expected).all()
    assert 0 < matrix.mean() < 1


def test_some_queries_have_false_negatives_and_some_only_their_origin(world):
    relevant = world.relevance(world.queries(), split=TEST).sum(axis=1)
    assert (relevant >= 1).all()
    assert (relevant > 1).sum() >= 20
    assert (relevant == 1).sum() >= 20


def test_relevance_matrix_is_fast(world):
    import time

    assertions = [c.assertion for c in world.captions]
    scenes = [v.scene for v in world.videos]
    started = time.perf_counter()
    relevance_matrix(assertions, scenes)
    assert time.perf_counter() - started < 3


# --- the grammar: text and assertion agree -----------------------------------------------


def _words(options):
    return "|".join(sorted((re.escape(o) for o in options), key=len, reverse=True))


def _stated(text, table):
    """Which canonical values of ``table`` (value -> words) occur in ``text``."""
    return {
        value
        for value, words in table.items()
        if re.search(rf"\b({_words(words)})\b", text.replace("-", " "))
    }


def test_caption_text_states_exactly_the_asserted_attributes(world):
    colour_words = {c: [w.replace("-", " ") for w in ws] for c, ws in grammar.COLOUR_WORDS.items()}
    shape_words = {
        s: [w for pair in pairs for w in pair] for s, pairs in grammar.SHAPE_NOUNS.items()
    }
    background_words = grammar.BACKGROUND_PHRASES
    for caption in world.captions:
        specs = caption.assertion.objects
        text = caption.text
        colours = _stated(text, colour_words)
        # "lime-green" and "lemon-yellow" each name one colour.
        assert colours == {s.colour for s in specs if s.colour}, text
        assert _stated(text, shape_words) == {s.shape for s in specs if s.shape}, text
        assert _stated(text, background_words) == (
            {caption.assertion.background} if caption.assertion.background else set()
        ), text
        for s in specs:
            if s.count:
                assert text.startswith(grammar.NUMBER_WORDS[s.count]), text
            if s.motion:
                phrases = [p for pair in grammar.MOTION_PHRASES[s.motion] for p in pair]
                if s.motion in grammar.ROLL_PHRASES:
                    phrases += grammar.ROLL_PHRASES[s.motion]
                assert any(p in text for p in phrases), text
        if caption.assertion.relation:
            assert f" {caption.assertion.relation} " in text, text


def test_synonyms_map_to_one_colour_and_shape(world):
    texts = {c.text: c.assertion for c in world.captions}
    crimson = [a for t, a in texts.items() if re.search(r"\bcrimson\b", t)]
    assert crimson and all(any(s.colour == "red" for s in a.objects) for a in crimson)
    balls = [a for t, a in texts.items() if re.search(r"\b(ball|disc)s?\b", t)]
    assert balls and all(any(s.shape == "circle" for s in a.objects) for a in balls)
    levels = {c.level for c in world.captions}
    assert levels == set(grammar.LEVELS)


def test_captions_for_scene_are_distinct_and_true():
    rng = np.random.default_rng(5)
    for _ in range(30):
        s = sample_scene(rng)
        generated = captions_for_scene(rng, s, 6, query=True)
        assert len({g.text for g in generated}) == len(generated) >= 4
        assert all(is_relevant(g.assertion, s) for g in generated)


# --- rendering ---------------------------------------------------------------------------


def _decode(path):
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def test_clip_decodes_with_expected_frames_size_and_colours(tmp_path):
    s = scene(
        obj("square", "red", "still", x=0.3, y=0.5, radius=0.15),
        obj("circle", "yellow", "right", x=0.2, y=0.2),
    )
    frames = render_frames(s)
    assert frames.shape == (N_FRAMES, SIZE, SIZE, 3) and frames.dtype == np.uint8
    path = tmp_path / "clip.webm"
    write_webm(frames, path, FPS)
    decoded = _decode(path)
    assert decoded.shape == (N_FRAMES, SIZE, SIZE, 3)
    red = np.array(OBJECT_RGB["red"])
    assert np.abs(decoded[0, 64, 38].astype(int) - red).max() < 40
    assert np.abs(decoded[0, 120, 120].astype(int) - np.array(PLAIN.colour)).max() < 20
    # The yellow ball moves right: its centroid's x grows by about TRAVEL * SIZE pixels.
    yellow = np.array(OBJECT_RGB["yellow"])

    def centroid_x(frame):
        ys, xs = np.nonzero(np.abs(frame.astype(int) - yellow).max(axis=2) < 50)
        return xs.mean()

    assert centroid_x(decoded[-1]) - centroid_x(decoded[0]) > 40
    with av.open(str(path)) as container:
        assert container.streams.video[0].codec_context.name == "vp9"
        assert abs(container.duration / 1e6 - N_FRAMES / FPS) < 0.2


@pytest.mark.parametrize("shape", ["circle", "square", "star", "cross", "triangle"])
def test_spinning_is_visible_for_every_shape(shape):
    frames = render_frames(scene(obj(shape, "blue", "spinning")))
    patch = frames[:, 40:88, 40:88].astype(int)
    for t in range(1, N_FRAMES):
        assert np.abs(patch[t] - patch[0]).sum() > 0
    assert np.abs(patch[N_FRAMES // 2] - patch[0]).mean() > 2


def test_growing_and_bouncing_are_visible():
    grow = render_frames(scene(obj("star", "orange", "growing"))).astype(int)
    area = (np.abs(grow - np.array(OBJECT_RGB["orange"])).max(axis=3) < 40).sum(axis=(1, 2))
    assert area[-1] > 4 * area[0]
    bounce = render_frames(scene(obj("square", "green", "bouncing", y=0.75))).astype(int)
    mask = np.abs(bounce - np.array(OBJECT_RGB["green"])).max(axis=3) < 40
    heights = [np.nonzero(m)[0].mean() for m in mask]
    assert max(heights) - min(heights) > 20
    assert abs(heights[0] - heights[-1]) < 3


def test_same_scene_gives_identical_frames_and_bytes(tmp_path):
    s = build_world(3, seed=2).videos[0].scene
    first, second = render_frames(s), render_frames(s)
    assert np.array_equal(first, second)
    write_webm(first, tmp_path / "a.webm")
    write_webm(second, tmp_path / "b.webm")
    assert (tmp_path / "a.webm").read_bytes() == (tmp_path / "b.webm").read_bytes()


def test_grass_texture_and_stripes_are_textured():
    for background in (GRASS, STRIPES):
        frame = render_frames(scene(obj(x=0.5, y=0.5), background=background))[0]
        assert frame[:, :, 1].std() > 5


# --- service and command -----------------------------------------------------------------


@pytest.mark.django_db
def test_service_writes_clips_and_rows(settings):
    calls = []
    dataset = create_demo_dataset(
        "small", n_videos=12, seed=1, workers=1, progress=lambda d, t: calls.append((d, t))
    )
    assert calls[-1] == (12, 12)
    assert dataset.has_ground_truth and dataset.source_format == "demo"
    assert dataset.metadata["seed"] == 1 and dataset.metadata["n_videos"] == 12
    assert dataset.metadata["generator_version"] == 1
    videos = list(Video.objects.filter(dataset=dataset))
    assert len(videos) == 12
    for video in videos:
        assert video.media.name == f"demo/small/{video.key}.webm"
        assert (Path(settings.MEDIA_ROOT) / video.media.name).is_file()
        assert video.duration == pytest.approx(N_FRAMES / FPS)
        assert Scene.from_dict(video.metadata["scene"]).objects
    tests = sum(v.split == TEST for v in videos)
    assert tests == 4
    assert Caption.objects.filter(dataset=dataset, is_query=True).count() == tests
    assert not Caption.objects.filter(dataset=dataset, is_query=True, split=TRAIN).exists()
    world = build_world(12, seed=1)
    stored = list(
        Caption.objects.filter(dataset=dataset).order_by("key").values_list("key", "text")
    )
    assert stored == sorted((c.key, c.text) for c in world.captions)
    leftovers = [p.name for p in (Path(settings.MEDIA_ROOT) / "demo").iterdir()]
    assert leftovers == ["small"]


@pytest.mark.django_db
def test_ground_truth_relevance_reads_the_database():
    dataset = create_demo_dataset("gt", n_videos=12, seed=2, workers=1)
    caption_keys, video_keys, matrix = ground_truth_relevance(dataset)
    assert matrix.shape == (len(caption_keys), 12) and video_keys == sorted(video_keys)
    column = {key: i for i, key in enumerate(video_keys)}
    for row, key in enumerate(caption_keys):
        assert matrix[row, column[key.rsplit("-c", 1)[0]]]
    world = build_world(12, seed=2)
    assert np.array_equal(matrix, world.relevance())
    queries = Caption.objects.filter(dataset=dataset, is_query=True)
    q_keys, t_keys, q_matrix = ground_truth_relevance(
        dataset, caption_ids=queries.values_list("id", flat=True), split=TEST
    )
    assert len(q_keys) == 4 and len(t_keys) == 4 and q_matrix.shape == (4, 4)


@pytest.mark.django_db
def test_existing_name_is_refused_unless_replaced(settings):
    create_demo_dataset("dup", n_videos=3, seed=0, workers=1)
    with pytest.raises(DemoDatasetExists):
        create_demo_dataset("dup", n_videos=3, seed=0, workers=1)
    replaced = create_demo_dataset("dup", n_videos=5, seed=1, workers=1, replace=True)
    assert Dataset.objects.filter(name="dup").count() == 1
    assert replaced.videos.count() == 5
    assert len(list((Path(settings.MEDIA_ROOT) / "demo" / "dup").iterdir())) == 5


@pytest.mark.django_db
def test_failure_leaves_no_files_and_no_rows(settings, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("database down")

    monkeypatch.setattr(demo_service, "_write_rows", broken)
    with pytest.raises(RuntimeError):
        create_demo_dataset("broken", n_videos=3, workers=1)
    assert not Dataset.objects.filter(name="broken").exists()
    assert list((Path(settings.MEDIA_ROOT) / "demo").iterdir()) == []


@pytest.mark.django_db
def test_process_pool_renders_the_same_clips(settings):
    create_demo_dataset("pool", n_videos=4, seed=3, workers=2)
    create_demo_dataset("serial", n_videos=4, seed=3, workers=1)
    root = Path(settings.MEDIA_ROOT) / "demo"
    for path in sorted((root / "serial").iterdir()):
        assert (root / "pool" / path.name).read_bytes() == path.read_bytes()


@pytest.mark.django_db
def test_demo_command_builds_once_and_if_missing_is_idempotent():
    out = StringIO()
    call_command("demo", videos=12, seed=0, name="cmd", verbosity=0, stdout=out, no_models=True)
    assert "12 videos (8 train, 4 test)" in out.getvalue()
    assert "Relevant test videos per query caption" in out.getvalue()
    again = StringIO()
    call_command(
        "demo", videos=12, name="cmd", if_missing=True, no_models=True, verbosity=0, stdout=again
    )
    assert "already exists" in again.getvalue()
    assert Dataset.objects.filter(name="cmd").count() == 1
    with pytest.raises(CommandError, match="--replace"):
        call_command("demo", videos=12, name="cmd", verbosity=0, stdout=StringIO(), no_models=True)
