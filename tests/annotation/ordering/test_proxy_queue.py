"""Proxy-ordered judging queue and proxy auto-labels (proxies of Wray et al., CVPR 2021, §4.4):
off by default, exported."""

import csv
import json
import uuid

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.campaign_read.exports import export_to_file
from annotation.campaigns.service import campaign_split
from annotation.judging import queue, submit
from annotation.models import Pair
from annotation.ordering.proxy import auto_labels, order_within_captions, rule_text
from annotation.ordering.proxy_queue import auto_label, order_queue
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.formats import fire_json
from retrieval.proxies.service import ProxyError, ProxyOptions, proxy_relevance
from tests.factories import random_run_campaign


def test_order_within_captions_by_hand():
    captions = np.array([7, 7, 7, 3, 3, 9])
    positions = np.array([0, 1, 2, 3, 4, 5])
    scores = np.array([0.1, 0.9, 0.5, 0.2, 0.2, 0.4])
    new = order_within_captions(captions, positions, scores)
    # Caption 7: 0.9 first, then 0.5, then 0.1; caption 3 is a tie (old order kept).
    assert new.tolist() == [2, 0, 1, 3, 4, 5]
    # Non-contiguous positions are only permuted; a NaN keeps its slot.
    new = order_within_captions(
        np.array([1, 1, 1, 1]), np.array([10, 12, 14, 16]), np.array([0.1, np.nan, 0.3, 0.2])
    )
    assert new.tolist() == [16, 12, 10, 14]
    assert order_within_captions(np.array([]), np.array([]), np.array([])).tolist() == []
    with pytest.raises(ValueError, match="same length"):
        order_within_captions(np.array([1]), np.array([1, 2]), np.array([0.1]))


def test_order_within_captions_is_a_permutation_per_caption():
    rng = np.random.default_rng(0)
    captions = np.repeat(np.arange(30), 5)
    positions = rng.permutation(150)
    scores = np.round(rng.random(150), 1)
    new = order_within_captions(captions, positions, scores)
    for caption in range(30):
        block = captions == caption
        assert sorted(new[block]) == sorted(positions[block])
        order = np.argsort(new[block])
        # Descending score; ties in old-position order.
        keys = list(zip(-scores[block][order], positions[block][order], strict=True))
        assert keys == sorted(keys)


def test_auto_labels_and_thresholds():
    scores = np.array([0.0, 0.05, 0.5, 0.9, 1.0, np.nan])
    assert auto_labels(scores, 0.9, 0.05).tolist() == [0, 0, -1, 1, 1, -1]
    assert auto_labels(scores, None, 0.0).tolist() == [0, -1, -1, -1, -1, -1]
    assert auto_labels(scores, 1.0, None).tolist() == [-1, -1, -1, -1, 1, -1]
    assert auto_labels(scores, 0.9, 0.05).dtype == np.int8
    for relevant_at, irrelevant_at in (
        (0.5, 0.5),
        (0.3, 0.6),
        (1.2, 0.1),
        (0.9, -0.1),
        (None,) * 2,
    ):
        with pytest.raises(ValueError):
            auto_labels(scores, relevant_at, irrelevant_at)
    with pytest.raises(ValueError):
        auto_labels(scores, float("nan"), 0.1)
    assert rule_text("bow", ">=", 0.9) == "bow>=0.90"
    assert rule_text("met", "<=", 0.125) == "met<=0.125"


@pytest.fixture
def campaign(db):
    dataset = create_demo_dataset(name="pq", n_videos=24, seed=3, workers=1)
    return random_run_campaign(dataset, "pq-c", depth=6, seed=1)


def _scores(campaign):
    pairs = list(Pair.objects.filter(campaign=campaign).order_by("position"))
    relevance = proxy_relevance(
        campaign.dataset, ProxyOptions("bow", split=campaign_split(campaign))
    )
    scores = relevance.pair_scores(
        np.array([p.caption_id for p in pairs]), np.array([p.video_id for p in pairs])
    )
    return pairs, dict(zip([p.pk for p in pairs], scores.tolist(), strict=True))


def test_order_queue_serves_the_best_pair_first(campaign):
    before, scores = _scores(campaign)
    blocks = {}
    for pair in before:
        blocks.setdefault(pair.caption_id, []).append(pair.position)
    assert not np.isnan(list(scores.values())).any()
    result = order_queue(campaign, "bow")
    campaign.refresh_from_db()
    assert campaign.options["queue_order"] == result and result["proxy"] == "bow"
    after = list(Pair.objects.filter(campaign=campaign).order_by("position"))
    assert len({p.position for p in after}) == len(after)
    moved = sum(p.position != q.position for p in after for q in before if p.pk == q.pk)
    assert result["pairs_moved"] == moved > 0
    for caption, positions in blocks.items():
        mine = [p for p in after if p.caption_id == caption]
        assert sorted(p.position for p in mine) == sorted(positions)
        assert [scores[p.pk] for p in mine] == sorted((scores[p.pk] for p in mine), reverse=True)
    first = after[0]
    annotator = get_user_model().objects.create_user("fresh", password="pw-fresh-123")
    task = queue.assign(campaign, annotator).current
    assert task.pair.pk == first.pk
    best = max(scores[p.pk] for p in after if p.caption_id == first.caption_id)
    assert scores[task.pair.pk] == best


def test_auto_label_takes_pairs_out_of_the_queue_and_exports_show_it(campaign, tmp_path):
    _, scores = _scores(campaign)
    values = np.array(list(scores.values()))
    high, low = np.quantile(values, 0.8), np.quantile(values, 0.2)
    result = auto_label(campaign, "bow", float(high), float(low))
    auto = {p.pk: p for p in Pair.objects.filter(campaign=campaign).exclude(auto_label="")}
    assert result["relevant"] == sum(v >= high for v in values) > 0
    assert result["irrelevant"] == sum(v <= low for v in values) > 0
    assert len(auto) == result["relevant"] + result["irrelevant"]
    campaign.refresh_from_db()
    assert campaign.options["auto_label"]["relevant_at"] == float(high)
    for pk, pair in auto.items():
        assert pair.needed == 0 and pair.open_slots == 0 and pair.label_count == 0
        if scores[pk] >= high:
            assert pair.status == "relevant" and pair.auto_label == rule_text("bow", ">=", high)
        else:
            assert pair.status == "irrelevant" and pair.auto_label == rule_text("bow", "<=", low)
    # Annotators judge everything else and never see an auto-labelled pair.
    annotator = get_user_model().objects.create_user("judge", password="pw-judge-123")
    served = set()
    while (task := queue.assign(campaign, annotator).current) is not None:
        served.add(task.pair.pk)
        submit.submit(annotator, task.pair.pk, "irrelevant", uuid.uuid4())
    assert served and not served & set(auto)
    assert served | set(auto) == set(
        Pair.objects.filter(campaign=campaign).values_list("pk", flat=True)
    )

    export_to_file(campaign, "csv", tmp_path / "l.csv")
    with open(tmp_path / "l.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(served) + len(auto)
    marked = [row for row in rows if row["auto_label"]]
    assert len(marked) == len(auto)
    assert all(row["labels"] == "0" for row in marked)
    assert {row["auto_label"] for row in rows} >= {"", rule_text("bow", ">=", high)}
    export_to_file(campaign, "jsonl", tmp_path / "l.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "l.jsonl").read_text().splitlines()]
    assert sum(bool(line["auto_label"]) for line in lines) == len(auto)
    export_to_file(campaign, "fire-json", tmp_path / "l.fire.json")
    document = json.loads((tmp_path / "l.fire.json").read_text())
    assert sum("auto_label" in entry for entry in document["annotations"]) == len(auto)
    parsed = fire_json.read_fire_json(tmp_path / "l.fire.json")
    assert sum(bool(entry.auto_label) for entry in parsed.annotations) == len(auto)


def test_invalid_settings_change_nothing(campaign):
    snapshot = list(Pair.objects.filter(campaign=campaign).values_list("pk", "position", "status"))
    with pytest.raises(ValueError):
        auto_label(campaign, "bow", 0.2, 0.5)
    with pytest.raises(ProxyError, match="unknown proxy"):
        order_queue(campaign, "nope")
    with pytest.raises(CommandError, match="irrelevant_at < relevant_at"):
        call_command(
            "proxy_queue",
            "--campaign",
            campaign.name,
            "--proxy",
            "bow",
            "--auto-relevant-at",
            "0.1",
            "--auto-irrelevant-at",
            "0.3",
        )
    with pytest.raises(CommandError, match="nothing to do"):
        call_command("proxy_queue", "--campaign", campaign.name, "--proxy", "bow")
    with pytest.raises(CommandError, match="no campaign"):
        call_command("proxy_queue", "--campaign", "missing", "--proxy", "bow", "--order")
    assert (
        list(Pair.objects.filter(campaign=campaign).values_list("pk", "position", "status"))
        == snapshot
    )
    campaign.refresh_from_db()
    assert campaign.options == {}


def test_command_applies_and_reports_json(campaign, capsys):
    call_command(
        "proxy_queue",
        "--campaign",
        campaign.name,
        "--proxy",
        "bow",
        "--order",
        "--auto-relevant-at",
        "0.99",
        "--format",
        "json",
    )
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"campaign", "auto_label", "queue_order"}
    campaign.refresh_from_db()
    assert campaign.options["queue_order"]["proxy"] == "bow"
    assert campaign.options["auto_label"]["relevant"] == report["auto_label"]["relevant"]
    assert (
        Pair.objects.filter(campaign=campaign).exclude(auto_label="").count()
        == (report["auto_label"]["relevant"])
    )
