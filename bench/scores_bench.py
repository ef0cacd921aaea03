"""Time the annotator scores and the Dawid-Skene resolution of a FIRE-scale campaign.

On ``bench/agreement_bench.py``'s campaign (SQLite, untimed), times
:func:`annotation.people.scores.campaign_scores` and
:func:`annotation.campaign_read.resolution.campaign_resolution` by majority and Dawid-Skene::

    .venv/bin/python bench/scores_bench.py [--labels 660000] [--pairs 555000] [--repeats 3]
"""

import statistics
import time

from agreement_bench import build
from harness import machine, parser, temporary_django, timed


def main() -> None:
    options = parser(__doc__, database=True, seed=True)
    options.add_argument("--labels", type=int, default=660_000)
    options.add_argument("--pairs", type=int, default=555_000)
    options.add_argument("--annotators", type=int, default=40)
    options.add_argument("--videos", type=int, default=30_000)
    options.add_argument("--repeats", type=int, default=3)
    args = options.parse_args()
    with temporary_django(args.database_url):
        from annotation.campaign_read.resolution import campaign_resolution
        from annotation.people.scores import campaign_scores

        began = time.perf_counter()
        campaign = build(args)
        # build() writes judgements without the pair-state service: mark every pair finished
        # so resolution covers the whole pool (the statuses only choose which pairs it covers).
        campaign.pairs.update(status="irrelevant")
        print(f"machine: {machine()}; setup {time.perf_counter() - began:.1f} s")
        for name, work in {
            "campaign_scores": lambda: campaign_scores(campaign),
            "campaign_resolution majority": lambda: campaign_resolution(campaign, "majority"),
            "campaign_resolution dawid-skene": lambda: campaign_resolution(campaign, "dawid-skene"),
        }.items():
            times, result = timed(work, args.repeats)
            print(f"{name}: best {min(times):.2f} s, median {statistics.median(times):.2f} s")
        print(
            f"  Dawid-Skene: {result.fit['iterations']} EM iterations, {len(result.pair_ids):,} pairs"
        )


if __name__ == "__main__":
    main()
