"""``replay_judging`` on a small demo world: the JSON layout, its numbers, and label sets."""

import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.simulation.replay import METRICS
from annotation.simulation.replay_service import replay_world
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import store_label_set
from retrieval.models import Dataset
from tests.factories import random_run


@pytest.fixture
def world(db):
    dataset = create_demo_dataset(name="replay", n_videos=24, seed=6, workers=1)
    random_run(dataset, "a", seed=1)
    random_run(dataset, "b", seed=2)
    return dataset


def replay_json(**options) -> dict:
    out = io.StringIO()
    call_command("replay_judging", dataset="replay", format="json", stdout=out, **options)
    return json.loads(out.getvalue())


def test_json_layout_and_complete_judging_has_no_error(world):
    data = replay_json(truth=True, runs="all", depth=3, strategy="maxmean", seeds=2)
    assert set(data) == {"strategy", "pool_pairs", "pool_positives", "steps", "exact_after"}
    assert data["strategy"] == "maxmean"
    last = data["steps"][-1]
    assert last["judged"] == data["pool_pairs"]
    assert last["positives_found"] == data["pool_positives"]
    assert set(last["errors"]) == {"a", "b"}
    assert all(last["errors"][run][m] == 0 for run in ("a", "b") for m in METRICS)
    found = [step["positives_found"] for step in data["steps"]]
    assert found == sorted(found)
    # Unjudged pairs count as irrelevant, so partial judging never over-scores C@K (AP can:
    # its R shrinks too).
    first = data["steps"][0]["errors"]
    assert all(first[run][f"C@{k}"] <= 0 for run in ("a", "b") for k in (1, 5, 10))
    assert any(first[run][m] != 0 for run in ("a", "b") for m in METRICS)
    assert 0 < data["exact_after"] <= data["pool_pairs"]


def test_metric_first_is_exact_after_its_needed_pairs(world):
    data = replay_json(truth=True, runs="a,b", depth=3, strategy="metric-first", seeds=1, steps=40)
    exact = data["exact_after"]
    for step in data["steps"]:
        if step["judged"] >= exact:
            assert all(step["errors"][run][f"C@{k}"] == 0 for run in ("a", "b") for k in (1, 5, 10))


def test_a_complete_label_set_replays_like_the_truth(world):
    replayed, _ = replay_world(world, None, 3, None)
    pool = replayed.pool
    store_label_set(
        world,
        "complete",
        Judged.build(pool.caption_ids, pool.video_ids, replayed.labels.astype(np.int64)),
        source="jsonl",
    )
    options = {"runs": "all", "depth": 3, "strategy": "mtf", "seeds": 3}
    assert replay_json(labels="complete", **options) == replay_json(truth=True, **options)


def test_a_budget_limits_the_steps_and_table_output(world):
    data = replay_json(truth=True, depth=3, strategy="rbp-adaptive", budget=7, seeds=1, steps=7)
    assert [step["judged"] for step in data["steps"]] == list(range(1, 8))
    out = io.StringIO()
    call_command(
        "replay_judging", dataset="replay", truth=True, depth=3, strategy="depth", stdout=out
    )
    assert out.getvalue().startswith("depth: ") and "positives" in out.getvalue()


def test_errors_are_clear(world):
    with pytest.raises(CommandError, match="no run named 'ghost'"):
        replay_json(truth=True, runs="a,ghost", strategy="depth")
    Dataset.objects.create(name="plain")
    with pytest.raises(CommandError, match="no ground truth"):
        call_command("replay_judging", dataset="plain", truth=True, strategy="depth")
    with pytest.raises(CommandError, match="no label set named"):
        replay_json(labels="nope", strategy="depth")


def test_a_label_set_of_disagreements_only_is_a_clear_error(world):
    """A set that decides no pair leaves every query unlabelled: a ReplayError, not an
    IndexError from looking up the empty set's last row (the -1 a clipped position became)."""
    replayed, _ = replay_world(world, None, 3, None)
    pool = replayed.pool
    store_label_set(
        world,
        "undecided",
        Judged.build(pool.caption_ids[:2], pool.video_ids[:2], [-1, -1]),
        source="jsonl",
    )
    with pytest.raises(CommandError, match="no query has a completely labelled pool"):
        replay_json(labels="undecided", strategy="depth", depth=3)


def test_a_run_shorter_than_the_depth_replays_and_its_page_answers(world, client):
    """A run ranking fewer videos than the pool depth (a short upload) is padded with "no known
    positive" past its end; the judging-orders page compares the orders instead of failing."""
    from django.contrib.auth import get_user_model

    from config import roles
    from retrieval.models import Caption, RetrievalModel
    from retrieval.search.runs import RankedLists
    from retrieval.search.runs_service import load_run, store_run

    full = load_run(world.runs.get(name="a"))
    model = RetrievalModel.objects.create(dataset=world, name="short", source="run")
    short = RankedLists(full.query_ids, full.item_ids[:, :2], full.scores[:, :2])
    store_run(model, "short", short)
    replayed, dropped = replay_world(world, None, 10, None)
    assert dropped == 0 and replayed.run_names == ("a", "b", "short")
    assert replayed.known_positive.shape[1:] == (3, 10)
    # Brute force: rank r of run j holds a known positive iff it holds the caption's own video.
    own = dict(Caption.objects.filter(dataset=world).values_list("pk", "video_id"))
    rows = np.unique(replayed.pool.caption_ids)
    for j, name in enumerate(replayed.run_names):
        lists = load_run(world.runs.get(name=name))
        listed = dict(zip(lists.query_ids.tolist(), lists.item_ids.tolist(), strict=True))
        for i, caption in enumerate(rows.tolist()):
            items = listed.get(caption, [])[:10]
            expected = [r < len(items) and items[r] == own[caption] for r in range(10)]
            assert replayed.known_positive[i, j].tolist() == expected, (name, caption)
    user = get_user_model().objects.create_user("short-researcher")
    user.groups.add(roles.ensure_groups()[roles.RESEARCHER])
    client.force_login(user)
    page = client.get(f"/reports/{world.name}/judging-orders/")
    assert page.status_code == 200, page.content[:500]
    for replay in page.context["comparison"].replays:
        assert replay.steps[-1].positives_found == replay.pool_positives
        assert all(error == 0 for run in replay.steps[-1].errors.values() for error in run.values())
