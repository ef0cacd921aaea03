"""Each hand-written statement of the judging path against the ORM query that gives the same
answer: which statements still save a judging request enough time (10% or more) to keep
their SQL on today's Django and psycopg.

On one PostgreSQL world (``bench/world.py``), the anchor is ``next_task`` and ``submit_label``
in the service; each statement and its ORM twin (``tests/annotation/judging/test_sql.py``'s,
equality asserted first) are timed interleaved; a statement keeps its SQL where it saves at
least ``--keep-share`` of a request::

    .venv/bin/python bench/sql_vs_orm.py [--pairs 200000] [--repeats 600] [--calls 300]
"""

from __future__ import annotations

import os
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import load
import numpy as np
import world
from harness import drop_database, log, machine, parser, postgres_database, setup_django

DB_NAME = "firepool_sqlbench"
EXPORTED = ("pk", "pool_row", "status", "adjudicated", "caption_id", "video_id", "auto_label")
EXPORTED += ("live__annotator_id", "live__label")
"""The ORM's names of the export's ``labels`` columns (``ExportLabelRow``)."""
TARGET = ("campaign_id", "caption_id", "campaign__options", "campaign__gold_of_id")
"""The ORM's names of ``PairTarget``'s columns but ``paused``."""


@dataclass
class Ctx:
    """The world: its campaign id, the annotators (users) and a random generator."""

    campaign: int
    users: list
    rng: np.random.Generator


@dataclass
class Case:
    """One statement: its call and the ORM's (each given one drawn parameter), a draw of
    parameters, and a check that both answers are the same."""

    name: str
    sql: Callable[[object], object]
    orm: Callable[[object], object]
    draw: Callable[[], object]
    same: Callable[[object, object, object], bool] = lambda _, s, o: s == o and bool(s)


def sorted_same(_, s, o) -> bool:
    """The same rows, in any order (the statement has no ORDER BY), and some."""
    return sorted(map(tuple, s)) == sorted(map(tuple, o)) and bool(s)


def fields(*objs) -> list[dict]:
    """Each instance's loaded concrete fields (a deferred one is left out, never read)."""
    return [
        {
            f.attname: getattr(x, f.attname)
            for f in x._meta.concrete_fields
            if f.attname not in x.get_deferred_fields()
        }
        for x in objs
    ]


def build(args) -> Ctx:
    """The world (see the module), analysed."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.models import Pair

    campaign, _ = world.kitchen_campaign("sqlbench", args.pairs, load.DEPTH)
    user_pks = world.annotators([f"sqlb{i:04d}" for i in range(args.annotators)])
    world.gold(campaign, 200, rate=0.05, qualification=False)
    rng = np.random.default_rng(args.seed)
    judged = Pair.objects.filter(campaign=campaign).order_by("position")[: args.judged]
    pks, double = (np.array(v) for v in zip(*judged.values_list("pk", "double"), strict=True))
    error = rng.uniform(0.05, 0.2, args.annotators)
    plan = world.label_plan(rng.random(len(pks)) < 0.2, double, int(1.3 * len(pks)), error, rng)
    rows = world.judgements(plan, pks, user_pks, rng)
    log(f"{args.pairs:,} pairs, {rows:,} judgements of {args.annotators} annotators loaded")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    users = list(get_user_model().objects.filter(pk__in=user_pks.tolist()).order_by("pk"))
    return Ctx(campaign.pk, users, rng)


def anchor(ctx: Ctx, calls: int) -> dict[str, list[float]]:
    """Seconds of ``next_task`` and ``submit_label`` calls, a few annotators at a time, each
    submitting the pair it was given (as the judging page does)."""
    from annotation.judging import answer
    from annotation.models import Campaign

    campaign = Campaign.objects.get(pk=ctx.campaign)
    times: dict[str, list[float]] = {"next_task": [], "submit_label": []}
    current = {}
    for i in range(calls + 20):  # the first 20 warm the caches
        user = ctx.users[i % 20]
        began = time.perf_counter()
        got = current.get(user.pk) or answer.next_task(campaign, user)
        if user.pk not in current:
            times["next_task"].append(time.perf_counter() - began)
        if got.current is None:
            current.pop(user.pk, None)
            continue
        label = "relevant" if ctx.rng.random() < 0.3 else "irrelevant"
        began = time.perf_counter()
        current[user.pk] = answer.submit_label(
            campaign, user, got.current.pair.pk, label, uuid.uuid4(), seconds=4.0
        )
        times["submit_label"].append(time.perf_counter() - began)
    return {kind: values[20:] if len(values) > 40 else values for kind, values in times.items()}


def queue_cases(ctx: Ctx) -> list[Case]:
    """The judging queue's statements: held and expired leases and the next pair."""
    from django.db import transaction
    from django.db.models import Exists, OuterRef, Q
    from django.utils import timezone

    from annotation.judging import statements as sql
    from annotation.models import GoldPair, Judgement, Lease, Pair
    from retrieval.models import BROWSER_READY_STATES

    c, now = ctx.campaign, timezone.now()
    pairs = Pair.objects.filter(campaign_id=c).order_by("position")
    pairs = list(pairs.values_list("pk", "caption_id"))

    def annotator() -> int:
        return ctx.users[int(ctx.rng.integers(20))].pk  # those judging now hold leases

    def a_pair() -> tuple[int, int]:
        return pairs[int(ctx.rng.integers(len(pairs) // 2))]

    def held_orm(a):
        gold = GoldPair.objects.filter(campaign_id=c, task__isnull=False).values("task_id")
        return list(
            Lease.objects.filter(Q(pair__campaign_id=c) | Q(pair_id__in=gold))
            .filter(Q(annotator_id=a) | Q(expires_at__lte=now))
            .select_related("pair__caption", "pair__video")
            .order_by("created_at", "pk")
        )

    def held_same(_, s, o) -> bool:
        mine = [fields(lease, lease.pair, lease.pair.caption, lease.pair.video) for lease in o]
        return [fields(*row) for row in s] == mine and bool(s)

    def next_draw():
        exclude = [a_pair()[0] for _ in range(int(ctx.rng.integers(2)) * 2)]
        return annotator(), exclude, a_pair()[1] if ctx.rng.random() < 0.5 else None

    def next_sql(p):
        with transaction.atomic():
            pair = sql.next_pair(c, *p)
            return pair and (pair, pair.caption, pair.video)

    def next_orm(p):
        a, exclude, caption = p
        judged = Judgement.objects.filter(
            pair=OuterRef("pk"), annotator_id=a, undone_at__isnull=True
        )
        found = Pair.objects.filter(
            campaign_id=c, open_slots__gt=0, video__media_state__in=BROWSER_READY_STATES
        ).exclude(Exists(judged))
        if exclude:
            found = found.exclude(pk__in=exclude)
        if caption is not None:
            found = found.filter(caption_id=caption)
        found = found.select_related("caption", "video").order_by("position")
        with transaction.atomic():
            return found.select_for_update(skip_locked=True, of=("self",)).first()

    def next_same(_, s, o) -> bool:
        return (s is None and o is None) or fields(*s) == fields(o, o.caption, o.video)

    def held_sql(a):
        return [
            (lease, lease.pair, lease.pair.caption, lease.pair.video)
            for lease in sql.held_and_expired(c, a, now)
        ]

    return [
        Case("held_and_expired", held_sql, held_orm, annotator, held_same),
        Case("next_pair", next_sql, next_orm, next_draw, next_same),
    ]


def labelled(ctx: Ctx) -> Callable[[], tuple]:
    """A draw of one of the campaign's live labels: (uuid, pair, annotator, caption)."""
    from annotation.models import Judgement

    found = Judgement.objects.filter(pair__campaign_id=ctx.campaign, undone_at__isnull=True)
    rows = list(found.values_list("uuid", "pair_id", "annotator_id", "pair__caption_id")[:20000])
    return lambda: rows[int(ctx.rng.integers(len(rows)))]


def submit_cases(ctx: Ctx) -> list[Case]:
    """The submit path's reads: pair target, locked pair, campaign, earlier judgements."""
    from django.db import transaction
    from django.db.models import Exists, OuterRef, Q
    from django.db.models.functions import Coalesce

    from annotation.judging import statements as sql
    from annotation.models import AnnotatorStanding, Campaign, GoldJudgement, Judgement, Pair

    c, pick = ctx.campaign, labelled(ctx)

    def target_orm(p):
        pair, a = p
        paused = AnnotatorStanding.objects.filter(
            campaign_id=Coalesce(OuterRef("campaign__gold_of_id"), OuterRef("campaign_id")),
            annotator_id=a,
            paused_at__isnull=False,
        )
        row = Pair.objects.filter(pk=pair).annotate(paused=Exists(paused))
        row = row.values_list(*TARGET, "paused").first()
        return row and sql.PairTarget(*row)

    def locked_sql(p):
        with transaction.atomic():
            found = sql.locked_pair(p)
            return found, found.campaign

    def locked_orm(p):
        found = Pair.objects.select_related("campaign").defer("campaign__provenance").filter(pk=p)
        with transaction.atomic():
            found = found.select_for_update(of=("self",)).first()
            return found, found.campaign

    def earlier_draw():
        _, pair, a, _ = pick()
        return uuid.uuid4(), pair, a

    def earlier_orm(p):
        u, pair, a = p
        live = Q(pair_id=pair, annotator_id=a, undone_at__isnull=True)
        found = Judgement.objects.filter(Q(uuid=u) | live)
        return list(found), GoldJudgement._base_manager.filter(uuid=u).exists()

    def earlier_same(_, s, o) -> bool:
        return fields(*s[0]) == fields(*o[0]) and s[1] == o[1] and len(s[0]) == 1

    def same_fields(_, s, o) -> bool:
        return fields(*s) == fields(*o)

    def campaign_orm(p):
        return (Campaign.objects.filter(pk=p).first(),)

    earlier_sql = lambda p: sql.earlier_judgements(*p)  # noqa: E731
    return [
        Case("pair_target", lambda p: sql.pair_target(*p), target_orm, lambda: pick()[1:3]),
        Case("locked_pair", locked_sql, locked_orm, lambda: pick()[1], same_fields),
        Case("campaign", lambda p: (sql.campaign(p),), campaign_orm, lambda: c, same_fields),
        Case("earlier_judgements", earlier_sql, earlier_orm, earlier_draw, earlier_same),
    ]


def progress_cases(ctx: Ctx) -> list[Case]:
    """The answer's and the policy's reads: tallies, recent times, a gold task, live labels."""
    from django.db.models import Case as When_
    from django.db.models import Count, Exists, F, OuterRef, Q, Sum, When
    from django.utils import timezone

    from annotation import models
    from annotation.gold import statements as gold_sql
    from annotation.judging import statements as sql
    from annotation.models import AnnotatorTally, CampaignTally, GoldJudgement, Judgement
    from annotation.policy import confusion, label_models

    c, queue, pick = ctx.campaign, GoldJudgement.Purpose.QUEUE.value, labelled(ctx)
    day = timezone.now().astimezone(UTC).date()
    since = datetime.combine(day, datetime.min.time(), tzinfo=UTC)

    def tallies_orm(a):
        mine = AnnotatorTally.objects.filter(campaign_id=c).aggregate(
            judged_today=Sum("judged", filter=Q(annotator_id=a, day=day), default=0),
            judged_total=Sum("judged", filter=Q(annotator_id=a), default=0),
            labels_given=Sum("judged", default=0),
        )
        pool = CampaignTally.objects.filter(campaign_id=c).aggregate(
            n=Sum("pairs", default=0), left=Sum("labels_left", default=0)
        )
        gold = GoldJudgement._base_manager.filter(
            gold_pair__campaign_id=c, annotator_id=a, purpose=queue, undone_at__isnull=True
        ).aggregate(gold_today=Count("pk", filter=Q(created_at__gte=since)), gold_total=Count("pk"))
        return sql.GoldTallies(**mine, pairs=pool["n"], labels_left=pool["left"], **gold)

    def recent_orm(a):
        spent = When_(
            When(seconds_played__lt=F("seconds"), then=F("seconds_played")), default=F("seconds")
        )
        found = Judgement.objects.filter(
            annotator_id=a, pair__campaign_id=c, undone_at__isnull=True, seconds__isnull=False
        )
        return [float(s) for s in found.order_by("-created_at").values_list(spent, flat=True)[:25]]

    def gold_left(a):
        answered = GoldJudgement._base_manager.filter(
            gold_pair=OuterRef("pk"), annotator_id=a, purpose=queue, undone_at__isnull=True
        )
        held = models.Lease.objects.filter(pair=OuterRef("task"), annotator_id=a)
        found = models.GoldPair.objects.filter(campaign_id=c, task__isnull=False)
        return found.exclude(Exists(answered)).exclude(Exists(held))

    def gold_orm(a):
        gold = gold_left(a).select_related("task__caption", "task__video").order_by("?").first()
        return gold, models.GoldPair.objects.filter(campaign_id=c, task__isnull=True).count()

    def gold_same(a, s, o) -> bool:  # a random pick on both sides: among the same ones
        candidates = set(gold_left(a).values_list("task_id", flat=True))
        return s.untasked == o[1] and s.p_id in candidates and o[0].task_id in candidates

    def annotator() -> int:
        return pick()[2]

    def labels_sql(p):
        return sql.live_labels(confusion.PRIOR_ACCURACY, **p)

    def labels_orm(p):
        where = {"pair_id": p["pair"]} if "pair" in p else {"pair__campaign_id": c}
        where.update({"pair__caption_id": p["caption"]} if "caption" in p else {})
        return list(label_models.live_labels(Judgement.objects.filter(**where)))

    def by_query() -> dict:
        return {"campaign": c, "caption": pick()[3]}

    return [
        Case("tallies (gold)", lambda a: sql.tallies(c, a, day, gold=True), tallies_orm, annotator),
        Case("recent_seconds", lambda a: sql.recent_seconds(c, a, None, 25), recent_orm, annotator),
        Case("gold_task", lambda a: gold_sql.gold_task(c, a, []), gold_orm, annotator, gold_same),
        Case(
            "live_labels (pair)", labels_sql, labels_orm, lambda: {"pair": pick()[1]}, sorted_same
        ),
        Case("live_labels (query)", labels_sql, labels_orm, by_query, sorted_same),
    ]


def export_case(ctx: Ctx, window: int) -> Case:
    """The export's ``labels`` window against the ORM's ``values_list`` over the same pairs
    and their live labels (a filtered LEFT JOIN, the same window hint on the labels)."""
    from django.db.models import FilteredRelation, Q

    from annotation.campaign_read import export_rows
    from annotation.models import Pair

    c = ctx.campaign
    first = Pair.objects.filter(campaign_id=c).order_by("pk").values_list("pk", flat=True)[0]

    def orm(low):
        hint = {"judgements__pair_id__gte": low, "judgements__pair_id__lt": low + window}
        live = FilteredRelation(
            "judgements", condition=Q(judgements__undone_at__isnull=True, **hint)
        )
        return list(
            Pair.objects.filter(campaign_id=c, pk__gte=low, pk__lt=low + window)
            .annotate(live=live)
            .order_by("pk", "live__created_at", "live__id")
            .values_list(*EXPORTED)
        )

    return Case(
        f"export_rows (labels, {window:,} pairs)",
        lambda low: export_rows.export_rows(low, low + window, "labels", c),
        orm,
        lambda: first + window * int(ctx.rng.integers(2)),  # windows holding the labels
        lambda _, s, o: list(map(tuple, s)) == o and len(s) >= window,
    )


def measure(case: Case, repeats: int, checks: int = 5) -> tuple[list[float], list[float]]:
    """Seconds of each side, ``repeats`` times interleaved (statement, ORM, ...) on fresh
    draws, after checking both answers agree on ``checks`` draws."""
    for _ in range(checks):
        p = case.draw()
        s, o = case.sql(p), case.orm(p)
        if not case.same(p, s, o):
            raise AssertionError(f"{case.name} differs from the ORM on {p!r}: {s!r} != {o!r}")
    sql_times, orm_times = [], []
    for _ in range(repeats):
        p = case.draw()
        began = time.perf_counter()
        case.sql(p)
        middle = time.perf_counter()
        case.orm(p)
        orm_times.append(time.perf_counter() - middle)
        sql_times.append(middle - began)
    return sql_times, orm_times


def us(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1e6


def table(results: dict, request_s: float, keep_share: float) -> str:
    """The Markdown table: per statement, median and p90 of both sides, the median paired
    gain, its share of a request and the verdict."""
    lines = [
        "| statement | SQL µs (median / p90) | ORM µs (median / p90) | gain µs | gain % of a request | verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, (s, o) in results.items():
        gain = statistics.median(np.subtract(o, s)) * 1e6
        share = gain / (request_s * 1e6)
        verdict = "keep" if share >= keep_share else "ORM would do"
        lines.append(
            f"| {name} | {us(s, 50):,.0f} / {us(s, 90):,.0f} | {us(o, 50):,.0f} / {us(o, 90):,.0f} "
            f"| {gain:,.0f} | {share:.1%} | {verdict} |"
        )
    return "\n".join(lines)


def main() -> None:
    options = parser(__doc__, seed=True)
    options.add_argument("--pairs", type=int, default=200_000)
    options.add_argument("--annotators", type=int, default=100)
    options.add_argument("--judged", type=int, default=30_000, help="pairs with labels already")
    options.add_argument("--calls", type=int, default=300, help="submit_label calls of the anchor")
    options.add_argument("--repeats", type=int, default=600, help="timed calls per statement")
    options.add_argument("--window", type=int, default=20_000, help="pairs of an export window")
    options.add_argument("--keep-share", type=float, default=0.10)
    args = options.parse_args()
    url = postgres_database(DB_NAME)
    setup_django(load.server_environment(url, prepared=True, debug=False))
    try:
        ctx = build(args)
        anchors = anchor(ctx, args.calls)
        request_s = statistics.median(anchors["submit_label"])
        results = {}
        for case in queue_cases(ctx) + submit_cases(ctx) + progress_cases(ctx):
            results[case.name] = measure(case, args.repeats)
            log(f"{case.name}: done")
        export = export_case(ctx, args.window)
        exported = measure(export, max(10, args.repeats // 30))
    finally:
        drop_database(url)
    print(f"machine: {machine()}, PostgreSQL; load average {os.getloadavg()[0]:.2f}")
    for kind, values in anchors.items():
        figures = f"median {us(values, 50):,.0f} µs, p90 {us(values, 90):,.0f} µs"
        print(f"anchor {kind}: {figures} ({len(values)} calls)")
    print(table(results, request_s, args.keep_share))
    window = table({export.name: exported}, statistics.median(exported[0]), args.keep_share)
    print(window.replace("gain % of a request", "gain % of the SQL window"))


if __name__ == "__main__":
    main()
