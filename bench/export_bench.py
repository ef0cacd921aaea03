"""Stream every label export of a FIRE-scale campaign; time the first and last byte, and memory.

Target: each export within 4 s, first byte within 0.5 s, memory flat, at FIRE's scale (552,880
pairs, 679,000 labels, 100 annotators; built as in ``agreement_bench.py``). SQLite in a
throw-away file, or with ``--database-url`` a PostgreSQL database kept for later runs
(``--db-name``, ``--rebuild``). Anchor: fetching every live label's id and a ``count(*)``::

    .venv/bin/python bench/export_bench.py --database-url "$(bin/local-postgres)"
    .venv/bin/python bench/export_bench.py --pairs 60000 --labels 70000   # SQLite, small
"""

import resource
import statistics
import threading
import time

import numpy as np
from agreement_bench import build
from harness import create_database, database_name, database_url, machine, parser, temporary_django

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
    from django.db.models import CharField, Value
    from django.db.models.functions import Cast, Concat

    from retrieval.models import Caption

    Caption.objects.filter(dataset_id=campaign.dataset_id).update(
        text=Concat(
            Value('a man in a "red" shirt is slicing a tomato '),
            Cast("pk", CharField()),
            Value(" é"),
        )
    )


def settle_pairs(campaign) -> None:
    """Write each pair's label counts and status, as judging through the API would have,
    in one bulk update."""
    from annotation.campaign_read.labels import load_campaign_labels
    from annotation.models import Pair
    from config.backends import backend
    from retrieval.label_sets import status as label_status

    data = load_campaign_labels(campaign)
    total = np.bincount(data.pair_index, minlength=data.n_pairs)
    relevant = np.bincount(data.pair_index, weights=data.labels, minlength=data.n_pairs)
    names = label_status.names(data.status)
    rows = [
        (int(t), int(r), str(name), 0, 0, data.first_pair_id + i)
        for i, (t, r, name) in enumerate(zip(total, relevant, names, strict=True))
        if data.in_campaign[i]
    ]
    fields = ["label_count", "relevant_count", "status", "needed", "open_slots"]
    columns = [Pair._meta.get_field(name).column for name in fields]
    backend().bulk_update(Pair._meta.db_table, Pair._meta.pk.column, columns, rows)


def discount_some(campaign, count: int) -> None:
    """Mark ``count`` live labels discounted, as an admin would (the raw export lists them)."""
    from django.utils import timezone

    from annotation.models import Judgement

    live = Judgement.objects.filter(pair__campaign=campaign, undone_at__isnull=True)
    ids = list(live.order_by("pk").values_list("pk", flat=True)[:: max(1, live.count() // count)])
    Judgement.objects.filter(pk__in=ids[:count]).update(discounted_at=timezone.now())


def prepare(args, fresh: bool):
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
    options = parser(__doc__, seed=True)
    options.add_argument("--labels", type=int, default=679_000)
    options.add_argument("--pairs", type=int, default=552_880)
    options.add_argument("--annotators", type=int, default=100)
    options.add_argument("--videos", type=int, default=670)
    options.add_argument("--repeats", type=int, default=3)
    options.add_argument("--formats", nargs="*", help="only these formats")
    options.add_argument("--database-url", help="PostgreSQL server to build the campaign on")
    options.add_argument("--db-name", help="the bench's database there (default: named by size)")
    options.add_argument("--rebuild", action="store_true", help="build the campaign again")
    args = options.parse_args()
    url, fresh = None, True
    if args.database_url:
        name = args.db_name or (
            f"firepool_export_bench_{args.pairs}_{args.labels}_{args.annotators}_{args.seed}"
        )
        fresh = not create_database(args.database_url, name, drop=args.rebuild)
        url = database_url(args.database_url, name)
    with temporary_django(url) as tmp:
        from django.db.models import Count

        from annotation.campaign_read.exports import EXPORT_FORMATS, GOLD_FORMATS
        from annotation.models import Judgement

        campaign = prepare(args, fresh)
        live = Judgement.objects.filter(
            pair__campaign=campaign, undone_at__isnull=True, discounted_at__isnull=True
        ).count()
        print(f"machine: {machine()}; database: {database_name()}")
        statuses = dict(campaign.pairs.order_by().values_list("status").annotate(n=Count("pk")))
        print(
            f"data: {live:,} live labels over {campaign.pairs.count():,} pairs, {RUNS} runs; "
            f"pairs by status {statuses}"
        )
        ids, count = map(statistics.median, zip(*(anchor() for _ in range(3)), strict=True))
        print(
            f"anchor: fetch every live label id {ids:.3f} s, count(*) over the labels "
            f"{count:.3f} s (median of 3)"
        )
        formats = args.formats or [f for f in EXPORT_FORMATS if f not in GOLD_FORMATS]
        print(f"{'format':>9}  first byte  last byte   MiB out  memory  (median of {args.repeats})")
        for fmt in formats:
            runs = [timed_export(campaign, fmt, tmp / f"export.{fmt}") for _ in range(args.repeats)]
            firsts, lasts, sizes, growths = zip(*runs, strict=True)
            first, last, grew = statistics.median(firsts), statistics.median(lasts), max(growths)
            ok = first <= TARGET_FIRST_BYTE and last <= TARGET_SECONDS and grew <= TARGET_MIB
            print(
                f"{fmt:>9}  {first:8.2f} s  {last:7.2f} s  {sizes[0] / 2**20:8.1f}  "
                f"+{grew:4.0f} MiB  {'ok' if ok else 'over'} (all last: "
                f"{', '.join(f'{seconds:.2f}' for seconds in lasts)})"
            )
        print(
            f"targets: first byte <= {TARGET_FIRST_BYTE} s, last byte <= {TARGET_SECONDS:.0f} s, "
            f"memory <= +{TARGET_MIB:.0f} MiB"
        )


if __name__ == "__main__":
    main()
