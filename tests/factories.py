"""Data builders the tests share: small campaigns, randomly scored runs."""

import uuid

import numpy as np

from annotation.services.campaigns import CampaignSpec, create_campaign
from retrieval.models import Caption, Dataset, RetrievalModel, Video
from retrieval.runs import RankedLists
from retrieval.services.runs import store_run


def make_campaign(
    n_queries=3, depth=3, rate=0.0, seed=0, lease_seconds=300, judging_order="depth", budget=None
):
    """A small campaign: ``n_queries`` captions, one run ranking nine of ten videos to ``depth``."""
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
    spec = CampaignSpec(
        name=f"c{uuid.uuid4().hex[:6]}",
        depth=depth,
        second_label_rate=rate,
        seed=seed,
        lease_seconds=lease_seconds,
        judging_order=judging_order,
        budget=budget,
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
