"""Time building the default demo world (600 clips, captions, rows) into a fresh database.

Runs against a temporary SQLite database and media root, never the project's own::

    .venv/bin/python bench/demo_bench.py [--videos 600] [--workers 2]
"""

import os

from harness import once, parser, temporary_django

TARGET_SECONDS = 120.0


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--videos", type=int, default=600)
    options.add_argument("--seed", type=int, default=0)
    options.add_argument("--workers", type=int, default=2)
    args = options.parse_args()

    with temporary_django() as tmp:
        from retrieval.datasets.demo.service import create_demo_dataset, summarize_demo_dataset

        seconds, dataset = once(
            lambda: create_demo_dataset(n_videos=args.videos, seed=args.seed, workers=args.workers)
        )
        summary = summarize_demo_dataset(dataset)
        media = tmp / "var" / "media" / "demo" / dataset.name
        megabytes = sum(p.stat().st_size for p in media.iterdir()) / 1e6

    print(
        f"demo world: {summary.videos} videos, {summary.captions} captions, "
        f"{summary.queries} queries, {megabytes:.1f} MB of WebM"
    )
    print(
        f"build: {seconds:.1f} s with {args.workers} workers on {os.cpu_count()} CPUs "
        f"(target < {TARGET_SECONDS:.0f} s on 2 CPU cores for 600 videos)"
    )
    print(
        f"relevant test videos per query: mean {summary.mean_relevant_per_query:.1f}, "
        f"max {summary.max_relevant_per_query}, "
        f"exactly one for {summary.queries_with_one_relevant}"
    )


if __name__ == "__main__":
    main()
