"""``simulate_campaign`` on a small demo world: the JSON every policy prints, the table, and the
errors that name what is wrong."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from retrieval.datasets.demo.service import create_demo_dataset
from tests.factories import random_run


@pytest.fixture
def world(db):
    dataset = create_demo_dataset(name="sim", n_videos=30, seed=5, workers=1)
    random_run(dataset, "a", seed=1)
    random_run(dataset, "b", seed=2)
    return dataset


def simulate(**options) -> dict:
    out = io.StringIO()
    call_command(
        "simulate_campaign", dataset="sim", format="json", stdout=out, verbosity=0, **options
    )
    return json.loads(out.getvalue())


@pytest.mark.parametrize("policy", ["fire", "adaptive", "active"])
def test_every_policy_prints_labels_and_scores_beside_fire(world, policy):
    data = simulate(policy=policy, seeds=2, depth=3, annotators=8)
    assert data["policy"] == policy and data["runs"] == ["a", "b"]
    labels = data["labels"]
    assert labels["fire"] > 0 and labels["policy"] > 0
    assert labels["share"] == pytest.approx(labels["policy"] / labels["fire"])
    if policy == "fire":
        assert labels["share"] == 1
    assert len(data["seeds"]) == 2
    for seed in data["seeds"]:
        assert set(seed["labels"]["policy_by_kind"]) == {"campaign", "gold", "qualification"}
    rows = data["scores"]
    assert {(row["run"], row["metric"]) for row in rows} == {
        (run, metric) for run in ("a", "b") for metric in ("C@1", "C@5", "C@10", "AP", "nDCG@10")
    }
    for row in rows:
        assert row["low"] <= row["estimate"] + 1e-9 and row["estimate"] <= row["high"] + 1e-9
        assert 0 <= row["true"] <= 100
        assert row["error"] == pytest.approx(
            sum(s["estimate"] for s in seeds_of(data, row)) / 2 - row["true"]
        )


def seeds_of(data, row):
    return [
        s for seed in data["seeds"] for s in seed["scores"]
        if (s["run"], s["metric"]) == (row["run"], row["metric"])
    ]  # fmt: skip


def test_active_takes_an_assessor_proxies_and_shuffled_features(world):
    data = simulate(
        policy="active", seeds=1, depth=3, annotators=8, assessor_kappa=0.6,
        settle="c@1,AP", half_width=5, shuffle_features=True,
    )  # fmt: skip
    assert data["assessor_kappa"] == 0.6 and data["shuffled_features"] is True
    assert data["settle"] == ["C@1", "AP"]
    assert data["seeds"][0]["stages"] >= 1


def test_the_table_names_the_labels_and_every_score(world):
    out = io.StringIO()
    call_command(
        "simulate_campaign", dataset="sim", policy="adaptive", depth=3, annotators=8,
        stdout=out, verbosity=0,
    )  # fmt: skip
    text = out.getvalue()
    assert "labels against FIRE's" in text
    assert text.count("nDCG@10") == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"crowd": "0.5:0.1"}, "add up to 0.5"),
        ({"crowd": "1:sometimes"}, "KIND must be"),
        ({"settle": "c@1,map"}, "--settle takes"),
        ({"assessor_kappa": 1.5}, "--assessor-kappa"),
        ({"runs": "a,nope"}, "nope"),
        ({"seeds": 0}, "seeds"),
    ],
)
def test_bad_options_name_what_is_wrong(world, options, message):
    with pytest.raises(CommandError, match=message):
        simulate(policy="active", depth=3, **options)


def test_a_dataset_without_a_truth_is_refused(db):
    from retrieval.models import Dataset

    Dataset.objects.create(name="plain")
    with pytest.raises(CommandError, match="no ground truth"):
        call_command("simulate_campaign", dataset="plain", policy="fire", verbosity=0)


def test_help_says_how_a_crowd_is_described(capsys):
    with pytest.raises(SystemExit):
        call_command("simulate_campaign", "--help")
    text = capsys.readouterr().out
    assert "SHARE:KIND" in text and "random" in text and "8% of pairs" in text
