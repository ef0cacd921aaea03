"""Statements whose parameters grow with user data stay under PostgreSQL's 65,535 at FIRE's
sizes: a 100,000-row gold file, a discount of 100,000 labels, 100,000 pairs locked at once.

Before batching (config.batches), each was one statement with a parameter per row (a gold
file of 22,000 rows was a 500: "number of parameters must be between 0 and 65535", since
firepool binds parameters on the server). PostgreSQL only: SQLite has no such limit and
Django batches for its own. The rows are made with bulk_create, once per test.
"""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from annotation.judging import pair_state
from annotation.models import GoldPair, Judgement, Pair
from annotation.services import gold as gold_service
from annotation.services import people
from retrieval.models import Caption, Video
from tests.factories import make_campaign

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="PostgreSQL's limit of 65,535 parameters a statement (`make test` starts one)",
)

ROWS = 100_000
SIDE = 317  # 317 x 317 = 100,489 caption-video pairs


def analyze(table: str) -> None:
    """Statistics for a table just filled, as autovacuum would gather them soon after."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {table}")


def big_campaign():
    """A campaign whose dataset has SIDE more captions and videos, and their ids."""
    campaign = make_campaign(n_queries=2, depth=2, seed=41)
    dataset = campaign.dataset
    videos = Video.objects.bulk_create(
        [Video(dataset=dataset, key=f"gv{i}", split="test") for i in range(SIDE)]
    )
    captions = Caption.objects.bulk_create(
        [
            Caption(dataset=dataset, key=f"gc{i}", text=f"c {i}", video=videos[i], split="test")
            for i in range(SIDE)
        ]
    )
    return campaign, captions, videos


@pytest.mark.slow
def test_a_gold_file_of_100000_rows_imports(tmp_path, db):
    campaign, captions, videos = big_campaign()
    path = tmp_path / "gold.csv"
    with path.open("w", encoding="utf-8") as out:
        out.write("caption_key,video_key,label,explanation\n")
        for n in range(ROWS):
            out.write(f"{captions[n // SIDE].key},{videos[n % SIDE].key},relevant,why {n}\n")
    made = gold_service.import_gold(campaign, path)
    assert made.created == ROWS
    golds = GoldPair.objects.filter(campaign=campaign)
    assert golds.count() == ROWS and not golds.filter(task__isnull=True).exists()
    assert Pair.objects.filter(campaign__gold_of=campaign).count() == ROWS


@pytest.mark.slow
def test_a_discount_of_100000_labels(db):
    campaign, captions, videos = big_campaign()
    annotator = get_user_model().objects.create_user("prolific")
    pairs = Pair.objects.bulk_create(
        [
            Pair(
                campaign=campaign,
                caption_id=captions[n // SIDE].pk,
                video_id=videos[n % SIDE].pk,
                position=n + 10,
                **pair_state.initial(1),
            )
            for n in range(ROWS)
        ],
        batch_size=10_000,
    )
    analyze("annotation_pair")  # or the tally trigger's join reads every pair per label
    Judgement.objects.bulk_create(
        [Judgement(pair=pair, annotator=annotator, label="irrelevant") for pair in pairs],
        batch_size=10_000,
    )
    analyze("annotation_judgement")
    assert people.discount_preview(campaign, annotator).labels == ROWS
    assert people.discount(campaign, annotator) == ROWS
    assert not Judgement.objects.filter(annotator=annotator, undone_at__isnull=True).exists()


@pytest.mark.django_db(transaction=True)
def test_locking_100000_pairs():
    campaign = make_campaign(n_queries=2, depth=2, seed=42)
    ids = list(Pair.objects.filter(campaign=campaign).values_list("pk", flat=True))
    with transaction.atomic():
        pair_state.lock_pairs(ids + list(range(10**9, 10**9 + ROWS)))  # most match nothing
        pair_state.recount_labels(ids + list(range(10**9, 10**9 + ROWS)), campaign)
