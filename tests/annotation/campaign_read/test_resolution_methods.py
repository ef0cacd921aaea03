"""Resolving a campaign by majority or Dawid-Skene, the confidence every export carries, and
simulated annotators with profiles, drift and timing."""

import csv
import io
import json
import uuid

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.campaign_read.exports import export_to_file
from annotation.campaign_read.resolution import campaign_resolution, resolve_campaign
from annotation.campaigns.service import CampaignSpec, create_campaign
from annotation.gold import service as gold
from annotation.judging import queue, submit
from annotation.models import Campaign, Pair
from annotation.simulation.live import (
    ADVERSARIAL,
    ALWAYS_IRRELEVANT,
    ERROR,
    RANDOM,
    Profile,
    SimulationError,
    crowd,
    parse_profiles,
    simulate,
    truth_for,
)
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.label_sets.service import import_label_file, load_judged
from retrieval.label_sets.status import CODES
from retrieval.models import LabelSet
from tests.factories import make_campaign, random_run

# Simulated crowds.


def test_parse_the_issues_crowd():
    profiles = parse_profiles(
        "careful=0.6:0.02,normal=0.2:0.08,spammer=0.1:random,lazy=0.1:always-irrelevant"
    )
    assert [(p.name, p.share, p.behaviour, p.error_rate) for p in profiles] == [
        ("careful", 0.6, ERROR, 0.02),
        ("normal", 0.2, ERROR, 0.08),
        ("spammer", 0.1, RANDOM, 0.0),
        ("lazy", 0.1, ALWAYS_IRRELEVANT, 0.0),
    ]
    assert [p.mean_seconds for p in profiles] == [4.0, 4.0, 0.8, 0.8]
    people = crowd(profiles, 10)
    assert [p.name for p in people] == ["careful"] * 6 + ["normal"] * 2 + ["spammer", "lazy"]
    # Largest remainder: 3 people of shares 0.6/0.2/0.1/0.1 are 1.8/0.6/0.3/0.3 -> 2, 1, 0, 0.
    assert [p.name for p in crowd(profiles, 3)] == ["careful", "careful", "normal"]


def test_profile_options_and_errors():
    (tired,) = parse_profiles("tired=1:0.02:6.5@100>0.3")
    assert (tired.seconds, tired.drift_after, tired.drift_error) == (6.5, 100, 0.3)
    assert tired.error_after(99) == 0.02 and tired.error_after(100) == 0.3
    (bad,) = parse_profiles("bad=1:adversarial")
    (no,) = parse_profiles("no=1:always-no")
    rng = np.random.default_rng(0)
    assert bad.behaviour == ADVERSARIAL and no.behaviour == ALWAYS_IRRELEVANT
    assert [bad.answer(t, 0, rng) for t in (True, False)] == [False, True]
    assert [no.answer(t, 0, rng) for t in (True, False)] == [False, False]
    answers = [tired.answer(True, 500, rng) for _ in range(4000)]
    assert abs(answers.count(False) / 4000 - 0.3) < 0.03  # 4.6 standard errors
    for text, words in [
        ("a=0.5:0.1", "add up to 0.5"),
        ("a=1:1.5", "error rate must be between 0 and 1"),
        ("a=1:sleepy", "unknown behaviour 'sleepy'"),
        ("a=1", "does not read as"),
        ("a=0.5:0.1,a=0.5:0.2", "same name"),
        ("a=1:0.1@10>2", "drift error must be between 0 and 1"),
    ]:
        with pytest.raises(SimulationError, match=words):
            parse_profiles(text)
    with pytest.raises(SimulationError, match="at least one annotator"):
        crowd([Profile("x")], 0)


@pytest.fixture
def demo_world(db):
    dataset = create_demo_dataset(name="rm", n_videos=45, seed=5, workers=1)
    runs = [random_run(dataset, "r1", 1), random_run(dataset, "r2", 2)]
    return dataset, runs


def _accuracy(campaign, resolution):
    truth = truth_for(campaign)
    pairs = {
        p.pk: p for p in Pair.objects.filter(campaign=campaign).select_related("caption", "video")
    }
    decided = resolution.status >= 0
    right = [
        (status == 1) == truth(pairs[pk])
        for pk, status in zip(
            resolution.pair_ids[decided].tolist(), resolution.status[decided].tolist(), strict=True
        )
    ]
    return float(np.mean(right)), len(right)


def test_dawid_skene_beats_majority_with_an_adversarial_annotator(demo_world):
    """Two careful annotators and one who always answers wrongly: majority believes the
    adversary's single labels and its agreements with a careful slip; Dawid-Skene learns its
    inverted confusion matrix from the doubled pairs and reads its answers the right way."""
    dataset, runs = demo_world
    campaign = create_campaign(
        dataset, runs, CampaignSpec(name="adv", depth=5, second_label_rate=0.5, seed=2)
    )
    result = simulate(
        campaign,
        annotators=3,
        seed=7,
        profiles=parse_profiles("careful=0.67:0.05,bad=0.33:adversarial"),
    )
    by_profile = {p.profile: p for p in result.people}
    assert by_profile["bad"].wrong == by_profile["bad"].judgements > 0
    majority = campaign_resolution(campaign, "majority")
    ds = campaign_resolution(campaign, "dawid-skene")
    assert majority.pair_ids.tolist() == ds.pair_ids.tolist()
    majority_accuracy, n = _accuracy(campaign, majority)
    ds_accuracy, _ = _accuracy(campaign, ds)
    assert n > 100
    assert majority_accuracy < 0.85
    assert ds_accuracy > 0.95
    assert ds_accuracy > majority_accuracy + 0.1
    bad = ds.fit["annotators"]["sim-bad-1"]
    assert bad["sensitivity"] < 0.05 and bad["specificity"] < 0.05

    label_set = resolve_campaign(campaign, "adv-ds", method="dawid-skene")
    assert label_set.metadata["method"] == "dawid-skene"
    assert label_set.metadata["dawid_skene"]["converged"] is True
    stored = load_judged(label_set)
    assert np.allclose(
        stored.confidence_of(ds.caption_ids, ds.video_ids), ds.confidence, equal_nan=True
    )
    assert set(stored.relevance.tolist()) <= {1, 0, -1}
    assert ((stored.confidence > 0.5) == (stored.relevance == 1)).all()


def test_majority_resolution_records_method_and_confidence(db, people):
    campaign = make_campaign(n_queries=2, depth=3, rate=1.0)
    for user, flip in ((people["annotator"], False), (people["other"], True)):
        while (current := queue.assign(campaign, user).current) is not None:
            relevant = (current.pair.video.key in ("v0", "v1")) != (
                flip and current.pair.video.key == "v1"
            )
            label = "relevant" if relevant else "irrelevant"
            submit.submit(user, current.pair.pk, label, uuid.uuid4(), 2.0)
    label_set = resolve_campaign(campaign)
    assert label_set.metadata["method"] == "majority"
    stored = load_judged(label_set)
    expected = np.select([stored.relevance == 1, stored.relevance == 0], [1.0, 0.0], 0.5)
    assert stored.confidence.tolist() == expected.tolist()
    # The tied pair (v1) waits for a third label: pending, so in neither resolution.
    statuses = dict(Pair.objects.filter(campaign=campaign).values_list("video__key", "status"))
    assert statuses["v1"] == "pending"


def test_a_gold_campaign_pair_keeps_its_gold_label_under_dawid_skene(db, people, tmp_path):
    campaign = make_campaign(n_queries=1, depth=3, rate=0.0)
    while (current := queue.assign(campaign, people["annotator"]).current) is not None:
        submit.submit(people["annotator"], current.pair.pk, "relevant", uuid.uuid4(), 2.0)
    path = tmp_path / "g.csv"
    path.write_text("caption_key,video_key,label,explanation\nc0,v1,irrelevant,No.\n")
    gold.import_gold(campaign, path)
    ds = campaign_resolution(campaign, "dawid-skene")
    keys = dict(Pair.objects.filter(campaign=campaign).values_list("pk", "video__key"))
    by_key = {
        keys[pk]: (status, conf)
        for pk, status, conf in zip(
            ds.pair_ids.tolist(), ds.status.tolist(), ds.confidence.tolist(), strict=True
        )
    }
    # Its only label says relevant; the gold label wins, with certainty.
    assert by_key["v1"] == (CODES["irrelevant"], 0.0)
    assert len(by_key) == 3


def test_exports_carry_the_dawid_skene_confidence(demo_world, tmp_path):
    dataset, runs = demo_world
    campaign = create_campaign(
        dataset, runs, CampaignSpec(name="exp", depth=3, second_label_rate=0.5, seed=1)
    )
    simulate(campaign, annotators=3, seed=3, profiles=parse_profiles("c=0.67:0.1,b=0.33:random"))
    # Majority exports are unchanged: no confidence column.
    export_to_file(campaign, "csv", tmp_path / "m.csv", "majority")
    assert "confidence" not in (tmp_path / "m.csv").read_text().splitlines()[0]
    ds = campaign_resolution(campaign, "dawid-skene")
    expected = {
        pk: conf for pk, conf in zip(ds.pair_ids.tolist(), ds.confidence.tolist(), strict=True)
    }
    resolve_campaign(campaign, "exp-ds", method="dawid-skene")
    # The default method is the campaign's last resolution's.
    export_to_file(campaign, "csv", tmp_path / "d.csv")
    rows = list(csv.DictReader(io.StringIO((tmp_path / "d.csv").read_text())))
    keys = {
        (c, v): pk
        for pk, c, v in Pair.objects.filter(campaign=campaign).values_list(
            "pk", "caption__key", "video__key"
        )
    }
    assert len(rows) == len(expected)
    for row in rows:
        pk = keys[(row["caption_key"], row["video_key"])]
        assert float(row["confidence"]) == pytest.approx(expected[pk])
        assert (row["label"] == "relevant") == (expected[pk] > 0.5)
    export_to_file(campaign, "jsonl", tmp_path / "d.jsonl", "dawid-skene")
    lines = [json.loads(line) for line in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert {keys[(x["caption_key"], x["video_key"])]: x["confidence"] for x in lines} == (
        pytest.approx(expected)
    )
    export_to_file(campaign, "fire-json", tmp_path / "d.fire.json", "dawid-skene")
    document = json.loads((tmp_path / "d.fire.json").read_text())
    assert document["method"] == "dawid-skene"
    entries = document["annotations"] + document["disagreements"]
    assert len(entries) == len(expected)
    assert all(0.0 <= entry["confidence"] <= 1.0 for entry in entries)
    # A label file with confidences reads back into a label set that keeps them.
    report = import_label_file(dataset, tmp_path / "d.csv", "csv", name="back")
    back = load_judged(report.label_set)
    assert np.allclose(back.confidence_of(ds.caption_ids, ds.video_ids), ds.confidence)
    report = import_label_file(dataset, tmp_path / "d.fire.json", "fire-json", name="back-f")
    assert report.label_set.pair_count > 0


def test_resolve_campaign_command_method(db, people, capsys):
    campaign = make_campaign(n_queries=1, depth=3)
    while (current := queue.assign(campaign, people["annotator"]).current) is not None:
        submit.submit(people["annotator"], current.pair.pk, "irrelevant", uuid.uuid4(), 2.0)
    call_command(
        "resolve_campaign",
        "--campaign",
        campaign.name,
        "--method",
        "dawid-skene",
        "--format",
        "json",
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["method"] == "dawid-skene" and summary["irrelevant"] == 3
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("resolve_campaign", "--campaign", campaign.name, "--method", "vote")


def test_simulate_annotators_command_profiles(demo_world, capsys):
    dataset, runs = demo_world
    create_campaign(dataset, runs, CampaignSpec(name="cmd", depth=2, second_label_rate=0.0))
    call_command(
        "simulate_annotators",
        "--campaign",
        "cmd",
        "--annotators",
        "4",
        "--profile",
        "careful=0.5:0.0,lazy=0.25:always-no,fast=0.25:random:0.5",
        "--format",
        "json",
    )
    result = json.loads(capsys.readouterr().out)
    people = {p["username"]: p for p in result["people"]}
    assert set(people) == {"sim-careful-1", "sim-careful-2", "sim-lazy-1", "sim-fast-1"}
    assert people["sim-careful-1"]["wrong"] == 0
    assert sum(p["judgements"] for p in people.values()) == result["judgements"]
    assert Campaign.objects.get(name="cmd").pairs.filter(status="pending").count() == 0
    with pytest.raises(CommandError, match="add up to"):
        call_command("simulate_annotators", "--campaign", "cmd", "--profile", "a=0.5:0.1")


def test_resolve_from_the_campaigns_page_by_method(db, people):
    campaign = make_campaign(n_queries=1, depth=3)
    while (current := queue.assign(campaign, people["annotator"]).current) is not None:
        submit.submit(people["annotator"], current.pair.pk, "irrelevant", uuid.uuid4(), 2.0)
    client = Client()
    client.force_login(people["admin"])
    page = client.get("/campaigns/").content.decode()
    assert '<option value="dawid-skene">' in page
    response = client.post(f"/campaigns/{campaign.pk}/resolve/", {"method": "dawid-skene"})
    assert response.status_code == 302
    assert LabelSet.objects.get(metadata__campaign_id=campaign.pk).metadata["method"] == (
        "dawid-skene"
    )
    page = client.get("/campaigns/").content.decode()
    assert '<option value="dawid-skene" selected>' in page
    response = client.post(f"/campaigns/{campaign.pk}/resolve/", {"method": "vote"}, follow=True)
    assert "Unknown resolution method" in response.content.decode()
    assert LabelSet.objects.get(metadata__campaign_id=campaign.pk).metadata["method"] == (
        "dawid-skene"
    )


def test_simulating_two_campaigns_with_the_same_seed(demo_world):
    """Each submit gets a fresh client id: the same seed in a second campaign (or a second
    round in the same one) must not replay the first one's ids, which the queue refuses."""
    dataset, runs = demo_world
    first, second = (
        create_campaign(dataset, runs, CampaignSpec(name=name, depth=2, second_label_rate=0.0))
        for name in ("same-seed-1", "same-seed-2")
    )
    done = [simulate(campaign, annotators=2, seed=4).judgements for campaign in (first, second)]
    assert done[0] == done[1] > 0
    for campaign in (first, second):
        assert campaign.pairs.filter(status="pending").count() == 0
