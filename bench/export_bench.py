"""Stream every export format of a campaign with 700,000 labels; check time and memory.

Target: exports stream, 700,000 labels in at most 10 s with flat memory. The campaign
is built as in ``agreement_bench.py`` (FIRE-like label counts, ~5% disagreement, some
adjudications) on a throw-away SQLite database, with four pooled runs' provenance. Each
format is written to a file; the figure is wall time and the growth of the process's peak
resident memory while exporting (flat memory: a few tens of MiB at most, whatever the size)::

    .venv/bin/python bench/export_bench.py [--labels 700000] [--pairs 600000]
"""

import argparse
import resource
import threading
import time

import numpy as np
from agreement_bench import build
from harness import machine, temporary_django

TARGET_SECONDS = 10.0
RUNS = 4


def rss_mib() -> float:
    """Resident memory now (Linux), in MiB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


class PeakSampler:
    """Sample resident memory every 20 ms in a thread; ``growth`` is the peak above the start."""

    def __enter__(self) -> "PeakSampler":
        self.start = self.peak = rss_mib()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while not self.done.wait(0.02):
            self.peak = max(self.peak, rss_mib())

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, rss_mib())
        self.growth = self.peak - self.start


def add_provenance(campaign, rng: np.random.Generator) -> None:
    """Four pooled runs and their ranks for every pair, as a real campaign has."""
    from annotation.models import CampaignRun
    from annotation.services.campaigns import provenance_bytes
    from retrieval.models import RetrievalModel, Run

    pairs = campaign.pairs.count()
    for position in range(RUNS):
        model = RetrievalModel.objects.create(
            dataset=campaign.dataset, name=f"model{position}", source="run"
        )
        run = Run.objects.create(
            model=model,
            dataset=campaign.dataset,
            name=f"run{position}",
            depth=10,
            query_count=0,
            arrays=b"",
        )
        CampaignRun.objects.create(campaign=campaign, run=run, position=position)
    ranks = rng.integers(0, 11, (pairs, RUNS)).astype(np.int16)
    campaign.provenance = provenance_bytes(ranks)
    campaign.save(update_fields=["provenance"])


def settle_pairs(campaign) -> None:
    """Write each pair's label counts and status, as judging through the API would have."""
    from django.db import connection, transaction

    from annotation.campaign_read.labels import load_campaign_labels
    from annotation.models import Pair
    from retrieval import label_status

    data = load_campaign_labels(campaign)
    total = np.bincount(data.pair_index, minlength=data.n_pairs)
    relevant = np.bincount(data.pair_index, weights=data.labels, minlength=data.n_pairs)
    names = label_status.names(data.status)
    rows = [
        (int(t), int(r), str(name), data.first_pair_id + i)
        for i, (t, r, name) in enumerate(zip(total, relevant, names, strict=True))
        if data.in_campaign[i]
    ]
    table = connection.ops.quote_name(Pair._meta.db_table)
    with transaction.atomic():
        connection.connection.executemany(
            f"UPDATE {table} SET label_count = ?, relevant_count = ?, status = ?, needed = 0, "
            "open_slots = 0 WHERE id = ?",
            rows,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=700_000)
    parser.add_argument("--pairs", type=int, default=600_000)
    parser.add_argument("--annotators", type=int, default=40)
    parser.add_argument("--videos", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with temporary_django() as tmp:
        from django.db.models import Count

        from annotation.campaign_read.exports import EXPORT_FORMATS, export_to_file
        from annotation.models import Judgement

        campaign = build(args)
        add_provenance(campaign, np.random.default_rng(args.seed))
        settle_pairs(campaign)
        live = Judgement.objects.filter(pair__campaign=campaign, undone_at__isnull=True).count()
        print(f"machine: {machine()}")
        statuses = dict(campaign.pairs.order_by().values_list("status").annotate(n=Count("pk")))
        print(
            f"data: {live:,} live labels over {campaign.pairs.count():,} pairs, {RUNS} runs; "
            f"pairs by status {statuses}"
        )
        for fmt in EXPORT_FORMATS:
            with PeakSampler() as memory:
                began = time.perf_counter()
                written = export_to_file(campaign, fmt, tmp / f"export.{fmt}")
                seconds = time.perf_counter() - began
            grew = memory.growth
            print(
                f"{fmt:>9}: {seconds:5.2f} s, {written / 2**20:6.1f} MiB written, peak memory "
                f"+{grew:.0f} MiB; target <= {TARGET_SECONDS:.0f} s"
            )


if __name__ == "__main__":
    main()
