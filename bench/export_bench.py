"""Stream every label export of a FIRE-scale campaign; time the first and last byte, and memory.

Target: each full label export at most 4 s to the last byte, its first byte within
0.5 s, memory flat (a few tens of MiB at most, whatever the size), at FIRE's scale: 552,880
pairs, 679,000 live labels, 100 annotators. The campaign is built as in ``agreement_bench.py``
(FIRE-like label counts, ~5% disagreement, some adjudications) with three pooled runs'
provenance, captions of caption-like length and some discounted labels. On SQLite it lives
in a throw-away file; with ``--database-url`` (PostgreSQL) it is built once in a database of
its own on that server (``--db-name``, named after the sizes) and reused by later runs
(``--rebuild`` starts over). Each format is read chunk by chunk as an HTTP response would
be, ``--repeats`` times; the table gives the median time to the first and to the last
chunk, the bytes and the largest growth of the process's peak resident memory. The anchor,
measured in the same run, is the time to fetch every live label's id (and a ``count(*)``
over the labels), so figures compare across machines::

    .venv/bin/python bench/export_bench.py --database-url "$(bin/local-postgres)"
    .venv/bin/python bench/export_bench.py --pairs 60000 --labels 70000   # SQLite, small
"""

import argparse
import resource
import statistics
import threading
import time
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from agreement_bench import build
from harness import machine, temporary_django

TARGET_SECONDS, TARGET_FIRST_BYTE, TARGET_MIB = 4.0, 0.5, 50.0
RUNS = 3
DISCOUNTED = 2_000
"""Labels an admin discounted (listed at the end of the raw export)."""


def rss_mib() -> float:
    """Resident memory now (Linux), in MiB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


class PeakSampler:
    """Sample resident memory every 5 ms in a thread; ``growth`` is the peak above the start."""

    def __enter__(self) -> "PeakSampler":
        self.start = self.peak = rss_mib()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while not self.done.wait(0.005):
            self.peak = max(self.peak, rss_mib())

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, rss_mib())
        self.growth = self.peak - self.start


def add_provenance(campaign, rng: np.random.Generator) -> None:
    """Pooled runs and their ranks for every pair, as a real campaign has."""
    from annotation.campaigns.provenance import Provenance
    from annotation.models import CampaignRun
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
    queries = np.unique(np.array(campaign.pairs.values_list("caption_id", flat=True)))
    known = np.zeros((queries.size, RUNS), np.int16)
    campaign.provenance = Provenance(ranks, queries, known).to_bytes()
    campaign.save(update_fields=["provenance"])


def caption_texts(campaign) -> None:
    """Give the captions text of a caption's length (MSVD's run 30-60 characters), one a
    caption, some with characters JSON escapes, instead of the build's ``x``."""
    from django.db import connection, transaction

    from retrieval.models import Caption

    table = connection.ops.quote_name(Caption._meta.db_table)
    text = connection.ops.quote_name("text")
    dataset = connection.ops.quote_name("dataset_id")
    key = connection.ops.quote_name("id")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET {text} = 'a man in a \"red\" shirt is slicing a tomato ' "
            f"|| CAST({key} AS TEXT) || ' é' WHERE {dataset} = %s",
            [campaign.dataset_id],
        )


def settle_pairs(campaign) -> None:
    """Write each pair's label counts and status, as judging through the API would have."""
    from django.db import connection, transaction

    from annotation.campaign_read.labels import load_campaign_labels
    from annotation.models import Pair
    from retrieval.label_sets import status as label_status

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
        connection.ensure_connection()
        if connection.vendor == "sqlite":
            connection.connection.executemany(
                f"UPDATE {table} SET label_count = ?, relevant_count = ?, status = ?, "
                "needed = 0, open_slots = 0 WHERE id = ?",
                rows,
            )
            return
        with connection.connection.cursor() as cursor:  # PostgreSQL: COPY, then one UPDATE
            cursor.execute(
                "CREATE TEMPORARY TABLE settled (n integer, r integer, s text, id bigint) "
                "ON COMMIT DROP"
            )
            with cursor.copy("COPY settled FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            cursor.execute(
                f"UPDATE {table} p SET label_count = s.n, relevant_count = s.r, status = s.s, "
                "needed = 0, open_slots = 0 FROM settled s WHERE p.id = s.id"
            )


def discount_some(campaign, count: int) -> None:
    """Mark ``count`` live labels discounted, as an admin would (the raw export lists them)."""
    from django.utils import timezone

    from annotation.models import Judgement

    live = Judgement.objects.filter(pair__campaign=campaign, undone_at__isnull=True)
    ids = list(live.order_by("pk").values_list("pk", flat=True)[:: max(1, live.count() // count)])
    Judgement.objects.filter(pk__in=ids[:count]).update(discounted_at=timezone.now())


def bench_database(url: str, name: str, rebuild: bool) -> tuple[str, bool]:
    """(URL of the bench's own database on ``url``'s server, whether it must be built),
    creating it (empty) when missing or when ``rebuild``."""
    import psycopg

    parts = urlsplit(url)
    with psycopg.connect(url, autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if exists and rebuild:
            admin.execute(f'DROP DATABASE "{name}"')
            exists = None
        if not exists:
            admin.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(parts._replace(path=f"/{name}")), not exists


def prepare(args: argparse.Namespace, fresh: bool):
    """The bench campaign: built (untimed) when ``fresh``, else the one built before."""
    from annotation.models import Campaign

    if not fresh:
        found = Campaign.objects.filter(name="bench", pairs__isnull=False).distinct().first()
        if found is not None and found.provenance:
            return found
        raise SystemExit("the bench database holds no complete build: run with --rebuild")
    began = time.perf_counter()
    campaign = build(args)
    add_provenance(campaign, np.random.default_rng(args.seed))
    caption_texts(campaign)
    settle_pairs(campaign)
    discount_some(campaign, DISCOUNTED)
    print(f"built in {time.perf_counter() - began:.0f} s")
    return campaign


def anchor() -> tuple[float, float]:
    """(seconds to fetch every live label's id, seconds of a ``count(*)`` over the labels)."""
    from django.db import connection

    from annotation.models import Judgement

    table = connection.ops.quote_name(Judgement._meta.db_table)
    with connection.cursor() as cursor:
        began = time.perf_counter()
        cursor.execute(f"SELECT id FROM {table} WHERE undone_at IS NULL")
        cursor.fetchall()
        ids = time.perf_counter() - began
        began = time.perf_counter()
        cursor.execute(f"SELECT count(*) FROM {table}")
        cursor.fetchone()
        return ids, time.perf_counter() - began


def timed_export(campaign, fmt: str, path) -> tuple[float, float, int, float]:
    """(seconds to the first chunk, to the last, characters, peak memory growth in MiB)."""
    from annotation.campaign_read.exports import export_chunks

    written = 0
    first = None
    with PeakSampler() as memory, open(path, "w", encoding="utf-8", newline="") as out:
        began = time.perf_counter()
        for chunk in export_chunks(campaign, fmt):
            if first is None:
                first = time.perf_counter() - began
            out.write(chunk)
            written += len(chunk)
        last = time.perf_counter() - began
    return first or last, last, written, memory.growth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=679_000)
    parser.add_argument("--pairs", type=int, default=552_880)
    parser.add_argument("--annotators", type=int, default=100)
    parser.add_argument("--videos", type=int, default=670)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--formats", nargs="*", help="only these formats")
    parser.add_argument("--database-url", help="PostgreSQL server to build the campaign on")
    parser.add_argument("--db-name", help="the bench's database there (default: named by size)")
    parser.add_argument("--rebuild", action="store_true", help="build the campaign again")
    args = parser.parse_args()
    url, fresh = None, True
    if args.database_url:
        name = args.db_name or (
            f"firepool_export_bench_{args.pairs}_{args.labels}_{args.annotators}_{args.seed}"
        )
        url, fresh = bench_database(args.database_url, name, args.rebuild)
    with temporary_django(url) as tmp:
        from django.db import connection
        from django.db.models import Count

        from annotation.campaign_read.exports import EXPORT_FORMATS, GOLD_FORMATS
        from annotation.models import Judgement

        campaign = prepare(args, fresh)
        live = Judgement.objects.filter(
            pair__campaign=campaign, undone_at__isnull=True, discounted_at__isnull=True
        ).count()
        print(f"machine: {machine()}; database: {connection.vendor}")
        statuses = dict(campaign.pairs.order_by().values_list("status").annotate(n=Count("pk")))
        print(
            f"data: {live:,} live labels over {campaign.pairs.count():,} pairs, {RUNS} runs; "
            f"pairs by status {statuses}"
        )
        anchors = [anchor() for _ in range(3)]
        print(
            f"anchor: fetch every live label id {statistics.median(a[0] for a in anchors):.3f} s, "
            f"count(*) over the labels {statistics.median(a[1] for a in anchors):.3f} s "
            "(median of 3)"
        )
        formats = args.formats or [f for f in EXPORT_FORMATS if f not in GOLD_FORMATS]
        print(f"{'format':>9}  first byte  last byte   MiB out  memory  (median of {args.repeats})")
        for fmt in formats:
            runs = [timed_export(campaign, fmt, tmp / f"export.{fmt}") for _ in range(args.repeats)]
            first = statistics.median(run[0] for run in runs)
            last = statistics.median(run[1] for run in runs)
            grew = max(run[3] for run in runs)
            ok = first <= TARGET_FIRST_BYTE and last <= TARGET_SECONDS and grew <= TARGET_MIB
            print(
                f"{fmt:>9}  {first:8.2f} s  {last:7.2f} s  {runs[0][2] / 2**20:8.1f}  "
                f"+{grew:4.0f} MiB  {'ok' if ok else 'over'} (all last: "
                f"{', '.join(f'{run[1]:.2f}' for run in runs)})"
            )
        print(
            f"targets: first byte <= {TARGET_FIRST_BYTE} s, last byte <= {TARGET_SECONDS:.0f} s, "
            f"memory <= +{TARGET_MIB:.0f} MiB"
        )


if __name__ == "__main__":
    main()
