"""Statements whose parameters grow with user data stay under PostgreSQL's 65,535 at FIRE's
sizes: a gold file larger than the one that failed, a discount of more labels than one
statement may name, and 100,000 ids passed to every function that takes a list of them.

Before batching (config.batches), each was one statement with a parameter per row (a gold
file of 22,000 rows was a 500: "number of parameters must be between 0 and 65535", since
firepool binds parameters on the server). PostgreSQL only: SQLite has no such limit and
Django batches for its own. Where a function takes ids, a few real ones go with 100,000 that
match no row (:data:`PADDING`): the statements grow as with 100,000 rows, in a fraction of
the time; only the gold import and the discount, which read their rows from the database,
make real ones, just enough that an unbatched statement would be over the limit.
"""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from annotation.campaigns import service as campaigns
from annotation.campaigns.settings import EstimationSample
from annotation.gold import service as gold_service
from annotation.judging import pair_state
from annotation.models import GoldPair, Judgement, Lease, Pair
from annotation.ordering import priorities, samples
from annotation.people import service as people
from config.batches import rows_in
from retrieval.models import Caption, Video
from tests.factories import make_campaign

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="PostgreSQL's limit of 65,535 parameters a statement (`make test` starts one)",
)

ROWS = 100_000
LIMIT = 65_535
GOLD_ROWS = 25_000
"""Over the 22,000 rows that failed, and over the limit in each insert were it one
statement (9 columns a gold pair, 13 a task pair)."""
LABELS = 66_049  # 257 x 257: one parameter a pair in an unbatched IN list, over the limit


def analyze(table: str) -> None:
    """Statistics for a table just filled, as autovacuum would gather them soon after."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {table}")


def big_campaign(side: int):
    """A campaign whose dataset has ``side`` more captions and videos, and their ids."""
    campaign = make_campaign(n_queries=2, depth=2, seed=41)
    dataset = campaign.dataset
    videos = Video.objects.bulk_create(
        [Video(dataset=dataset, key=f"gv{i}", split="test") for i in range(side)]
    )
    captions = Caption.objects.bulk_create(
        [
            Caption(dataset=dataset, key=f"gc{i}", text=f"c {i}", video=videos[i], split="test")
            for i in range(side)
        ]
    )
    return campaign, captions, videos


@pytest.mark.slow
def test_a_gold_file_over_the_limit_imports(tmp_path, db):
    side = int(GOLD_ROWS**0.5) + 1
    campaign, captions, videos = big_campaign(side)
    path = tmp_path / "gold.csv"
    with path.open("w", encoding="utf-8") as out:
        out.write("caption_key,video_key,label,explanation\n")
        for n in range(GOLD_ROWS):
            out.write(f"{captions[n // side].key},{videos[n % side].key},relevant,why {n}\n")
    made = gold_service.import_gold(campaign, path)
    assert made.created == GOLD_ROWS and GOLD_ROWS * 9 > LIMIT
    golds = GoldPair.objects.filter(campaign=campaign)
    assert golds.count() == GOLD_ROWS and not golds.filter(task__isnull=True).exists()
    assert Pair.objects.filter(campaign__gold_of=campaign).count() == GOLD_ROWS


def _judged_grid(campaign, annotator, rows: int) -> list[int]:
    """Pairs of the dataset's extra captions by its extra videos, each labelled once by
    ``annotator``, made by the database in two statements (a few seconds, where 66,000
    rows sent from here took a minute): their ids."""
    pair, judgement = Pair._meta.db_table, Judgement._meta.db_table
    caption, video = Caption._meta.db_table, Video._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {pair} (campaign_id, caption_id, video_id, "position", pool_row,
                "double", label_count, relevant_count, needed, leased, open_slots, held, status,
                adjudicated, auto_label)
            SELECT %s, c.id, v.id, 10 + row_number() OVER (ORDER BY c.id, v.id), 0,
                false, 0, 0, 1, 0, 1, false, 'pending', '', ''
            FROM {caption} c CROSS JOIN {video} v
            WHERE c.dataset_id = %s AND v.dataset_id = %s AND c.key LIKE 'gc%%'
                AND v.key LIKE 'gv%%'""",
            [campaign.pk, campaign.dataset_id, campaign.dataset_id],
        )
        analyze(pair)  # or the tally trigger's join reads every pair per label
        cursor.execute(
            f"""INSERT INTO {judgement} (uuid, pair_id, annotator_id, label, created_at)
            SELECT gen_random_uuid(), id, %s, 'irrelevant', now() FROM {pair}
            WHERE campaign_id = %s AND position >= 10""",
            [annotator.pk, campaign.pk],
        )
        analyze(judgement)
    pairs = list(
        Pair.objects.filter(campaign=campaign, position__gte=10).values_list("pk", flat=True)
    )
    assert len(pairs) == rows
    return pairs


@pytest.mark.slow
def test_a_discount_of_more_labels_than_a_statement_may_name(db):
    side = int(LABELS**0.5)
    campaign, _, _ = big_campaign(side)
    annotator = get_user_model().objects.create_user("prolific")
    pairs = _judged_grid(campaign, annotator, LABELS)
    assert len(pairs) == LABELS > LIMIT
    assert people.discount_preview(campaign, annotator).labels == LABELS
    assert people.discount(campaign, annotator) == LABELS
    assert not Judgement.objects.filter(annotator=annotator, undone_at__isnull=True).exists()


PADDING = list(range(10**9, 10**9 + ROWS))
"""Ids no row has: passed beside a few real ones, they make a statement's parameters grow as
100,000 rows would, without the seconds it takes to make 100,000 rows."""


@pytest.mark.django_db(transaction=True)
def test_locking_100000_pairs():
    campaign = make_campaign(n_queries=2, depth=2, seed=42)
    ids = list(Pair.objects.filter(campaign=campaign).values_list("pk", flat=True))
    with transaction.atomic():
        pair_state.lock_pairs(ids + PADDING)  # most match nothing
        pair_state.recount_labels(ids + PADDING, campaign)


def test_reading_rows_of_100000_ids(db):
    campaign = make_campaign(n_queries=2, depth=2, seed=43)
    real = list(Caption.objects.filter(dataset=campaign.dataset).values_list("pk", "key"))
    found = rows_in(
        Caption.objects.values_list("pk", "key"), "pk", [pk for pk, _ in real] + PADDING
    )
    assert sorted(found) == sorted(real)
    by_key = rows_in(
        Caption.objects.values_list("pk", "key"),
        "key",
        [key for _, key in real] + [f"x{pk}" for pk in PADDING],
    )
    assert sorted(by_key) == sorted(real)


def test_releasing_100000_leases(db):
    """Locked, deleted and recounted (:func:`pair_state.recount_leases`) per batch."""
    campaign = make_campaign(n_queries=2, depth=2, seed=44)
    annotator = get_user_model().objects.create_user("leaser")
    pair = campaign.pairs.order_by("pk").first()
    with transaction.atomic():
        lease = pair_state.take_lease(pair, annotator, campaign, timezone.now())
    pair.refresh_from_db()
    assert pair.leased == 1
    # Leases that no longer exist beside one that does: only it goes, its slot freed.
    with transaction.atomic():
        pair_state.release_leases([(lease.pk, pair.pk)] + [(pk, pk) for pk in PADDING])
    pair.refresh_from_db()
    assert (pair.leased, pair.open_slots) == (0, pair.needed) and not Lease.objects.exists()


def test_parking_and_reopening_100000_pairs(db):
    campaign = make_campaign(n_queries=2, depth=2, seed=44)
    pair = campaign.pairs.order_by("pk").first()
    pair_state.place([pair.pk] + PADDING)
    pair.refresh_from_db()
    assert (pair.needed, pair.open_slots) == (0, 0)
    pair_state.place(reopen_ids=[pair.pk] + PADDING)
    pair.refresh_from_db()
    assert pair.needed == pair.open_slots > 0


def test_an_estimation_sample_of_100000_captions_and_pairs(db):
    campaign = make_campaign(n_queries=2, depth=2, seed=45)
    settings = campaign.settings
    sampled = campaign.pairs.order_by("pk").first()
    Pair.objects.filter(pk=sampled.pk).update(status=Pair.Status.RELEVANT)  # judged since
    campaign.set_settings(
        replace(
            settings, estimation_sample=EstimationSample(tuple(PADDING), (sampled.pk, *PADDING))
        )
    )
    state = samples.pool_state(campaign)
    assert state.sampled[0].tolist() == [sampled.caption_id]
    drawn = samples.draw_sample(campaign, pairs=1)
    assert drawn.pairs >= 1


def test_judged_pairs_of_100000_captions(db):
    campaign = make_campaign(n_queries=2, depth=2, seed=46)
    pair = campaign.pairs.order_by("pk").first()
    Pair.objects.filter(pk=pair.pk).update(label_count=1, needed=0, open_slots=0)
    captions, videos = campaigns.judged_pairs(
        campaign.dataset, np.array([pair.caption_id] + PADDING)
    )
    assert (captions.tolist(), videos.tolist()) == ([pair.caption_id], [pair.video_id])


def test_promoting_among_100000_named_pairs(db):
    campaign = make_campaign(n_queries=2, depth=2, seed=47)
    pair = campaign.pairs.order_by("pk").first()
    with pytest.raises(gold_service.GoldError, match="and 99990 more are not in campaign"):
        gold_service.promote(campaign, pair_ids=[pair.pk] + PADDING)
    assert not GoldPair.objects.exists()


def test_a_query_ordered_by_100000_judged_pairs(db):
    """Move-to-front's order of a query's judged pairs (a query's pool: bounded, batched
    all the same)."""
    rows = [SimpleNamespace(id=pk) for pk in PADDING]
    order = priorities._in_label_order(rows, np.arange(len(rows)))
    assert order.tolist() == list(range(ROWS))
