"""The running totals progress reads (``CampaignTally``, ``AnnotatorTally``), kept by the
database's triggers on PostgreSQL and SQLite alike, equal a recount after every kind of
write: the ORM, raw SQL, bulk updates, deletes and cascades."""

import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db.models import Sum, Value
from django.utils import timezone

from annotation.judging import escalations, queue, submit
from annotation.models import (
    AnnotatorTally,
    Campaign,
    CampaignTally,
    Judgement,
    Pair,
    open_slots_expression,
)
from tests.factories import make_campaign


@pytest.mark.django_db(transaction=True)
def test_progress_tallies_follow_every_kind_of_write():
    """The trigger-kept counts that progress reads equal a recount after each kind of write."""
    campaign = make_campaign(n_queries=6, depth=4, rate=0.5, seed=1)
    other = make_campaign(n_queries=3, depth=3)
    admin, *annotators = [
        get_user_model().objects.create_user(f"tally{i}", password="pw-tally-user")
        for i in range(4)
    ]

    def check(campaign: Campaign) -> None:
        pairs = Pair.objects.filter(campaign=campaign, held=False)
        left = pairs.aggregate(left=Sum("needed"))["left"] or 0
        assert queue.campaign_totals(campaign) == (pairs.count(), left)
        now = timezone.now()
        start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        for annotator in annotators:
            live = Judgement.objects.filter(
                pair__campaign=campaign, annotator=annotator, undone_at__isnull=True
            )
            expected = (live.filter(created_at__gte=start).count(), live.count())
            assert queue.judged_counts(campaign, annotator, now) == expected

    assert queue.campaign_totals(campaign) == (24, 24 + 12)
    check(campaign)
    for annotator in annotators * 2:  # submits (and the lease updates around them)
        current = queue.assign(campaign, annotator).current
        submit.submit(annotator, current.pair.pk, "relevant", uuid.uuid4())
    check(campaign)
    submit.undo(annotators[0], campaign)
    check(campaign)
    earlier = Judgement.objects.filter(annotator=annotators[1]).first()
    Judgement.objects.filter(pk=earlier.pk).update(
        created_at=earlier.created_at - timedelta(days=1)
    )
    check(campaign)
    held = queue.assign(campaign, annotators[1]).current.pair
    escalations.escalate(annotators[1], held.pk, "video does not play", uuid.uuid4())
    check(campaign)
    escalations.adjudicate(Pair.objects.get(pk=held.pk), admin, "irrelevant")
    check(campaign)
    bulk = list(Pair.objects.filter(campaign=campaign, label_count=0)[:5])
    for pair in bulk:  # what the semantic-proxy queue does
        pair.needed = pair.open_slots = 0
    Pair.objects.bulk_update(bulk, ["needed", "open_slots"])
    Judgement.objects.filter(annotator=annotators[2]).first().delete()
    Pair.objects.filter(pk=bulk[0].pk).delete()
    check(campaign)
    assert queue.campaign_totals(other) == (9, 9)
    gone = campaign.pk
    campaign.delete()
    assert not CampaignTally.objects.filter(campaign_id=gone).exists()
    assert not AnnotatorTally.objects.filter(campaign_id=gone).exists()
    assert queue.campaign_totals(other) == (9, 9)


def recount(key: str = "caption_id") -> tuple[dict, dict]:
    """Every tally row as the pair and judgement rows give it: (campaign, shard of the
    pair's query; of the pair itself with ``key="id"``, before migration 0022) -> (pairs not
    held, labels they need); (campaign, annotator, UTC day) -> live judgements."""
    pairs: dict = {}
    for campaign, caption, held, needed in Pair.objects.values_list(
        "campaign_id", key, "held", "needed"
    ):
        n, left = pairs.get((campaign, caption % CampaignTally.SHARDS), (0, 0))
        pairs[campaign, caption % CampaignTally.SHARDS] = (
            n + (not held),
            left + (0 if held else needed),
        )
    judged: dict = {}
    for campaign, annotator, created in Judgement.objects.filter(
        undone_at__isnull=True
    ).values_list("pair__campaign_id", "annotator_id", "created_at"):
        key = (campaign, annotator, created.date())
        judged[key] = judged.get(key, 0) + 1
    return pairs, judged


def kept() -> tuple[dict, dict]:
    """The tally rows the triggers keep, without the rows that count nothing."""
    pairs = {
        (c, s): (n, left)
        for c, s, n, left in CampaignTally.objects.values_list(
            "campaign_id", "shard", "pairs", "labels_left"
        )
        if (n, left) != (0, 0)
    }
    judged = {
        (c, a, d): n
        for c, a, d, n in AnnotatorTally.objects.values_list(
            "campaign_id", "annotator_id", "day", "judged"
        )
        if n
    }
    return pairs, judged


@pytest.mark.django_db(transaction=True)
def test_every_tally_row_equals_a_recount_of_the_rows():
    """Row by row (every shard, every annotator's day), not only the sums progress reads."""
    campaign = make_campaign(n_queries=5, depth=4, rate=0.5, seed=2)
    make_campaign(n_queries=2, depth=3)
    annotators = [
        get_user_model().objects.create_user(f"recount{i}", password="pw-recount-user")
        for i in range(3)
    ]
    for annotator in annotators * 3:
        current = queue.assign(campaign, annotator).current
        submit.submit(annotator, current.pair.pk, "irrelevant", uuid.uuid4())
    submit.undo(annotators[2], campaign)
    moved = Judgement.objects.filter(undone_at__isnull=True).first()
    Judgement.objects.filter(pk=moved.pk).update(created_at=moved.created_at - timedelta(days=2))
    # Written behind the writer's back, keeping the open-slots rule the constraint checks.
    unlabelled = Pair.objects.filter(campaign=campaign, label_count=0)
    unlabelled.update(needed=3, open_slots=open_slots_expression(needed=Value(3)))
    first = Pair.objects.filter(campaign=campaign).first().pk
    Pair.objects.filter(pk=first).update(held=True, open_slots=0)
    assert kept() == recount()
    assert sum(kept()[1].values()) == 8


@pytest.mark.django_db(transaction=True)
def test_the_shards_move_to_the_queries_and_back_with_migration_0022():
    """Migration 0022 shards by query (a submit that re-orders its query locks one row): the
    rows are counted again both ways, and the triggers it installs keep them exact after."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("annotation", "0021_judging_page_media")]
    after = [("annotation", "0022_tally_shard_by_query")]
    campaign = make_campaign(n_queries=6, depth=4, rate=0.5, seed=5)
    pairs = Pair.objects.filter(campaign=campaign).order_by("pk")
    try:
        MigrationExecutor(connection).migrate(before)
        assert kept() == recount("id") != recount()
        pairs.filter(pk__in=list(pairs.values_list("pk", flat=True)[:5])).update(
            needed=4, open_slots=open_slots_expression(needed=Value(4))
        )
        assert kept() == recount("id")
        MigrationExecutor(connection).migrate(after)
        assert kept() == recount()
        last = pairs.last().pk
        Pair.objects.filter(pk=last).update(held=True, open_slots=0)
        make_campaign(n_queries=2, depth=3)
        assert kept() == recount()
        MigrationExecutor(connection).migrate(before)
        assert kept() == recount("id")
    finally:
        MigrationExecutor(connection).loader.build_graph()
        MigrationExecutor(connection).migrate(
            MigrationExecutor(connection).loader.graph.leaf_nodes()
        )
    assert kept() == recount()


TRIGGER_NAMES = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'trigger'",
    "postgresql": "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal",
}


@pytest.mark.django_db
def test_the_tally_triggers_survive_every_migration():
    """SQLite drops a table's triggers when a migration rebuilds the table (a new check
    constraint does): the migration that installs them must stay after every such rebuild
    of the pair and judgement tables, or the totals silently stop moving."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(TRIGGER_NAMES[connection.vendor])
        names = {name for (name,) in cursor.fetchall()}
    wanted = {
        f"annotation_{table}_tally_{event}"
        for table in ("pair", "judgement")
        for event in ("insert", "update", "delete")
    }
    assert wanted <= names
