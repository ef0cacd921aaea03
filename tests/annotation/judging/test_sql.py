"""Every registered statement (:data:`config.raw_sql.REGISTRY`) run on the current database
(SQLite here, PostgreSQL in the second pass), its rows of its registered row type; and each
statement that replaces an ORM query against the same answer computed through the ORM, on
a small campaign."""

import uuid
from datetime import timedelta
from typing import NamedTuple

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, connections, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Sum
from django.utils import timezone

from annotation.campaign_read import labels as campaign_labels
from annotation.gold import statements as gold_sql
from annotation.gold import tasks as gold_queue
from annotation.judging import pair_state, queue, submit
from annotation.judging import statements as sql
from annotation.models import Campaign, GoldPair, Judgement, Lease, Pair
from annotation.people.scores import EpochSeconds
from config import raw_sql
from retrieval.models import BROWSER_READY_STATES, Video
from tests.factories import add_gold, make_campaign


@pytest.fixture
def world(db):
    """A 12-pair campaign with leases, live and undone labels from three annotators."""
    campaign = make_campaign(n_queries=4, depth=3, rate=0.5)
    users = [get_user_model().objects.create_user(f"s{i}", password="pw-sql-1") for i in range(3)]
    for user, labels in zip(users, (["relevant", "irrelevant"], ["relevant"], []), strict=True):
        for label in labels:
            pair = queue.assign(campaign, user).current.pair
            submit.submit(user, pair.pk, label, uuid.uuid4(), seconds=2.5)
    submit.undo(users[1], campaign)  # undone: counts as not judged
    queue.assign(campaign, users[2])
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
    got = sql.held_and_expired(campaign.pk, a.pk, now)
    assert len(expected) == len(got) == 4  # a's two leases and c's two expired ones
    for lease, raw_lease in zip(expected, got, strict=True):
        assert fields(raw_lease) == fields(lease)
        assert fields(raw_lease.pair) == fields(lease.pair)
        assert fields(raw_lease.pair.caption) == fields(lease.pair.caption)
        assert fields(raw_lease.pair.video) == fields(lease.pair.video)


@pytest.mark.parametrize("same_caption", [False, True])
@pytest.mark.parametrize("excluded", [0, 1, 2])
@pytest.mark.parametrize("who", [0, 1])
def test_next_pair_matches_the_orm(world, same_caption, excluded, who):
    campaign, users = world
    annotator = users[who]  # 0 has live labels, 1 an undone one (which does not count)
    Pair.objects.filter(campaign=campaign).update(leased=0, open_slots=F("needed"))
    # A video whose browser file is not made yet is never served.
    first = Pair.objects.filter(campaign=campaign).order_by("position").first()
    Video.objects.filter(pk=first.video_id).update(media_state=Video.MediaState.PENDING)
    judged = Judgement.objects.filter(
        pair=OuterRef("pk"), annotator=annotator, undone_at__isnull=True
    )
    open_pairs = (
        Pair.objects.filter(
            campaign=campaign, open_slots__gt=0, video__media_state__in=BROWSER_READY_STATES
        )
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
    pair = sql.next_pair(campaign.pk, annotator.pk, exclude, caption_id)
    assert fields(pair) == fields(expected)
    assert fields(pair.caption) == fields(expected.caption)
    assert fields(pair.video) == fields(expected.video)


def test_next_pair_is_none_when_nothing_is_open(world):
    campaign, (a, _, _) = world
    Pair.objects.filter(campaign=campaign).update(needed=0, open_slots=0)
    assert sql.next_pair(campaign.pk, a.pk, [], None) is None


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
    assert sql.tallies(campaign.pk, None, now.date())[2:4] == (pairs["n"], pairs["left"])
    everyone = Judgement.objects.filter(pair__campaign=campaign, undone_at__isnull=True)
    assert row.labels_given == everyone.count()


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("contiguous", [True, False])
def test_judgement_keys_match_the_orm(world, packed, contiguous):
    campaign, _ = world
    pairs = Pair.objects.filter(campaign=campaign)
    first, last = min(p.pk for p in pairs), max(p.pk for p in pairs)
    rows = campaign_labels.judgement_keys(campaign.pk, first, last, contiguous, packed)
    key = rows["key"]
    if packed:
        key, annotators = np.divmod(key, campaign_labels.ANNOTATOR_SPAN)
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


def test_streamed_reads_give_the_same_rows_in_fetches(world, monkeypatch):
    """Inside ``streamed_reads`` a read goes through a server-side cursor on PostgreSQL (a
    client cursor on SQLite), fetched STREAM_ROWS rows at a time: the same array, in as
    many fetches as the rows need, inside or outside a transaction."""
    campaign, _ = world
    pairs = Pair.objects.filter(campaign=campaign).order_by("pk").values_list("id", "needed")
    dtype = np.dtype([("id", np.int64), ("needed", np.int64)])
    plain = sql.queryset_array(pairs, dtype)
    assert len(plain) >= 3
    monkeypatch.setattr(sql, "STREAM_ROWS", 2)
    wrapper = connections["default"]
    server_side, fetches = [], []
    chunked = wrapper.chunked_cursor

    def spy():
        cursor = chunked()
        server_side.append(cursor)
        fetchmany = cursor.fetchmany
        cursor.fetchmany = lambda size: fetches.append(size) or fetchmany(size)
        return cursor

    monkeypatch.setattr(wrapper, "chunked_cursor", spy)
    with sql.streamed_reads():
        streamed = sql.queryset_array(pairs, dtype)
        with transaction.atomic():
            assert sql.queryset_array(pairs, dtype).tolist() == plain.tolist()
    assert streamed.tolist() == plain.tolist()
    assert sql.queryset_array(pairs, dtype).tolist() == plain.tolist()  # outside: as before
    postgres = connection.vendor == "postgresql"
    assert len(server_side) == (2 if postgres else 0)
    if postgres:
        assert set(fetches) == {2} and len(fetches) == 2 * (len(plain) // 2 + 1)


def test_a_statement_refuses_columns_other_than_its_row_type(db):
    """A statement whose select list drifts from its row type fails on its first run, with
    both lists named (never a row read by the wrong name)."""

    class Two(NamedTuple):
        a: int
        b: int

    good = raw_sql.Statement("test_two_good", {}, "SELECT 1 AS a, 2 AS b", Two)
    bad = raw_sql.Statement("test_two_bad", {}, "SELECT 1 AS b, 2 AS a", Two)
    try:
        assert good.rows({}) == [Two(1, 2)]
        with pytest.raises(ImproperlyConfigured, match="are not"):
            bad.rows({})
    finally:
        del raw_sql.REGISTRY["test_two_good"], raw_sql.REGISTRY["test_two_bad"]


def test_gold_answer_and_earlier_judgements_match_the_orm(people):
    """The answer statements of the submit path: the gold evidence :data:`gold_sql.GOLD_ANSWER`
    reads with an answer (live queue answers since reinstatement, right and in all) and the
    id each one finds in the other kind's table, against the same through the ORM."""
    from annotation.gold import tasks as gold_queue
    from annotation.models import AnnotatorStanding, GoldJudgement, GoldPair
    from tests.factories import add_gold

    campaign = make_campaign(n_queries=6, depth=3, seed=3)
    add_gold(campaign, 8, rate=1.0)
    user = people["annotator"]
    answers = []
    for label in ("relevant", "irrelevant", "relevant", "relevant"):
        task = queue.assign(campaign, user).current.pair
        key = uuid.uuid4()
        submit.submit(user, task.pk, label, key, seconds=3.0)
        answers.append(key)
    submit.undo(user, campaign)  # the last answer is taken back: it no longer counts
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
        found, stored = gold_sql.gold_answer(task_id, user.pk, client_uuid)
        assert found.paused_at is None
        assert found.gold_total == live.count() == 2
        assert found.gold_correct == live.filter(label=F("gold_pair__label")).count()
        assert found.label_uses is None
        expected = GoldJudgement._base_manager.filter(uuid=client_uuid).first()
        assert (stored and fields(stored)) == (expected and fields(expected))
    real = Judgement.objects.create(pair=campaign.pairs.first(), annotator=user, label="relevant")
    found, _ = gold_sql.gold_answer(task_id, user.pk, real.uuid)
    assert found.label_uses == real.pk
    judgements, gold_uses = sql.earlier_judgements(answers[1], real.pair_id, user.pk)
    assert gold_uses and [j.pk for j in judgements] == [real.pk]
    judgements, gold_uses = sql.earlier_judgements(uuid.uuid4(), real.pair_id + 10**6, user.pk)
    assert (judgements, gold_uses) == ([], False)


# -- the registry: every statement, every variant, on this database -------------------------

VARIANTS = [
    pytest.param(statement, variant, id=f"{name}-{'-'.join(map(str, variant.values())) or 'one'}")
    for name, statement in raw_sql.REGISTRY.items()
    for variant in statement.variants
]


@pytest.fixture
def examples(world) -> dict:
    """A value for every parameter a registered statement takes, naming rows of ``world``
    (with two gold pairs) so that writes keep every constraint."""
    campaign, users = world
    add_gold(campaign, 2, rate=0.5)
    gold_queue.ensure_tasks(campaign)
    gold = GoldPair.objects.filter(campaign=campaign).order_by("pk").first()
    leased = Pair.objects.filter(campaign=campaign, leased__gt=0).order_by("pk").first()
    pairs = sorted(Pair.objects.filter(campaign=campaign).values_list("pk", flat=True))
    fresh = get_user_model().objects.create_user("s-registry", password="pw-sql-1")
    now = timezone.now()
    adapt = connection.ops.adapt_datetimefield_value
    values = {
        "campaign": campaign.pk,
        "annotator": fresh.pk,
        "pair": leased.pk,
        "caption": leased.caption_id,
        "now": adapt(now),
        "expires": adapt(now + timedelta(minutes=5)),
        "since": adapt(now - timedelta(days=1)),
        "day": connection.ops.adapt_datefield_value(now.date()),
        "uuid": Judgement._meta.get_field("uuid").get_db_prep_value(uuid.uuid4(), connection),
        "task": gold.task_id,
        "gold": gold.pk,
        "attempt": None,
        "recent": 5,
        "first": pairs[0],
        "last": pairs[-1],
        "low": pairs[0],
        "high": pairs[-1] + 1,
        "relevant": "relevant",
        "label": "relevant",
        "seconds": 2.5,
        "played": 2.0,
        "prior": 0.8,
        "queue": "queue",
        "purpose": "queue",
        "pk": fresh.pk,
        "step": 1,
        "as_is": "as_is",
        "ready": "ready",
    }
    values.update({name: getattr(leased, name) for name in sql.SAVE_COUNTS_COLUMNS})
    values.update({f"exclude_{i}": pk for i, pk in enumerate(pairs)})
    values.update({f"shard_{i}": i for i in range(16)})
    values.update({f"pair_{i}": pk for i, pk in enumerate(pairs)})
    values.update({f"position_{i}": 1000 + i for i in range(len(pairs))})
    return values


@pytest.mark.django_db
def test_move_pairs_sets_the_positions_named_and_nothing_else(monkeypatch):
    campaign = make_campaign(n_queries=2)
    pairs = list(campaign.pairs.order_by("pk"))
    before = {pair.pk: pair.position for pair in pairs}
    moved = {pairs[0].pk: 2**31 - 1, pairs[2].pk: 5, pairs[3].pk: 0}
    assert pair_state.move(moved) == 3
    after = dict(campaign.pairs.values_list("pk", "position"))
    assert after == {**before, **moved}
    with pytest.raises(ValueError):
        sql.move_pairs({i: i for i in range(sql.MOVE_MAX + 1)})
    monkeypatch.setattr(sql, "MOVE_MAX", 2)  # more than one statement moves: bulk_update
    many = {pair.pk: 7 for pair in pairs} | {pairs[0].pk: 8}
    assert pair_state.move(many) == len(pairs)
    assert dict(campaign.pairs.values_list("pk", "position")) == many


@pytest.mark.parametrize(("statement", "variant"), VARIANTS)
def test_every_registered_statement_runs_and_gives_its_row_type(examples, statement, variant):
    """Each statement (a new one is covered by registering it) runs here, and its columns are
    its row type's fields; writes return no rows, or the new row's id."""
    missing = set(statement.parameters(**variant)) - set(examples)
    assert not missing, f"give the test an example value for {sorted(missing)}"
    params = {name: examples[name] for name in statement.parameters(**variant)}
    row = statement.row_type(**variant)
    with transaction.atomic():  # locking statements need one
        if row is None:
            assert statement.execute(params, **variant) >= 0
            return
        got = statement.rows(params, **variant)
    assert all(type(found) is row for found in got)
    assert all(len(found) == len(row._fields) for found in got)


def test_every_statement_is_filled_at_start_up_and_a_missing_field_stops_it():
    """:func:`config.raw_sql.check_registry` (run by the app's ``ready``) fills every
    variant; a statement naming a field the models lack fails there, naming itself."""
    raw_sql.check_registry()
    raw_sql.Statement(
        "test_broken", sql.MODELS, "SELECT p.{pair.open_slot} AS n FROM {pair} p", None
    )
    try:
        with pytest.raises(ImproperlyConfigured, match="test_broken.*open_slot"):
            raw_sql.check_registry()
    finally:
        del raw_sql.REGISTRY["test_broken"]
    raw_sql.check_registry()


def test_placeholders_are_filled_from_the_models():
    statement = raw_sql.Statement(
        "test_filled",
        sql.MODELS,
        "SELECT {campaign:k.* -provenance} FROM {campaign} k WHERE k.{campaign.created_by} = 1",
        None,
    )
    try:
        text = statement.fill()
    finally:
        del raw_sql.REGISTRY["test_filled"]
    q = connection.ops.quote_name
    assert f"FROM {q('annotation_campaign')} k WHERE k.{q('created_by_id')} = 1" in text
    assert f"k.{q('options')} AS {q('k_options')}" in text and "provenance" not in text


def test_pair_target_reads_by_name(world):
    campaign, _ = world
    pair = Pair.objects.filter(campaign=campaign).first()
    target = sql.pair_target(pair.pk)
    assert (target.campaign, target.caption) == (campaign.pk, pair.caption_id)
    assert target.options == campaign.options
    assert sql.pair_target(pair.pk + 10**6) is None


def test_pair_target_says_whether_the_annotator_is_paused_in_the_campaign_judged(world):
    """The paused check every write needs comes with the pair's target: paused only by a
    standing that pauses this annotator in this campaign (the main one for a gold task), as
    :func:`sql.paused` says."""
    from annotation.models import AnnotatorStanding

    campaign, (a, b, _) = world
    add_gold(campaign, 2, rate=0.5)
    gold_queue.ensure_tasks(campaign)
    pair = Pair.objects.filter(campaign=campaign).first()
    task = GoldPair.objects.filter(campaign=campaign).first().task_id
    other = make_campaign(n_queries=2, depth=2)
    now = timezone.now()
    AnnotatorStanding.objects.create(campaign=campaign, annotator=a, paused_at=now)
    AnnotatorStanding.objects.create(campaign=campaign, annotator=b, reinstated_at=now)
    AnnotatorStanding.objects.create(campaign=other, annotator=b, paused_at=now)
    for pk in (pair.pk, task):
        for user in (a, b):
            target = sql.pair_target(pk, user.pk)
            assert target.paused is (sql.paused(campaign.pk, user.pk) is not None)
            assert target.paused is (user == a)
        assert sql.pair_target(pk).paused is False
        assert (sql.pair_target(pk).gold_of is not None) is (pk == task)


def test_epoch_seconds_match_the_stored_times(world):
    """The scores' times computed by the database equal the ORM's datetimes, to the
    microsecond."""
    times = Judgement._base_manager.order_by("pk").values_list(
        EpochSeconds("created_at"), "created_at"
    )
    assert times and all(abs(got - at.timestamp()) < 1e-6 for got, at in times)


# -- the semi-internal Django APIs config.raw_sql builds instances with ----------------------


def test_the_django_internals_raw_sql_uses_behave_as_it_expects(world):
    """``Field.get_col``, the backend's and the column's ``get_db_converters``,
    ``Model.from_db`` and ``DEFERRED`` (what :func:`config.raw_sql.instances` needs of
    them), and ``Query.sql_with_params`` (what :class:`config.raw_sql.Compiled` rebinds).
    A Django upgrade that changes them fails here, not in a judgement."""
    import inspect

    from django.db.models import DEFERRED
    from django.db.models.expressions import Col

    field = Pair._meta.get_field("campaign")
    column = field.get_col("p")
    assert isinstance(column, Col) and column.alias == "p" and column.target is field
    assert list(inspect.signature(connection.ops.get_db_converters).parameters) == ["expression"]
    assert list(inspect.signature(column.get_db_converters).parameters) == ["connection"]
    for converter in connection.ops.get_db_converters(column) + column.get_db_converters(
        connection
    ):
        assert list(inspect.signature(converter).parameters)[:3] == [
            "value",
            "expression",
            "connection",
        ]
    options = Campaign._meta.get_field("options").get_col("k")
    converters = connection.ops.get_db_converters(options) + options.get_db_converters(connection)
    value = '{"a": 1}'
    for converter in converters:
        value = converter(value, options, connection)
    assert value == {"a": 1}
    pair = Pair.objects.filter(campaign=world[0]).first()
    names = [f.attname for f in Pair._meta.concrete_fields]
    values = [getattr(pair, name) if name != "status" else DEFERRED for name in names]
    built = Pair.from_db(connection.alias, names, values)
    assert built.pk == pair.pk and built.get_deferred_fields() == {"status"}
    assert not built._state.adding and built._state.db == connection.alias
    # Compiled statements: a queryset's SQL with one %s per parameter, in order.
    text, params = Pair.objects.filter(
        campaign_id=-32000, caption_id=-32001
    ).query.sql_with_params()
    assert isinstance(text, str) and text.count("%s") == 2 and tuple(params) == (-32000, -32001)


def loaded(instance) -> dict:
    """:func:`fields` less the fields the instance left deferred."""
    deferred = instance.get_deferred_fields()
    return {
        f.attname: getattr(instance, f.attname)
        for f in instance._meta.concrete_fields
        if f.attname not in deferred
    }


def test_the_submit_and_gold_reads_match_the_orm(world):
    """The submit path's single-row reads and the gold statements against the ORM: the locked
    pair and its campaign, the campaign, a pausing standing, recent times, gold answers in
    the queue, the gold evidence, the qualification count and a gold task to serve."""
    from annotation.models import AnnotatorStanding, GoldJudgement

    campaign, (a, b, _) = world
    add_gold(campaign, 3, rate=0.5)
    gold_queue.ensure_tasks(campaign)
    pair = Pair.objects.filter(campaign=campaign).order_by("pk").first()
    with transaction.atomic():
        locked = sql.locked_pair(pair.pk)
    assert fields(locked) == fields(pair)
    full = Campaign.objects.get(pk=campaign.pk)
    assert "provenance" in locked.campaign.get_deferred_fields()
    assert loaded(locked.campaign) == {k: v for k, v in fields(full).items() if k != "provenance"}
    assert loaded(sql.campaign(str(campaign.pk))) == loaded(locked.campaign)
    assert sql.campaign("1e3") is None and sql.campaign(2**64) is None
    assert sql.locked_pair(pair.pk + 10**6) is None

    now = timezone.now()
    AnnotatorStanding.objects.create(campaign=campaign, annotator=a, paused_at=now)
    assert fields(sql.paused(campaign.pk, a.pk)) == fields(
        AnnotatorStanding.objects.get(campaign=campaign, annotator=a)
    )
    assert sql.paused(campaign.pk, b.pk) is None

    live = Judgement.objects.filter(
        annotator=a, pair__campaign=campaign, undone_at__isnull=True, seconds__isnull=False
    ).order_by("-created_at")
    assert sql.recent_seconds(campaign.pk, a.pk, None, 5) == list(
        live.values_list("seconds", flat=True)[:5]
    )
    first = live.last().created_at
    assert sql.recent_seconds(campaign.pk, a.pk, first, 5) == list(
        live.filter(created_at__gt=first).values_list("seconds", flat=True)[:5]
    )

    golds = list(GoldPair.objects.filter(campaign=campaign).order_by("pk"))
    for gold, label in zip(golds[:2], ("relevant", "irrelevant"), strict=True):
        GoldJudgement.objects.create(gold_pair=gold, annotator=a, label=label)
    answers = GoldJudgement.objects.filter(gold_pair__campaign=campaign, annotator=a)
    evidence = gold_sql.gold_evidence(campaign.pk, a.pk)
    assert (evidence.total, evidence.correct) == (
        answers.count(),
        answers.filter(label=F("gold_pair__label")).count(),
    )
    assert evidence.paused_at == AnnotatorStanding.objects.get(annotator=a).paused_at
    gold_pairs, attempts = gold_sql.qualification(campaign.pk, a.pk)
    assert (gold_pairs, attempts) == (len(golds), [])

    answered = {gold.task_id for gold in golds[:2]}
    row = gold_sql.gold_task(campaign.pk, a.pk, [])
    task, _, _ = sql.instances(sql.PAIR_ROW, row)
    assert task.pk in {gold.task_id for gold in golds} - answered
    assert row.untasked == GoldPair.objects.filter(campaign=campaign, task__isnull=True).count()
    assert gold_sql.gold_task(campaign.pk, a.pk, [task.pk]) is None


def test_live_labels_match_the_orm(world):
    """The adaptive policy's read of live labels with their annotators' stored models (one
    model stored, the other annotator at the prior; an undone label left out)."""
    from django.utils import timezone as tz

    from annotation.models import AnnotatorModel
    from annotation.policy import label_models

    campaign, _ = world
    users = [get_user_model().objects.create_user(f"live{i}", password="pw-sql-1") for i in (0, 1)]
    pairs = list(Pair.objects.filter(campaign=campaign).order_by("pk")[:3])
    for pair, user, label in ((pairs[0], users[0], "relevant"), (pairs[0], users[1], "irrelevant"),
                              (pairs[1], users[0], "irrelevant")):  # fmt: skip
        Judgement.objects.create(pair=pair, annotator=user, label=label)
    Judgement.objects.create(
        pair=pairs[2], annotator=users[1], label="relevant", undone_at=tz.now()
    )
    AnnotatorModel.objects.create(
        campaign=campaign, annotator=users[0], sensitivity=0.9, specificity=0.7, fitted_at=tz.now()
    )

    def orm(judgements):
        return sorted(tuple(row) for row in label_models.live_labels(judgements))

    for pair in pairs:
        got = sorted(tuple(row) for row in sql.live_labels(0.8, pair=pair.pk))
        assert got == orm(Judgement.objects.filter(pair=pair))
    caption = pairs[0].caption_id
    got = sorted(tuple(row) for row in sql.live_labels(0.8, campaign=campaign.pk, caption=caption))
    assert got == orm(Judgement.objects.filter(pair__campaign=campaign, pair__caption_id=caption))
    assert got  # the world's first pairs share a caption
