"""A ground-truth dataset and captions or videos without ground truth.

An import into a synthetic world is refused when the file gives no scene or assertion (no
caption file can), with the file, line and field. Rows stored before that refusal existed
(or edited by hand) do not break pages: their queries are left out of the true-label scores
and the pages say how many.
"""

import io
import json

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.simulation.replay_service import replay_world
from config import roles
from retrieval.datasets.demo.service import create_demo_dataset, ground_truth_relevance
from retrieval.datasets.importing import import_dataset
from retrieval.formats.records import FormatError
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import store_label_set
from retrieval.models import Caption, Dataset, Video
from retrieval.scoring.rescoring_service import rescore_dataset
from retrieval.search.runs_service import load_run
from tests.factories import random_run


@pytest.fixture
def world(db):
    """A 24-clip demo world (no runs yet)."""
    return create_demo_dataset(name="gaps", n_videos=24, seed=7, workers=1), Judged


def _researcher(client):
    user = get_user_model().objects.create_user("gap-researcher")
    user.groups.add(roles.ensure_groups()[roles.RESEARCHER])
    client.force_login(user)
    return client


def _counts(dataset: Dataset) -> tuple[int, int, dict]:
    dataset.refresh_from_db()
    return dataset.captions.count(), dataset.videos.count(), dataset.metadata


def test_an_import_into_a_ground_truth_dataset_is_refused_at_its_first_line(world, tmp_path):
    dataset, _ = world
    video = dataset.videos.filter(split="test").order_by("key").first()
    lines = [
        {"video_id": video.key, "caption_id": "extra-0", "caption": "a red ball", "split": "test"},
        {"video_id": "new-clip", "caption_id": "extra-1", "caption": "a box", "split": "test"},
    ]
    path = tmp_path / "extra.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    before = _counts(dataset)
    with pytest.raises(FormatError) as caught:
        import_dataset(dataset.name, "jsonl", path)
    error = caught.value
    assert (error.line, error.field) == (1, "caption_id")
    text = str(error)
    assert "extra.jsonl" in text and "line 1" in text and "caption_id" in text
    assert "ground truth" in text and "'extra-0'" in text
    assert _counts(dataset) == before
    # A new dataset of the same file is an ordinary import.
    assert import_dataset("not-a-world", "jsonl", path).captions == 2


def _add_stored_query(dataset: Dataset) -> Caption:
    """A query caption without an assertion, as an import stored one before refusing them."""
    video = dataset.videos.filter(split="test").order_by("key").first()
    return Caption.objects.create(
        dataset=dataset, key="zz-extra", text="a caption nobody generated", video=video,
        split="test", is_query=True,
    )  # fmt: skip


def _true_mean_by_brute_force(dataset: Dataset, run_name: str, k: int) -> float:
    """Mean C@k under the exhaustive truth over the queries that have a positive, a video
    without a scene counting as not relevant."""
    keys, video_keys, truth = ground_truth_relevance(dataset, split="test")
    lists = load_run(dataset.runs.get(name=run_name))
    key_of = dict(Caption.objects.filter(dataset=dataset).values_list("pk", "key"))
    video_key = dict(Video.objects.filter(dataset=dataset).values_list("pk", "key"))
    row, col = {key: i for i, key in enumerate(keys)}, {v: j for j, v in enumerate(video_keys)}
    hits = []
    for caption, items in zip(lists.query_ids.tolist(), lists.item_ids.tolist(), strict=True):
        if key_of[caption] not in row or not truth[row[key_of[caption]]].any():
            continue
        top = [video_key[v] for v in items[:k] if v >= 0]
        hits.append(any(v in col and truth[row[key_of[caption]], col[v]] for v in top))
    return float(np.mean(hits))


def test_a_stored_query_without_ground_truth_is_left_out_and_counted(world, client):
    """The report, the leaderboard, its exports and the rescore command answer, with true-label
    scores over the queries that have ground truth (checked by brute force) and a note."""
    dataset, Judged = world
    _add_stored_query(dataset)
    for name, seed in (("alpha", 1), ("beta", 2)):
        random_run(dataset, name, seed)
    alpha = load_run(dataset.runs.get(name="alpha"))
    top = alpha.item_ids[:, :3]
    store_label_set(
        dataset,
        "top3",
        Judged.build(np.repeat(alpha.query_ids, 3), top.ravel(), np.zeros(top.size, np.int64)),
        source="jsonl",
    )
    result = rescore_dataset(dataset, dataset.label_sets.get()).result
    assert result.n_queries == dataset.captions.filter(split="test", is_query=True).count()
    for run in ("alpha", "beta"):
        for k in (1, 5, 10):
            expected = _true_mean_by_brute_force(dataset, run, k)
            assert result.means("true")[run][f"C@{k}"] == pytest.approx(expected)
    note = "1 query has no stored ground truth and is left out of the true-label scores"
    assert note in result.notes

    _researcher(client)
    base = f"/datasets/{dataset.name}/leaderboard"
    for url in (
        f"{base}/",
        f"{base}/?labels=top3",
        *(f"{base}/export/{fmt}/?labels=top3" for fmt in ("csv", "json", "latex")),
        f"/reports/{dataset.name}/",
        f"/reports/{dataset.name}/?labels=top3",
        f"/reports/{dataset.name}/data/?labels=top3",
    ):
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:300])
        if "/export/csv/" not in url and "/export/latex/" not in url:  # tables without notes
            assert note in response.content.decode(), url
    out = io.StringIO()
    call_command("rescore", "--dataset", dataset.name, "--labels", "top3", stdout=out)
    assert note in out.getvalue()


def test_the_judging_orders_replay_leaves_such_queries_out(world, client):
    dataset, _ = world
    extra = _add_stored_query(dataset)
    random_run(dataset, "alpha", 1)
    page = _researcher(client).get(f"/reports/{dataset.name}/judging-orders/")
    assert page.status_code == 200, page.content[:300]
    comparison = page.context["comparison"]
    assert comparison.dropped_queries == 1
    assert comparison.queries == dataset.captions.filter(split="test", is_query=True).count() - 1
    assert (
        "1 left out: some of their pooled pairs have no stored ground truth"
        in page.content.decode()
    )
    assert extra.pk not in set(replay_world(dataset, None, 10, None)[0].pool.caption_ids.tolist())


def test_a_video_without_a_scene_counts_as_not_relevant_and_is_said(world):
    dataset, _ = world
    video = dataset.videos.filter(split="test").order_by("key").first()
    Video.objects.filter(pk=video.pk).update(metadata={})
    random_run(dataset, "alpha", 1)
    keys, video_keys, _ = ground_truth_relevance(dataset, split="test")
    assert video.key not in video_keys and len(keys) == dataset.captions.count()
    result = rescore_dataset(dataset).result
    assert "1 video has no stored scene: the true labels count them not relevant" in result.notes
    for k in (1, 5, 10):
        expected = _true_mean_by_brute_force(dataset, "alpha", k)
        assert result.means("true")["alpha"][f"C@{k}"] == pytest.approx(expected)
