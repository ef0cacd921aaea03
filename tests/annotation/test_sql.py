"""Every hand-written statement of :mod:`annotation.services.sql` against the same answer
computed through the ORM, on a small campaign (SQLite here, PostgreSQL in the second pass)."""

import uuid
from datetime import timedelta

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Exists, F, OuterRef, Q, Sum
from django.utils import timezone

from annotation.models import Judgement, Lease, Pair
from annotation.services import assignment, sql
from tests.factories import make_campaign


@pytest.fixture
def world(db):
    """A 12-pair campaign with leases, live and undone labels from three annotators."""
    campaign = make_campaign(n_queries=4, depth=3, rate=0.5)
    users = [get_user_model().objects.create_user(f"s{i}", password="pw-sql-1") for i in range(3)]
    for user, labels in zip(users, (["relevant", "irrelevant"], ["relevant"], []), strict=True):
        for label in labels:
            pair = assignment.assign(campaign, user).current.pair
            assignment.submit(user, pair.pk, label, uuid.uuid4(), seconds=2.5)
    assignment.undo(users[1], campaign)  # undone: counts as not judged
    assignment.assign(campaign, users[2])
    return campaign, users


def fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def test_held_and_expired_matches_the_orm(world):
    campaign, (a, b, c) = world
    now = timezone.now()
    Lease.objects.filter(annotator=c).update(expires_at=now - timedelta(seconds=5))
    expected = list(
        Lease.objects.filter(pair__campaign=campaign)
        .filter(Q(annotator=a) | Q(expires_at__lte=now))
        .select_related("pair__caption", "pair__video")
        .order_by("created_at", "pk")
    )
    got = [
        sql.instances(sql.LEASE_ROW, row) for row in sql.held_and_expired(campaign.pk, a.pk, now)
    ]
    assert len(expected) == len(got) == 4  # a's two leases and c's two expired ones
    for lease, (raw_lease, raw_pair, raw_caption, raw_video) in zip(expected, got, strict=True):
        assert fields(raw_lease) == fields(lease)
        assert fields(raw_pair) == fields(lease.pair)
        assert fields(raw_caption) == fields(lease.pair.caption)
        assert fields(raw_video) == fields(lease.pair.video)


@pytest.mark.parametrize("same_caption", [False, True])
@pytest.mark.parametrize("excluded", [0, 1, 2])
@pytest.mark.parametrize("who", [0, 1])
def test_next_pair_matches_the_orm(world, same_caption, excluded, who):
    campaign, users = world
    annotator = users[who]  # 0 has live labels, 1 an undone one (which does not count)
    Pair.objects.filter(campaign=campaign).update(leased=0, open_slots=F("needed"))
    judged = Judgement.objects.filter(
        pair=OuterRef("pk"), annotator=annotator, undone_at__isnull=True
    )
    open_pairs = (
        Pair.objects.filter(campaign=campaign, open_slots__gt=0)
        .exclude(Exists(judged))
        .order_by("position")
    )
    exclude = list(open_pairs.values_list("pk", flat=True)[:excluded])
    caption_id = open_pairs.last().caption_id if same_caption else None
    expected = open_pairs.exclude(pk__in=exclude)
    if caption_id is not None:
        expected = expected.filter(caption_id=caption_id)
    expected = expected.select_related("caption", "video").first()
    assert expected is not None
    row = sql.next_pair(campaign.pk, annotator.pk, exclude, caption_id)
    pair, caption, video = sql.instances(sql.PAIR_ROW, row)
    assert fields(pair) == fields(expected)
    assert fields(caption) == fields(expected.caption)
    assert fields(video) == fields(expected.video)


def test_next_pair_is_none_when_nothing_is_open(world):
    campaign, (a, _, _) = world
    Pair.objects.filter(campaign=campaign).update(needed=0, open_slots=0)
    assert sql.next_pair(campaign.pk, a.pk, [], None) is None


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the tallies are kept by PostgreSQL triggers only (SQLite counts instead)",
)
def test_tallies_match_counts_through_the_orm(world):
    campaign, (a, _, _) = world
    now = timezone.now()
    Pair.objects.filter(pk=Pair.objects.filter(campaign=campaign).first().pk).update(
        held=True, open_slots=0
    )
    row = sql.tallies(campaign.pk, a.pk, now.date())
    live = Judgement.objects.filter(annotator=a, pair__campaign=campaign, undone_at__isnull=True)
    pairs = Pair.objects.filter(campaign=campaign, held=False).aggregate(
        n=Count("pk"), left=Sum("needed")
    )
    assert row.judged_today == live.filter(created_at__date=now.date()).count() == 2
    assert row.judged_total == live.count() == 2
    assert (row.pairs, row.labels_left) == (pairs["n"], pairs["left"])
    assert sql.tallies(campaign.pk, None, now.date())[2:] == (pairs["n"], pairs["left"])


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("contiguous", [True, False])
def test_judgement_keys_match_the_orm(world, packed, contiguous):
    campaign, _ = world
    pairs = Pair.objects.filter(campaign=campaign)
    first, last = min(p.pk for p in pairs), max(p.pk for p in pairs)
    rows = sql.judgement_keys(campaign.pk, first, last, contiguous, packed)
    key = rows["key"]
    if packed:
        key, annotators = np.divmod(key, sql.ANNOTATOR_SPAN)
    else:
        annotators = rows["annotator"]
    got = sorted(
        zip(
            (key >> 1).tolist(),
            (key & 1).tolist(),
            annotators.tolist(),
            rows["seconds"].tolist(),
            strict=True,
        )
    )
    expected = sorted(
        (pair_id - first, int(label == "relevant"), annotator, -1.0 if seconds is None else seconds)
        for pair_id, label, annotator, seconds in Judgement.objects.filter(
            pair__campaign=campaign, undone_at__isnull=True
        ).values_list("pair_id", "label", "annotator_id", "seconds")
    )
    assert got == expected and len(got) == 2


EXPORTED = (
    *("pair_id", "campaign_id", "pool_row", "status", "adjudicated", "caption_id"),
    *("caption_key", "caption_text", "video_key", "annotator_id", "label", "seconds"),
    *("created_at", "uuid", "auto_label"),
)


def test_export_rows_match_the_orm(world):
    campaign, _ = world
    Judgement.objects.filter(pk=Judgement.objects.first().pk).update(seconds=None)
    pairs = list(Pair.objects.filter(campaign=campaign).select_related("caption", "video"))
    low, high = pairs[0].pk, pairs[-1].pk + 1
    expected = []
    for pair in sorted(pairs, key=lambda p: p.pk):
        common = (
            pair.pk,
            pair.campaign_id,
            pair.pool_row,
            pair.status,
            pair.adjudicated,
            pair.caption_id,
            pair.caption.key,
            pair.caption.text,
            pair.video.key,
        )
        judgements = Judgement.objects.filter(pair=pair, undone_at__isnull=True).order_by(
            "created_at", "pk"
        )
        for j in judgements:
            labelled = (j.annotator_id, j.label, j.seconds, j.created_at, str(j.uuid))
            expected.append((*common, *labelled, pair.auto_label))
        if not judgements:
            expected.append((*common, None, None, None, None, None, pair.auto_label))
    read = sql.reader(sql.EXPORT_COLUMNS, *EXPORTED)
    got = []
    for row in sql.export_rows(low, high):
        *values, created, response, auto_label = read(row)
        created = created and sql.aware_time(created)
        got.append((*values, created, response and sql.uuid_text(response), auto_label))
    assert got == expected
    assert sum(row[9] is not None for row in got) == 2


def test_insert_writes_named_columns_and_leaves_the_rest_to_defaults(world):
    campaign, _ = world
    model = Pair.objects.filter(campaign=campaign).order_by("pk").first()
    Pair.objects.filter(campaign=campaign).delete()
    written = sql.insert(
        Pair,
        {
            "campaign_id": campaign.pk,
            "caption_id": [model.caption_id, model.caption_id],
            "video_id": [model.video_id, model.video_id + 1],
            "position": [0, 1],
            "double": [True, False],
            "label_count": 0,
            "relevant_count": 0,
            "needed": [2, 1],
            "leased": 0,
            "open_slots": [2, 1],
            "held": False,
            "status": "pending",
            "adjudicated": "",
        },
    )
    got = list(
        Pair.objects.filter(campaign=campaign)
        .order_by("position")
        .values_list("video_id", "double", "needed", "open_slots", "status", "auto_label")
    )
    assert written == 2
    assert got == [
        (model.video_id, True, 2, 2, "pending", ""),
        (model.video_id + 1, False, 1, 1, "pending", ""),
    ]


def test_insert_refuses_unknown_columns_and_ragged_lists(db):
    with pytest.raises(ValueError, match="no columns"):
        sql.insert(Pair, {"campaign_id": [1], "colour": [2]})
    with pytest.raises(ValueError, match="one length"):
        sql.column_rows({"a": [1, 2], "b": [3]})
    names, rows = sql.column_rows({"a": [1, 2], "b": "x"})
    assert (names, list(rows)) == (["a", "b"], [(1, "x"), (2, "x")])


def test_queryset_array_reads_columns_by_name(world):
    campaign, _ = world
    pairs = Pair.objects.filter(campaign=campaign).order_by("pk")
    dtype = np.dtype([("id", np.int64), ("needed", np.int64)])
    got = sql.queryset_array(pairs.values_list("id", "needed"), dtype)
    assert got.tolist() == list(pairs.values_list("id", "needed"))
    with pytest.raises(ValueError, match="do not match"):
        sql.queryset_array(pairs.values_list("needed", "id"), dtype)


def test_plain_rows_refuse_columns_other_than_named(db):
    assert sql.plain_rows("SELECT 1 AS a, 2 AS b", {}, ("a", "b")) == [(1, 2)]
    with pytest.raises(ValueError, match="are not"):
        sql.plain_rows("SELECT 1 AS a, 2 AS b", {}, ("b", "a"))


def test_gold_answer_and_earlier_judgements_match_the_orm(people):
    """The answer statements of the submit path: the gold evidence :data:`sql.GOLD_ANSWER`
    reads with an answer (live queue answers since reinstatement, right and in all) and the
    id each one finds in the other kind's table, against the same through the ORM."""
    from annotation.models import AnnotatorStanding, GoldJudgement, GoldPair
    from annotation.services import gold_queue
    from tests.factories import add_gold

    campaign = make_campaign(n_queries=6, depth=3, seed=3)
    add_gold(campaign, 8, rate=1.0)
    user = people["annotator"]
    answers = []
    for label in ("relevant", "irrelevant", "relevant", "relevant"):
        task = assignment.assign(campaign, user).current.pair
        key = uuid.uuid4()
        assignment.submit(user, task.pk, label, key, seconds=3.0)
        answers.append(key)
    assignment.undo(user, campaign)  # the last answer is taken back: it no longer counts
    reinstated = GoldJudgement._base_manager.get(uuid=answers[0]).created_at
    AnnotatorStanding.objects.create(campaign=campaign, annotator=user, reinstated_at=reinstated)
    gold_queue.ensure_tasks(campaign)
    task_id = GoldPair.objects.filter(campaign=campaign).first().task_id
    live = GoldJudgement.objects.filter(
        annotator=user,
        gold_pair__campaign=campaign,
        purpose=GoldJudgement.Purpose.QUEUE,
        created_at__gt=reinstated,
    )
    assert GoldJudgement._base_manager.filter(undone_at__isnull=False).count() == 1
    for client_uuid in (answers[1], answers[3], uuid.uuid4()):
        found, stored = sql.gold_answer(task_id, user.pk, client_uuid)
        assert found.paused_at is None
        assert found.gold_total == live.count() == 2
        assert found.gold_correct == live.filter(label=F("gold_pair__label")).count()
        assert found.label_uses is None
        expected = GoldJudgement._base_manager.filter(uuid=client_uuid).first()
        assert (stored and fields(stored)) == (expected and fields(expected))
    real = Judgement.objects.create(pair=campaign.pairs.first(), annotator=user, label="relevant")
    found, _ = sql.gold_answer(task_id, user.pk, real.uuid)
    assert found.label_uses == real.pk
    judgements, gold_uses = sql.earlier_judgements(answers[1], real.pair_id, user.pk)
    assert gold_uses and [j.pk for j in judgements] == [real.pk]
    judgements, gold_uses = sql.earlier_judgements(uuid.uuid4(), real.pair_id + 10**6, user.pk)
    assert (judgements, gold_uses) == ([], False)
