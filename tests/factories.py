"""Data builders the tests share: small campaigns, randomly scored runs."""

import uuid
from dataclasses import replace

import numpy as np

from annotation.campaigns.service import CampaignSpec, create_campaign
from annotation.campaigns.settings import GoldSettings
from annotation.judging import queue, submit
from annotation.models import GoldPair
from retrieval.models import Caption, Dataset, RetrievalModel, Video
from retrieval.search.runs import RankedLists
from retrieval.search.runs_service import store_run


def make_campaign(
    n_queries=3,
    depth=3,
    rate=0.0,
    seed=0,
    lease_seconds=300,
    judging_order="depth",
    budget=None,
    **values,
):
    """A small campaign: ``n_queries`` captions, one run ranking nine of ten videos to ``depth``
    (``values``: more of the campaign form's values, e.g. ``policy="adaptive"``)."""
    dataset = Dataset.objects.create(name=f"d{uuid.uuid4().hex[:6]}")
    videos = Video.objects.bulk_create(
        [Video(dataset=dataset, key=f"v{i}", split="test") for i in range(10)]
    )
    captions = Caption.objects.bulk_create(
        [
            Caption(
                dataset=dataset,
                key=f"c{i}",
                text=f"caption {i}",
                video=videos[9],
                split="test",
                is_query=True,
            )
            for i in range(n_queries)
        ]
    )
    model = RetrievalModel.objects.create(dataset=dataset, name="m", source="run")
    items = np.array([[videos[(q + r) % 9].pk for r in range(depth)] for q in range(n_queries)])
    run = store_run(
        model,
        "m",
        RankedLists(
            np.array([c.pk for c in captions]),
            items,
            -np.arange(depth, dtype=float)[None].repeat(n_queries, 0),
        ),
    )
    spec = CampaignSpec.from_values(
        {
            "name": f"c{uuid.uuid4().hex[:6]}",
            "depth": depth,
            "second_label_rate": rate,
            "seed": seed,
            "lease_seconds": lease_seconds,
            "judging_order": judging_order,
            "budget": budget,
            **values,
        }
    )
    return create_campaign(dataset, [run], spec)


def query_dataset(name: str, n: int = 6):
    """A dataset of ``n`` test videos ``v0..`` and query captions ``c0..``, ``ci`` written for
    ``vi``; returns the dataset, its videos and its captions."""
    dataset = Dataset.objects.create(name=name)
    videos = Video.objects.bulk_create(
        [Video(dataset=dataset, key=f"v{i}", split="test") for i in range(n)]
    )
    captions = Caption.objects.bulk_create(
        [
            Caption(
                dataset=dataset,
                key=f"c{i}",
                text=f"caption {i}",
                video=videos[i],
                split="test",
                is_query=True,
            )
            for i in range(n)
        ]
    )
    return dataset, videos, captions


def random_run(dataset, name: str, seed: int):
    """A run scoring the dataset's test videos at random for every test query caption."""
    queries = np.array(
        Caption.objects.filter(dataset=dataset, split="test", is_query=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    videos = np.array(
        Video.objects.filter(dataset=dataset, split="test")
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    scores = np.random.default_rng(seed).random((len(queries), len(videos)))
    order = np.argsort(-scores, axis=1)
    model = RetrievalModel.objects.create(dataset=dataset, name=name, source="run")
    lists = RankedLists(queries, videos[order], np.take_along_axis(scores, order, axis=1))
    return store_run(model, name, lists)


def random_run_campaign(dataset, name: str, depth: int, seed: int):
    """A campaign pooling one randomly scored run over the dataset's test split."""
    run = random_run(dataset, f"{name}-run", seed)
    return create_campaign(
        dataset, [run], CampaignSpec(name=name, depth=depth, second_label_rate=0.0)
    )


def pooled_world(name: str):
    """A 24-clip demo dataset with random runs alpha and beta and the label set "pooled" judging
    their top 3 truthfully, recorded as pooled from both at depth 3 (as a campaign's is)."""
    from retrieval.datasets.demo.service import create_demo_dataset, ground_truth_relevance
    from retrieval.label_sets.judged import Judged
    from retrieval.label_sets.service import store_label_set
    from retrieval.search.runs_service import load_run

    dataset = create_demo_dataset(name=name, n_videos=24, seed=5, workers=1)
    runs = [random_run(dataset, run, seed) for run, seed in (("alpha", 1), ("beta", 2))]
    keys, video_keys, truth = ground_truth_relevance(dataset, split="test")
    caption_pk = dict(Caption.objects.filter(dataset=dataset).values_list("key", "pk"))
    video_pk = dict(Video.objects.filter(dataset=dataset).values_list("key", "pk"))
    row = {caption_pk[k]: i for i, k in enumerate(keys)}
    col = {video_pk[k]: j for j, k in enumerate(video_keys)}
    pairs = set()
    for run in runs:
        lists = load_run(run)
        for q, caption in enumerate(lists.query_ids.tolist()):
            for video in lists.item_ids[q, :3].tolist():
                pairs.add((caption, video))
    pairs = sorted(pairs)
    relevance = [int(truth[row[c], col[v]]) for c, v in pairs]
    store_label_set(
        dataset,
        "pooled",
        Judged.build([c for c, _ in pairs], [v for _, v in pairs], relevance),
        source="campaign",
        metadata={"pooled_runs": ["alpha", "beta"], "pool_depth": 3},
    )
    return dataset


def add_gold(campaign, n: int, **settings) -> list:
    """``n`` gold pairs on captions and videos of the campaign's dataset (not pooled ones),
    labels alternating irrelevant/relevant, and the campaign's gold ``settings``."""
    captions = list(Caption.objects.filter(dataset=campaign.dataset).order_by("pk"))
    videos = list(Video.objects.filter(dataset=campaign.dataset).order_by("pk"))
    pooled = set(campaign.pairs.values_list("caption_id", "video_id"))
    golds = []
    for caption in captions:
        for video in videos:
            if (caption.pk, video.pk) not in pooled and len(golds) < n:
                golds.append(
                    GoldPair.objects.create(
                        campaign=campaign,
                        caption=caption,
                        video=video,
                        label="relevant" if len(golds) % 2 else "irrelevant",
                        explanation=f"because {len(golds)}",
                        guideline="Every element of the caption must be in the video.",
                        source=GoldPair.Source.IMPORTED,
                    )
                )
    campaign.set_settings(replace(campaign.settings, gold=GoldSettings(**settings)))
    return golds


def serve_all(campaign, annotator, answer=lambda pair: "irrelevant", now=None) -> list:
    """Let ``annotator`` judge through the services until nothing is served, labels given by
    ``answer(pair)``; the (pair, submit result) of each task."""
    served = []
    while (current := queue.assign(campaign, annotator, now).current) is not None:
        result = submit.submit(
            annotator, current.pair.pk, answer(current.pair), uuid.uuid4(), now=now
        )
        served.append((current.pair, result))
    return served


def make_user(username: str, role: str | None = None, password: str = "pw-factory-12345"):
    """A user in ``role``'s group (a name from :mod:`config.roles`), or in none."""
    from django.contrib.auth import get_user_model

    from config.roles import ensure_groups

    user = get_user_model().objects.create_user(username, password=password)
    if role:
        user.groups.add(ensure_groups()[role])
    return user
