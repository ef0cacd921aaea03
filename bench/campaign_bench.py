"""Create a campaign from 3 runs x 27,763 queries x top-10 (about 500,000 pairs) on SQLite.

Times pooling plus writing every pair (the issue's budget: at most 5 s on SQLite on this
machine), against a throw-away database::

    .venv/bin/python bench/campaign_bench.py [--queries 27763] [--runs 3] [--depth 10]
"""

import numpy as np
import world
from harness import machine, once, parser, temporary_django

TARGET_SECONDS = 5.0


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--queries", type=int, default=27_763)
    options.add_argument("--videos", type=int, default=30_000)
    options.add_argument("--runs", type=int, default=3)
    options.add_argument("--depth", type=int, default=10)
    args = options.parse_args()
    with temporary_django():
        from annotation.campaigns.service import CampaignSpec, build_pool, create_campaign
        from annotation.models import Pair
        from retrieval.models import Dataset

        rng = np.random.default_rng(0)
        own = rng.integers(0, args.videos, args.queries)
        media = world.media(Dataset.objects.create(name="bench"), args.videos, own)
        # Each query has 24 plausible videos; every run draws its top list from them, so
        # runs overlap partly (as the FIRE models do).
        candidates = rng.integers(0, args.videos, (args.queries, 24))
        items, scores = [], []
        for _ in range(args.runs):
            picks = np.argsort(rng.random((args.queries, 24)), axis=1)[:, : args.depth]
            items.append(media.video_pks[np.take_along_axis(candidates, picks, axis=1)])
            scores.append(-np.sort(rng.random(items[-1].shape), axis=1))
        runs = world.runs(media, items, scores, [f"m{r}" for r in range(args.runs)])
        spec = CampaignSpec(name="bench", depth=args.depth)
        pooled, pool = once(lambda: build_pool(media.dataset, runs, spec))
        total, campaign = once(lambda: create_campaign(media.dataset, runs, spec))
        pairs = Pair.objects.filter(campaign=campaign).count()
        print(f"machine: {machine()}")
        print(f"pool (pure numpy, incl. loading runs): {pooled:.2f} s for {len(pool.pool):,} pairs")
        print(
            f"create_campaign (pool + write) on SQLite: {total:.2f} s for {pairs:,} pairs "
            f"({args.queries:,} queries x {args.runs} runs x top-{args.depth}); "
            f"target <= {TARGET_SECONDS:.0f} s; trectools anchor: 3.0 s for 1,000 queries, "
            "45.5 s for 5,000 (pooling alone)"
        )


if __name__ == "__main__":
    main()
