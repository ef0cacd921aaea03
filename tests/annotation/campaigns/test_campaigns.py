"""Creating campaigns: pooling runs from the database and writing pairs in bulk."""

import numpy as np
import pytest

from annotation.campaigns.service import (
    CampaignError,
    CampaignSpec,
    checked_pool,
    create_campaign,
    load_provenance,
)
from annotation.models import Campaign, Pair
from annotation.policy import rules as policy
from retrieval.models import Caption, Dataset, RetrievalModel, Video
from retrieval.search.runs import RankedLists
from retrieval.search.runs_service import store_run


@pytest.fixture
def setup(db):
    dataset = Dataset.objects.create(name="d")
    videos = Video.objects.bulk_create(
        [Video(dataset=dataset, key=f"v{i}", split="test") for i in range(8)]
    )
    captions = Caption.objects.bulk_create(
        [
            Caption(
                dataset=dataset,
                key=f"c{i}",
                text=f"t{i}",
                video=videos[i],
                split="test",
                is_query=True,
            )
            for i in range(4)
        ]
    )
    v = [video.pk for video in videos]
    c = np.array([caption.pk for caption in captions])

    def run(name, rows):
        model = RetrievalModel.objects.create(dataset=dataset, name=name, source="run")
        items = np.array([[v[i] for i in row] for row in rows])
        scores = -np.arange(items.shape[1], dtype=float)[None, :].repeat(len(rows), 0)
        return store_run(model, name, RankedLists(c, items, scores))

    # Caption i's own video is v[i]; it must never be pooled.
    a = run("a", [[0, 5, 6], [7, 1, 2], [3, 4, 2], [3, 0, 1]])
    b = run("b", [[5, 7, 0], [2, 6, 1], [5, 2, 3], [6, 3, 4]])
    return dataset, (a, b), v, c


def pairs_of(campaign):
    return {
        (p.caption_id, p.video_id): p
        for p in Pair.objects.filter(campaign=campaign).order_by("position")
    }


def test_pool_union_excludes_own_video_and_keeps_provenance(setup):
    dataset, runs, v, c = setup
    campaign = create_campaign(
        dataset, runs, CampaignSpec(name="one", depth=2, second_label_rate=0.0)
    )
    pairs = pairs_of(campaign)
    expected = {
        (c[0], v[5]),
        (c[0], v[7]),  # a: 0 (own), 5 ; b: 5, 7
        (c[1], v[7]),
        (c[1], v[2]),
        (c[1], v[6]),  # a: 7, 1 (own) ; b: 2, 6
        (c[2], v[3]),
        (c[2], v[4]),
        (c[2], v[5]),  # a: 3, 4 ; b: 5, 2 (own)
        (c[3], v[0]),
        (c[3], v[6]),  # a: 3 (own), 0 ; b: 6, 3 (own)
    }
    assert set(pairs) == expected
    ranks = load_provenance(campaign)
    assert campaign.run_names() == ["a", "b"]
    by_pair = {key: ranks[p.pool_row].tolist() for key, p in pairs.items()}
    assert by_pair[(c[0], v[5])] == [2, 1]
    assert by_pair[(c[1], v[7])] == [1, 0]
    assert by_pair[(c[1], v[6])] == [0, 2]
    positions = [p.position for p in pairs.values()]
    assert positions == list(range(len(pairs)))
    captions_in_order = [key[0] for key in pairs]
    assert captions_in_order == sorted(captions_in_order)  # a caption's pairs are adjacent
    assert all(
        p.needed == 1 and p.open_slots == 1 and p.status == "pending" for p in pairs.values()
    )


def test_second_label_sample_and_judged_pairs_reused(setup):
    dataset, runs, v, c = setup
    first = create_campaign(
        dataset, runs, CampaignSpec(name="one", depth=2, second_label_rate=0.5, seed=3)
    )
    doubles = Pair.objects.filter(campaign=first, double=True)
    assert doubles.count() == policy.second_label_count(10, 0.5) == 5
    assert set(doubles.values_list("needed", flat=True)) == {2}
    judged = Pair.objects.filter(campaign=first, caption_id=c[0])
    judged.update(label_count=1, relevant_count=1, needed=0, open_slots=0, status="relevant")
    second = create_campaign(dataset, runs, CampaignSpec(name="two", depth=3))
    keys = set(pairs_of(second))
    assert (c[0], v[5]) not in keys and (c[0], v[7]) not in keys  # already judged
    assert (c[0], v[6]) in keys  # new at depth 3
    assert (c[1], v[7]) in keys  # pooled before but never judged: asked again


def test_query_sample_is_seeded(setup):
    dataset, runs, v, c = setup
    one = create_campaign(dataset, runs, CampaignSpec(name="s1", depth=2, query_sample=2, seed=7))
    two = create_campaign(dataset, runs, CampaignSpec(name="s2", depth=2, query_sample=2, seed=7))
    assert {k[0] for k in pairs_of(one)} == {k[0] for k in pairs_of(two)}
    assert len({k[0] for k in pairs_of(one)}) == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"depth": 4}, "shallower than depth 4"),
        ({"second_label_rate": 1.5, "depth": 2}, "between 0 and 1"),
        ({"max_labels": 1, "depth": 2}, "max_labels: must be between 2 and"),
        ({"query_sample": 0, "depth": 2}, "query_sample: must be between 1 and"),
    ],
)
def test_bad_specs_write_nothing(setup, kwargs, message):
    dataset, runs, v, c = setup
    with pytest.raises(CampaignError, match=message):
        create_campaign(dataset, runs, CampaignSpec(name="bad", **kwargs))
    assert not Campaign.objects.exists() and not Pair.objects.exists()


def test_duplicate_name_refused(setup):
    dataset, runs, v, c = setup
    create_campaign(dataset, runs, CampaignSpec(name="one", depth=1))
    with pytest.raises(CampaignError, match="already exists"):
        create_campaign(dataset, runs, CampaignSpec(name="one", depth=1))


def test_a_name_taken_after_the_check_is_the_same_error(setup):
    """Two pool jobs with one name: the second checked before the first made it; the
    unique name refuses its insert, said as the check says it, and nothing of it stays."""
    dataset, runs, v, c = setup
    spec = CampaignSpec(name="twice", depth=1)
    pooled = checked_pool(dataset, runs, spec)  # the name is free now
    create_campaign(dataset, runs, spec)
    pairs = Pair.objects.count()
    with pytest.raises(CampaignError, match="'twice' already exists"):
        create_campaign(dataset, runs, spec, pool=pooled)
    assert Campaign.objects.count() == 1 and Pair.objects.count() == pairs
