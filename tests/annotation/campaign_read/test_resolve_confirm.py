"""Dawid-Skene resolution into an existing label set asks first (a GET or an unconfirmed POST
shows what would be replaced and writes nothing), and tells how many majority labels the
model overturned, and whose, counted as a brute-force loop over the judgements counts them."""

import numpy as np
import pytest
from django.test import Client

from annotation.campaign_read.labels import load_campaign_labels
from annotation.campaign_read.resolution import campaign_resolution, overturned
from annotation.campaigns.service import CampaignSpec, create_campaign
from annotation.models import Judgement
from annotation.simulation.live import parse_profiles, simulate
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.label_sets.status import LabelStatus
from retrieval.models import LabelSet
from tests.factories import random_run

REL, IRR, DIS = LabelStatus.RELEVANT, LabelStatus.IRRELEVANT, LabelStatus.DISAGREEMENT


def brute_force(majority, model, pairs, annotators, labels, n_annotators):
    flipped = settled = 0
    for m, d in zip(majority, model, strict=True):
        if m in (REL, IRR) and d in (REL, IRR) and m != d:
            flipped += 1
        if m == DIS and d in (REL, IRR):
            settled += 1
    whose = [0] * n_annotators
    for p, a, label in zip(pairs, annotators, labels, strict=True):
        if p < 0:
            continue
        m, d = majority[p], model[p]
        if m in (REL, IRR) and d in (REL, IRR) and m != d and label != d:
            whose[a] += 1
    return flipped, settled, whose


@pytest.mark.parametrize("seed", range(20))
def test_overturn_counts_match_a_brute_force_count(seed):
    rng = np.random.default_rng(seed)
    n, m, k = int(rng.integers(0, 30)), int(rng.integers(0, 120)), int(rng.integers(1, 6))
    codes = np.array([REL, IRR, DIS, LabelStatus.PENDING])
    majority, model = rng.choice(codes, n), rng.choice(codes, n)
    pairs = rng.integers(-1, n, m) if n else np.full(m, -1)
    annotators, labels = rng.integers(0, k, m), rng.integers(0, 2, m)
    got = overturned(majority, model, pairs, annotators, labels, k)
    flipped, settled, whose = brute_force(majority, model, pairs, annotators, labels, k)
    assert (got.pairs, got.settled, got.by_annotator.tolist()) == (flipped, settled, whose)


@pytest.fixture
def adversarial(db):
    """Two careful annotators and one who always answers wrongly: Dawid-Skene overturns the
    majority where the adversary's single label decided it."""
    dataset = create_demo_dataset(name="rc", n_videos=30, seed=5, workers=1)
    runs = [random_run(dataset, "r1", 1), random_run(dataset, "r2", 2)]
    campaign = create_campaign(
        dataset, runs, CampaignSpec(name="adv", depth=4, second_label_rate=0.5, seed=2)
    )
    simulate(
        campaign,
        annotators=3,
        seed=7,
        profiles=parse_profiles("careful=0.67:0.05,bad=0.33:adversarial"),
    )
    return campaign


def test_the_stored_overturns_match_a_brute_force_count_over_the_database(adversarial):
    majority = campaign_resolution(adversarial, "majority")
    ds = campaign_resolution(adversarial, "dawid-skene")
    turned = ds.fit["overturned"]
    position = {pk: i for i, pk in enumerate(majority.pair_ids.tolist())}
    data = load_campaign_labels(adversarial)
    rows = list(
        Judgement.objects.filter(pair__campaign=adversarial, undone_at=None).values_list(
            "pair_id", "annotator__username", "label"
        )
    )
    names = sorted({name for _, name, _ in rows})
    flipped, settled, whose = brute_force(
        majority.status.tolist(),
        ds.status.tolist(),
        [position.get(pk, -1) for pk, _, _ in rows],
        [names.index(name) for _, name, _ in rows],
        [1 if label == "relevant" else 0 for _, _, label in rows],
        len(names),
    )
    assert len(rows) == len(data.labels)
    assert turned["pairs"] == flipped > 0 and turned["settled_disagreements"] == settled
    assert turned["annotators"] == {
        name: count for name, count in zip(names, whose, strict=True) if count
    }
    assert list(turned["annotators"])[0] == "sim-bad-1"  # the most overturned first


def test_replacing_a_set_by_dawid_skene_asks_first(adversarial, people):
    admin = Client()
    admin.force_login(people["admin"])
    url = f"/campaigns/{adversarial.pk}/resolve/"
    first = admin.post(url, {"method": "dawid-skene"}, follow=True)
    assert first.status_code == 200
    message = first.content.decode()
    stored = LabelSet.objects.get(metadata__campaign_id=adversarial.pk)
    turned = stored.metadata["dawid_skene"]["overturned"]
    assert f"The model overturned {turned['pairs']} majority labels" in message
    assert f"sim-bad-1 {turned['annotators']['sim-bad-1']}" in message

    # Asked: a GET and an unconfirmed POST show what would be replaced, and write nothing.
    for answer in (
        admin.get(url, {"method": "dawid-skene"}),
        admin.post(url, {"method": "dawid-skene"}),
    ):
        assert answer.status_code == 200
        page = answer.content.decode()
        assert 'id="resolve-replaces"' in page and stored.name in page
        assert f"{stored.pair_count} pairs" in page and 'name="confirm" value="yes"' in page
    assert LabelSet.objects.get(pk=stored.pk).created_at == stored.created_at

    done = admin.post(url, {"method": "dawid-skene", "confirm": "yes"})
    assert done.status_code == 302
    (replaced,) = LabelSet.objects.filter(metadata__campaign_id=adversarial.pk)
    assert replaced.created_at >= stored.created_at and replaced.metadata["method"] == "dawid-skene"
    # Majority re-resolution does not ask (as before).
    assert admin.post(url, {"method": "majority"}).status_code == 302


def test_odd_methods_and_roles(adversarial, people):
    url = f"/campaigns/{adversarial.pk}/resolve/"
    admin = Client()
    admin.force_login(people["admin"])
    assert admin.get(url, {"method": "x" * 500}).status_code == 302
    assert admin.get(url).status_code == 200  # majority, new set: says what it will make
    researcher = Client()
    researcher.force_login(people["researcher"])
    assert researcher.get(url).status_code == 403
    assert Client().get(url).status_code == 302
    assert not LabelSet.objects.filter(metadata__campaign_id=adversarial.pk).exists()
