"""Time importing a 200,000-caption JSONL file (20,000 videos x 10 captions) into SQLite.

Runs against a fresh temporary SQLite database and media root, never the project's own::

    .venv/bin/python bench/import_bench.py [--videos 20000] [--captions-per-video 10]
"""

import json
import random
from pathlib import Path

from harness import once, parser, temporary_django

TARGET_SECONDS = 60.0
VOCABULARY = (
    "a man woman dog cat child person cooks runs jumps opens closes slices pours a the red "
    "blue small large kitchen street beach door knife onion car ball table while quickly"
)
WORDS = VOCABULARY.split()


def write_captions(path: Path, videos: int, per_video: int, seed: int = 0) -> int:
    """Write ``videos * per_video`` JSONL captions; the last tenth of the videos are test."""
    rng = random.Random(seed)
    test_from = videos - videos // 10
    with path.open("w", encoding="utf-8") as handle:
        for v in range(videos):
            split = "test" if v >= test_from else "train"
            for c in range(per_video):
                text = " ".join(rng.choices(WORDS, k=rng.randint(6, 14)))
                row = {"video_id": f"video{v}", "caption_id": f"video{v}#{c}", "caption": text}
                row["split"] = split
                handle.write(json.dumps(row) + "\n")
    return videos * per_video


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--videos", type=int, default=20_000)
    options.add_argument("--captions-per-video", type=int, default=10)
    args = options.parse_args()

    with temporary_django() as tmp:
        from retrieval.datasets.importing import import_dataset

        captions = tmp / "captions.jsonl"
        took, total = once(lambda: write_captions(captions, args.videos, args.captions_per_video))
        print(f"generated {total:,} captions in {took:.1f} s")

        summary = import_dataset("bench", "jsonl", captions)
        rate = summary.captions / summary.seconds
        print(
            f"imported {summary.captions:,} captions, {summary.videos_created:,} videos, "
            f"{summary.queries:,} queries in {summary.seconds:.1f} s ({rate:,.0f} captions/s)"
        )
        print(f"target: < {TARGET_SECONDS:.0f} s for 200,000 captions")


if __name__ == "__main__":
    main()
