"""Judge only what is missing: a campaign of one run's unjudged top-k pairs, and the label
set version its resolution makes."""

import numpy as np
import pytest

from annotation.campaign_read.resolution import resolve_campaign
from annotation.campaigns.service import CampaignError, CampaignSpec, create_campaign
from annotation.models import Campaign
from annotation.simulation.live import simulate
from jobs.models import Job
from retrieval.label_sets.service import LabelSetError, load_judged
from retrieval.models import Caption, LabelSet
from retrieval.scoring.leaderboard_service import build_leaderboard, read_request
from retrieval.search.runs_service import load_run
from tests.factories import make_campaign, pooled_world, random_run

IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu"],
    }
}


@pytest.fixture
def world(db):
    """pooled_world's dataset (label set "pooled" judging alpha's and beta's top 3) plus an
    unpooled random run "gamma"."""
    dataset = pooled_world("missing-world")
    gamma = random_run(dataset, "gamma", 3)
    return dataset, gamma, LabelSet.objects.get(dataset=dataset, name="pooled")


def top_pairs(run, depth: int) -> set[tuple[int, int]]:
    """Every (caption, video) pair in the run's top ``depth``, by brute force."""
    lists = load_run(run)
    return {
        (caption, video)
        for q, caption in enumerate(lists.query_ids.tolist())
        for video in lists.item_ids[q, :depth].tolist()
    }


def own_pairs(dataset) -> set[tuple[int, int]]:
    return set(Caption.objects.filter(dataset=dataset).values_list("pk", "video_id"))


def set_pairs(label_set) -> set[tuple[int, int]]:
    judged = load_judged(label_set)
    return set(zip(judged.caption_ids.tolist(), judged.video_ids.tolist(), strict=True))


def campaign_pairs(campaign) -> set[tuple[int, int]]:
    return set(campaign.pairs.values_list("caption_id", "video_id"))


def test_the_campaign_pools_exactly_the_pairs_the_set_and_the_campaigns_lack(world):
    dataset, gamma, base = world
    depth = min(gamma.depth, 6)
    # Another campaign (of alpha) has judged a few pairs: they are not asked again.
    alpha = dataset.runs.get(name="alpha")
    other = create_campaign(dataset, [alpha], CampaignSpec(name="alpha-deep", depth=depth))
    simulate(other, annotators=1, error_rate=0.0, max_judgements=12)
    judged_there = set(other.pairs.exclude(label_count=0).values_list("caption_id", "video_id"))
    assert judged_there
    spec = CampaignSpec(name="gamma missing", depth=depth, extends="pooled")
    campaign = create_campaign(dataset, [gamma], spec)
    expected = top_pairs(gamma, depth) - set_pairs(base) - own_pairs(dataset) - judged_there
    assert expected and campaign_pairs(campaign) == expected
    assert campaign.options["extends"] == base.pk


def test_an_unknown_label_set_is_refused_and_nothing_is_written(world):
    dataset, gamma, _ = world
    with pytest.raises(CampaignError, match="no label set named 'nope'"):
        create_campaign(dataset, [gamma], CampaignSpec(name="x", depth=3, extends="nope"))
    assert not Campaign.objects.filter(name="x").exists()


def test_resolving_makes_a_new_version_and_leaves_the_old_one_alone(world):
    dataset, gamma, base = world
    depth = min(gamma.depth, 10)
    before = (bytes(base.arrays), base.pair_count, base.relevant_count)
    board = build_leaderboard(dataset, base, resamples=50, permutations=50)
    old_row = next(row for row in board.rows if row.run == "gamma")
    assert old_row.judged < 1.0

    campaign = create_campaign(
        dataset, [gamma], CampaignSpec(name="gamma missing", depth=depth, extends="pooled")
    )
    simulate(campaign, annotators=2, error_rate=0.0)
    version = resolve_campaign(campaign)

    base.refresh_from_db()
    assert (bytes(base.arrays), base.pair_count, base.relevant_count) == before
    assert version.pk != base.pk
    assert version.parent_id == base.pk and version.version == 2
    assert version.name == "pooled v2"
    assert version.metadata["parent"] == "pooled"
    # Pooled runs: the base's (alpha, beta at depth 3) and the campaign's, at the shallower depth.
    assert version.metadata["pooled_runs"] == ["alpha", "beta", "gamma"]
    assert version.metadata["pool_depth"] == 3
    assert set_pairs(version) == set_pairs(base) | campaign_pairs(campaign)
    # The new labels are the truth (error rate 0): the version's relevance agrees.
    new = load_judged(version)
    relevant = set(campaign.pairs.filter(status="relevant").values_list("caption_id", "video_id"))
    got = {
        (c, v)
        for c, v, r in zip(new.caption_ids, new.video_ids, new.relevance, strict=True)
        if r == 1 and (int(c), int(v)) in campaign_pairs(campaign)
    }
    assert got == relevant

    # Under the new version gamma's top 10 is fully judged, and its row changes.
    board = build_leaderboard(dataset, version, resamples=50, permutations=50)
    new_row = next(row for row in board.rows if row.run == "gamma")
    assert new_row.judged == pytest.approx(1.0)
    assert new_row.corrected != old_row.corrected or relevant == set()

    # Re-resolving replaces this campaign's version, never the base.
    again = resolve_campaign(campaign)
    assert again.name == "pooled v2" and again.parent_id == base.pk
    assert LabelSet.objects.filter(dataset=dataset).count() == 2

    # The leaderboard request lists both versions, oldest first, whichever is chosen.
    for chosen in ("pooled", "pooled v2"):
        asked = read_request(dataset, chosen, None)
        assert [s.name for s in asked.versions] == ["pooled", "pooled v2"]


def test_a_version_of_a_version_is_numbered_on(world):
    dataset, gamma, base = world
    first = create_campaign(dataset, [gamma], CampaignSpec(name="g1", depth=2, extends="pooled"))
    simulate(first, annotators=1, error_rate=0.0)
    v2 = resolve_campaign(first)
    second = create_campaign(dataset, [gamma], CampaignSpec(name="g2", depth=4, extends=v2.name))
    # Nothing the second version's parent judges is pooled again.
    assert not campaign_pairs(second) & set_pairs(v2)
    simulate(second, annotators=1, error_rate=0.0)
    v3 = resolve_campaign(second)
    assert (v3.name, v3.version, v3.parent_id) == ("pooled v3", 3, v2.pk)
    assert set_pairs(v3) == set_pairs(v2) | campaign_pairs(second)
    # v2 now has a later version: resolving its campaign again may not replace it.
    with pytest.raises(LabelSetError, match="has later versions"):
        resolve_campaign(first)
    assert LabelSet.objects.get(pk=v2.pk).arrays == v2.arrays
    assert [s.name for s in read_request(dataset, "pooled", None).versions] == [
        "pooled",
        "pooled v2",
        "pooled v3",
    ]


def test_the_page_shows_what_is_missing_and_starts_the_pool_job(
    world, people, client, settings, django_capture_on_commit_callbacks
):
    settings.TASKS = IMMEDIATE
    dataset, gamma, base = world
    client.force_login(people["admin"])
    url = f"/campaigns/missing/{dataset.name}/"
    page = client.get(url, {"run": "gamma", "labels": "pooled"})
    assert page.status_code == 200
    depth = min(gamma.depth, 10)
    expected = top_pairs(gamma, depth) - set_pairs(base) - own_pairs(dataset)
    missing = page.context["missing"]
    assert missing.pairs == len(expected) and missing.judged_elsewhere == 0
    assert f"<strong>{len(expected)}</strong> pair" in page.content.decode()
    assert not Campaign.objects.filter(dataset=dataset).exists()  # a GET writes nothing

    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            url,
            {
                "run": "gamma",
                "labels": "pooled",
                "name": missing.suggested_name,
                "judging_order": "metric-first",
                "second_label_rate": "0",
                "gold_rate": "0",
                "qualification": "0",
                "settle": ["AP", "C@1"],
                "half_width": "2",
            },
        )
    assert answer.status_code == 302
    job = Job.objects.get(kind="pool")
    assert answer["Location"] == f"/jobs/{job.pk}/"
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    campaign = Campaign.objects.get(name=missing.suggested_name)
    assert campaign.options["extends"] == base.pk
    assert campaign.options["judging_order"]["strategy"] == "metric-first"
    assert (campaign.settings.settle, campaign.settings.half_width) == (("C@1", "AP"), 2.0)
    assert campaign_pairs(campaign) == expected

    # The same name again is a form error on the page, and no second job.
    again = client.post(url, {"run": "gamma", "labels": "pooled", "name": missing.suggested_name})
    assert again.status_code == 400
    assert "already exists" in again.content.decode()
    assert Job.objects.filter(kind="pool").count() == 1
    # The suggested name now avoids the taken one.
    assert (
        client.get(url, {"run": "gamma", "labels": "pooled"}).context["missing"].suggested_name
        == f"{missing.suggested_name} 2"
    )


@pytest.mark.parametrize(
    "query", [{"run": "nope", "labels": "pooled"}, {"run": "gamma", "labels": "x\ny"}, {}]
)
def test_unknown_runs_and_sets_are_404s(world, people, client, query):
    dataset, _, _ = world
    client.force_login(people["admin"])
    assert client.get(f"/campaigns/missing/{dataset.name}/", query).status_code == 404


def test_the_leaderboard_offers_the_button_to_admins_only(world, people, client):
    dataset, _, _ = world
    url = f"/datasets/{dataset.name}/leaderboard/"
    client.force_login(people["admin"])
    page = client.get(url, {"labels": "pooled"}).content.decode()
    assert 'class="judge-missing"' in page and "run=gamma" in page
    client.force_login(people["researcher"])
    assert 'class="judge-missing"' not in client.get(url, {"labels": "pooled"}).content.decode()


@pytest.mark.django_db
def test_a_run_the_label_set_covers_wholly_misses_nothing():
    """Nothing lacking: no query for judged pairs of no caption (an empty ``IN``)."""
    from annotation.campaigns.service import judged_pairs
    from annotation.judging.statements import queryset_array
    from annotation.models import Pair

    campaign = make_campaign(n_queries=2)
    captions, videos = judged_pairs(campaign.dataset, np.zeros(0, np.int64))
    assert captions.size == videos.size == 0
    empty = queryset_array(
        Pair.objects.filter(pk__in=[]).values_list("id"), np.dtype([("id", np.int64)])
    )
    assert empty.size == 0
