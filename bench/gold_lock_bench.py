"""How long a 100,000-row gold import holds SQLite's write lock, as another writer sees it.

A probe thread takes and gives back the write lock over and over while
``annotation.gold.service.import_gold`` runs; its longest wait is how long the import kept
other writers out. Anchor: the same import inside one transaction::

    .venv/bin/python bench/gold_lock_bench.py [--rows 100000]
"""

import contextlib
import sqlite3
import threading
import time
from pathlib import Path

import numpy as np
import world
from harness import machine, parser, temporary_django


class LockProbe:
    """Take SQLite's write lock again and again on a separate connection; the longest wait."""

    def __init__(self, database: Path):
        self.database = database
        self.longest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "LockProbe":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        link = sqlite3.connect(self.database, timeout=600, isolation_level=None)
        while not self._stop.is_set():
            began = time.perf_counter()
            link.execute("BEGIN IMMEDIATE")
            link.execute("COMMIT")
            self.longest = max(self.longest, time.perf_counter() - began)
            time.sleep(0.005)
        link.close()


def campaign_with(side: int):
    """A campaign whose dataset has ``side`` more captions and videos (their keys)."""
    from tests.factories import make_campaign

    campaign = make_campaign(n_queries=2, depth=2, seed=41)
    texts = [f"c {i}" for i in range(side)]
    world.media(campaign.dataset, side, np.arange(side), texts, "gv{}", "gc{}")
    return campaign, [f"gc{i}" for i in range(side)], [f"gv{i}" for i in range(side)]


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--rows", type=int, default=100_000)
    args = options.parse_args()
    side = int(args.rows**0.5) + 1
    with temporary_django() as tmp:
        from django.db import connection, transaction

        from annotation.gold import service as gold
        from annotation.models import GoldPair

        database = Path(connection.settings_dict["NAME"])
        path = tmp / "gold.csv"
        figures = {}
        for how in ("one transaction (anchor)", "import_gold (the job's path)"):
            campaign, captions, videos = campaign_with(side)
            with path.open("w", encoding="utf-8") as out:
                out.write("caption_key,video_key,label,explanation\n")
                for n in range(args.rows):
                    out.write(f"{captions[n // side]},{videos[n % side]},relevant,why {n}\n")
            began = time.perf_counter()
            whole = transaction.atomic() if how.startswith("one") else contextlib.nullcontext()
            with LockProbe(database) as probe, whole:
                gold.import_gold(campaign, path)
            took = time.perf_counter() - began
            assert GoldPair.objects.filter(campaign=campaign).count() == args.rows
            figures[how] = probe.longest
            print(
                f"{how}: {args.rows:,} rows in {took:.1f} s; write lock held {probe.longest:.1f} s"
            )
        anchor, now = figures.values()
        print(f"the job's path holds the lock {anchor / max(now, 1e-3):.1f}x shorter ({machine()})")


if __name__ == "__main__":
    main()
