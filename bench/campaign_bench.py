"""Create a campaign from 3 runs x 27,763 queries x top-10 (about 500,000 pairs) on SQLite.

Times pooling plus writing every pair (the issue's budget: at most 5 s on SQLite on this
machine), against a throw-away database::

    .venv/bin/python bench/campaign_bench.py [--queries 27763] [--runs 3] [--depth 10]
"""

import argparse
import time

import numpy as np
from harness import machine, temporary_django

TARGET_SECONDS = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=27_763)
    parser.add_argument("--videos", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--depth", type=int, default=10)
    args = parser.parse_args()
    with temporary_django():
        from annotation.campaigns.service import CampaignSpec, build_pool, create_campaign
        from annotation.models import Pair
        from retrieval.models import Caption, Dataset, RetrievalModel, Video
        from retrieval.search.runs import RankedLists
        from retrieval.search.runs_service import store_run

        rng = np.random.default_rng(0)
        dataset = Dataset.objects.create(name="bench")
        Video.objects.bulk_create(
            (Video(dataset=dataset, key=f"v{i}", split="test") for i in range(args.videos)),
            batch_size=5000,
        )
        video_pks = np.array(Video.objects.order_by("pk").values_list("pk", flat=True))
        own = rng.integers(0, args.videos, args.queries)
        Caption.objects.bulk_create(
            (
                Caption(
                    dataset=dataset,
                    key=f"c{i}",
                    text="x",
                    video_id=int(video_pks[own[i]]),
                    split="test",
                    is_query=True,
                )
                for i in range(args.queries)
            ),
            batch_size=5000,
        )
        caption_pks = np.array(Caption.objects.order_by("pk").values_list("pk", flat=True))
        runs = []
        # Each query has 24 plausible videos; every run draws its top list from them, so
        # runs overlap partly (as the FIRE models do).
        candidates = rng.integers(0, args.videos, (args.queries, 24))
        for r in range(args.runs):
            picks = np.argsort(rng.random((args.queries, 24)), axis=1)[:, : args.depth]
            items = video_pks[np.take_along_axis(candidates, picks, axis=1)]
            scores = -np.sort(rng.random(items.shape), axis=1)
            model = RetrievalModel.objects.create(dataset=dataset, name=f"m{r}", source="run")
            runs.append(store_run(model, f"m{r}", RankedLists(caption_pks, items, scores)))
        spec = CampaignSpec(name="bench", depth=args.depth)
        began = time.perf_counter()
        pool = build_pool(dataset, runs, spec)
        pooled = time.perf_counter() - began
        began = time.perf_counter()
        campaign = create_campaign(dataset, runs, spec)
        total = time.perf_counter() - began
        pairs = Pair.objects.filter(campaign=campaign).count()
        print(f"machine: {machine()}")
        print(f"pool (pure numpy, incl. loading runs): {pooled:.2f} s for {len(pool):,} pairs")
        print(
            f"create_campaign (pool + write) on SQLite: {total:.2f} s for {pairs:,} pairs "
            f"({args.queries:,} queries x {args.runs} runs x top-{args.depth}); "
            f"target <= {TARGET_SECONDS:.0f} s; trectools anchor: 3.0 s for 1,000 queries, "
            "45.5 s for 5,000 (pooling alone)"
        )


if __name__ == "__main__":
    main()
