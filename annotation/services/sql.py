"""Every hand-written SQL statement of the annotation app, and the helpers that run them.

Each statement here replaced an ORM query that measured too slow on a hot path (see
``bench/RESULTS.md``): the judging queue's two queries, the progress tallies, the label
loader of the agreement report, the export join and the bulk insert of a campaign's pairs.
So did the judging path's queries, gold pairs and standing included (bench/request_profile.py). The style
is :mod:`config.raw_sql`'s: tables from the models' ``_meta``, columns quoted by name,
every selected column aliased, parameters named (``%(name)s``, which Django turns into
SQLite's ``:name``; only the bulk insert binds positions, generated from its column
names). Rows come back as named tuples keyed by the aliases (``raw_sql.rows``), as plain
tuples whose columns are read by name (:func:`plain_rows`, :func:`reader`; for many rows),
as numpy structured arrays whose fields are the aliases (:func:`array`), or as model
instances (``raw_sql.instances``). Values the two backends return in different types
are normalised here too (:func:`uuid_text`, :func:`aware_time`). The PostgreSQL triggers
stay with their migration (0004).
"""

import functools
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, date, datetime

import numpy as np
from django.db import connection
from django.db.models import Model, QuerySet

from annotation.models import (
    AnnotatorStanding,
    AnnotatorTally,
    Campaign,
    CampaignTally,
    GoldJudgement,
    GoldPair,
    Judgement,
    Lease,
    Pair,
    QualificationAttempt,
)
from config.raw_sql import Sources, instances, rows
from config.raw_sql import column_names as _names
from config.raw_sql import converted as _converted
from config.raw_sql import model_columns as _model_columns
from config.raw_sql import quote as _q
from config.raw_sql import select_list as _select
from config.raw_sql import table as _table
from retrieval.models import Caption, Video

FETCH_ROWS = 50_000
"""Rows fetched from the cursor at a time while filling an array."""

MAX_PARAMETERS = {"sqlite": 32000, "postgresql": 60000}
"""Bound parameters per INSERT: under SQLite's 32,766 and PostgreSQL's 65,535 limits."""


def plain_rows(statement: str, params: Mapping[str, object], names: Sequence[str]) -> list[tuple]:
    """Run ``statement``, check that its columns are ``names``, and return plain tuples.

    For results of many rows, read through :func:`reader`: the garbage collector never
    untracks tuple subclasses, and named tuples made a 70,000-label export 8-20% slower.
    """
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        if _names(cursor) != tuple(names):
            raise ValueError(f"columns {_names(cursor)} are not {tuple(names)}")
        return cursor.fetchall()


def reader(names: Iterable[str], *wanted: str) -> Callable[[tuple], object]:
    """A function giving the ``wanted`` columns of a plain row whose columns are ``names``:
    their values in the order asked (a single value when one is asked)."""
    order = list(names)
    return operator.itemgetter(*(order.index(name) for name in wanted))


def array(statement: str, params: Mapping[str, object], dtype: np.dtype) -> np.ndarray:
    """The rows of ``statement`` as a structured array whose fields are the column aliases.

    Rows go straight from the driver into numpy, in chunks, without a Python object per
    value: the way to read hundreds of thousands of rows.
    """
    return _fetch_array(statement, params, dtype)


def queryset_array(queryset: QuerySet, dtype: np.dtype) -> np.ndarray:
    """The rows of a ``values_list`` queryset as a structured array, without model objects."""
    return _fetch_array(*queryset.query.sql_with_params(), dtype)


def _fetch_array(statement: str, params, dtype: np.dtype) -> np.ndarray:
    chunks = [np.empty(0, dtype=dtype)]
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        if _names(cursor) != dtype.names:
            raise ValueError(f"columns {_names(cursor)} do not match the fields {dtype.names}")
        while batch := cursor.fetchmany(FETCH_ROWS):
            chunks.append(np.array(batch, dtype=dtype))
    return np.concatenate(chunks)


PAIR_ROW: Sources = ((Pair, "p"), (Caption, "c"), (Video, "v"))
LEASE_ROW: Sources = ((Lease, "l"), *PAIR_ROW)
LOCKED_PAIR_ROW: Sources = ((Pair, "p"), (Campaign, "k", ("provenance",)))
STANDING_ROW: Sources = ((AnnotatorStanding, "s"),)


def joined_pair(pair: Pair, caption: Caption, video: Video) -> Pair:
    """``pair`` with the caption and video read in the same row (:data:`PAIR_ROW`'s rest)."""
    pair.caption, pair.video = caption, video
    return pair


def _with_caption_and_video() -> str:
    return (
        f"JOIN {_table(Caption)} c ON c.{_q('id')} = p.{_q('caption_id')} "
        f"JOIN {_table(Video)} v ON v.{_q('id')} = p.{_q('video_id')}"
    )


# The judging queue (annotation.services.assignment): composing these two through the ORM
# took 1.4-1.9 ms of CPU each, about eight times the cost of running them.

HELD_AND_EXPIRED = (
    f"SELECT {_select(_model_columns(LEASE_ROW))} FROM {_table(Lease)} l "
    f"JOIN {_table(Pair)} p ON p.{_q('id')} = l.{_q('pair_id')} {_with_caption_and_video()} "
    f"WHERE (p.{_q('campaign_id')} = %(campaign)s OR p.{_q('id')} IN "
    f"(SELECT g.{_q('task_id')} FROM {_table(GoldPair)} g "
    f"WHERE g.{_q('campaign_id')} = %(campaign)s AND g.{_q('task_id')} IS NOT NULL)) "
    f"AND (l.{_q('annotator_id')} = %(annotator)s OR l.{_q('expires_at')} <= %(now)s) "
    f"ORDER BY l.{_q('created_at')}, l.{_q('id')}"
)
"""An annotator's leases in a campaign (its gold tasks included) and everyone's expired ones,
oldest first, with pair, caption and video (:data:`LEASE_ROW`)."""


def held_and_expired(campaign_id: int, annotator_id: int, now: datetime) -> list[tuple]:
    """Rows of :data:`HELD_AND_EXPIRED`; turn each into instances with :data:`LEASE_ROW`."""
    moment = connection.ops.adapt_datetimefield_value(now)
    params = {"campaign": campaign_id, "annotator": annotator_id, "now": moment}
    return rows(HELD_AND_EXPIRED, params)


@functools.cache
def next_pair_statement(same_caption: bool, excluded: int, lock: bool) -> str:
    """The first open pair in queue order that the annotator has not judged, with caption
    and video (:data:`PAIR_ROW`).

    ``same_caption`` limits it to ``%(caption)s``; ``excluded`` pairs ``%(exclude_0)s``...
    are left out; ``lock`` locks its row, skipping rows other transactions hold
    (PostgreSQL's ``FOR UPDATE SKIP LOCKED``).
    """
    statement = (
        f"SELECT {_select(_model_columns(PAIR_ROW))} FROM {_table(Pair)} p "
        f"{_with_caption_and_video()} "
        f"WHERE p.{_q('campaign_id')} = %(campaign)s AND p.{_q('open_slots')} > 0"
    )
    if same_caption:
        statement += f" AND p.{_q('caption_id')} = %(caption)s"
    if excluded:
        names = ", ".join(f"%(exclude_{i})s" for i in range(excluded))
        statement += f" AND p.{_q('id')} NOT IN ({names})"
    # NOT EXISTS per candidate row through the (pair, annotator) index: NOT IN the
    # annotator's judged pairs would grow with everything they judged.
    statement += (
        f" AND NOT EXISTS (SELECT 1 FROM {_table(Judgement)} j "
        f"WHERE j.{_q('pair_id')} = p.{_q('id')} AND j.{_q('annotator_id')} = %(annotator)s "
        f"AND j.{_q('undone_at')} IS NULL) ORDER BY p.{_q('position')} LIMIT 1"
    )
    if lock:
        statement += " FOR UPDATE OF p SKIP LOCKED"
    return statement


def next_pair(
    campaign_id: int, annotator_id: int, exclude: Sequence[int], caption_id: int | None
) -> tuple | None:
    """The row of :func:`next_pair_statement` (on ``caption_id`` when given), or None."""
    lock = connection.features.has_select_for_update_skip_locked
    params = {"campaign": campaign_id, "annotator": annotator_id, "caption": caption_id}
    params.update((f"exclude_{i}", pk) for i, pk in enumerate(exclude))
    found = rows(next_pair_statement(caption_id is not None, len(exclude), lock), params)
    return found[0] if found else None


# The submit path (annotation.services.assignment, pair_state, standing, gold_queue): the
# same trade as the queue's queries above; composing each through the ORM cost 1-3 ms of CPU
# per request, several times its run (measured by bench/request_profile.py).

PAIR_TARGET = (
    f"SELECT p.{_q('campaign_id')} AS campaign, p.{_q('caption_id')} AS caption, "
    f"k.{_q('options')} AS options FROM {_table(Pair)} p "
    f"JOIN {_table(Campaign)} k ON k.{_q('id')} = p.{_q('campaign_id')} "
    f"WHERE p.{_q('id')} = %(pair)s"
)
"""A pair's campaign, caption and campaign options, read without locking."""


def pair_target(pair_id: int) -> tuple[int, int, dict] | None:
    """(campaign id, caption id, campaign options) of :data:`PAIR_TARGET`, or None."""
    found = rows(PAIR_TARGET, {"pair": pair_id})
    if not found:
        return None
    (row,) = found
    options = _converted(Campaign, "k", "options", row.options)
    return row.campaign, row.caption, options


@functools.cache
def locked_pair_statement(lock: bool) -> str:
    """A pair with its campaign (less the provenance), its row locked when ``lock``."""
    statement = (
        f"SELECT {_select(_model_columns(LOCKED_PAIR_ROW))} FROM {_table(Pair)} p "
        f"JOIN {_table(Campaign)} k ON k.{_q('id')} = p.{_q('campaign_id')} "
        f"WHERE p.{_q('id')} = %(pair)s"
    )
    return statement + (" FOR UPDATE OF p" if lock else "")


def locked_pair(pair_id: int) -> Pair | None:
    """The pair of :func:`locked_pair_statement` with ``.campaign`` filled in, or None."""
    found = rows(
        locked_pair_statement(connection.features.has_select_for_update), {"pair": pair_id}
    )
    if not found:
        return None
    pair, campaign = instances(LOCKED_PAIR_ROW, found[0])
    pair.campaign = campaign
    return pair


@functools.cache
def query_pair_ids_statement(lock: bool) -> str:
    """Ids of one query's pairs in a campaign, in id order, locked when ``lock``."""
    statement = (
        f"SELECT p.{_q('id')} AS id FROM {_table(Pair)} p "
        f"WHERE p.{_q('campaign_id')} = %(campaign)s AND p.{_q('caption_id')} = %(caption)s "
        f"ORDER BY p.{_q('id')}"
    )
    return statement + (" FOR UPDATE" if lock else "")


def query_pair_ids(campaign_id: int, caption_id: int) -> list[int]:
    """The rows of :func:`query_pair_ids_statement`, locked where the database can."""
    statement = query_pair_ids_statement(connection.features.has_select_for_update)
    with connection.cursor() as cursor:
        cursor.execute(statement, {"campaign": campaign_id, "caption": caption_id})
        return [pk for (pk,) in cursor.fetchall()]


LOCK_TALLIES = (
    f"SELECT t.{_q('id')} AS id FROM {_table(CampaignTally)} t "
    f"WHERE t.{_q('campaign_id')} = %(campaign)s AND t.{_q('shard')} = ANY(%(shards)s) "
    f"ORDER BY t.{_q('shard')} FOR UPDATE"
)
"""Lock a campaign's tally rows of the given shards, in shard order (PostgreSQL only)."""


def lock_tallies(campaign_id: int, shards: Sequence[int]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(LOCK_TALLIES, {"campaign": campaign_id, "shards": list(shards)})
        cursor.fetchall()


QUERY_PAIR_COLUMNS = (
    "id",
    "pool_row",
    "position",
    "label_count",
    "relevant_count",
    "status",
    "adjudicated",
    "auto_label",
    "needed",
    "leased",
    "double",
)
QUERY_PAIRS = (
    f"SELECT {_select({name: f'p.{name}' for name in QUERY_PAIR_COLUMNS})} "
    f"FROM {_table(Pair)} p WHERE p.{_q('campaign_id')} = %(campaign)s "
    f"AND p.{_q('caption_id')} = %(caption)s ORDER BY p.{_q('pool_row')}"
)
"""One query's pairs in pool order, with what the judging order re-ranks them by."""


def query_pairs(campaign_id: int, caption_id: int) -> list[tuple]:
    """Plain rows of :data:`QUERY_PAIRS` (columns :data:`QUERY_PAIR_COLUMNS`)."""
    params = {"campaign": campaign_id, "caption": caption_id}
    return plain_rows(QUERY_PAIRS, params, QUERY_PAIR_COLUMNS)


INSERT_LEASE = (
    f"INSERT INTO {_table(Lease)} ({_q('pair_id')}, {_q('annotator_id')}, {_q('created_at')}, "
    f"{_q('expires_at')}) VALUES (%(pair)s, %(annotator)s, %(now)s, %(expires)s) "
    f"RETURNING {_q('id')}"
)


def insert_lease(pair_id: int, annotator_id: int, now: datetime, expires: datetime) -> int:
    """Store a lease (:data:`INSERT_LEASE`); the lease's id. The pair's counts are
    ``pair_state``'s to move."""
    adapt = connection.ops.adapt_datetimefield_value
    params = {"pair": pair_id, "annotator": annotator_id, "now": adapt(now)}
    params["expires"] = adapt(expires)
    return _inserted_id(INSERT_LEASE, params)


DELETE_LEASE = (
    f"DELETE FROM {_table(Lease)} WHERE {_q('pair_id')} = %(pair)s "
    f"AND {_q('annotator_id')} = %(annotator)s"
)


def delete_lease(pair_id: int, annotator_id: int) -> int:
    """Delete the annotator's lease on the pair; how many rows went (0 or 1). The pair's
    counts are ``pair_state``'s to move."""
    with connection.cursor() as cursor:
        cursor.execute(DELETE_LEASE, {"pair": pair_id, "annotator": annotator_id})
        return cursor.rowcount


CAMPAIGN_ROW: Sources = ((Campaign, "k", ("provenance",)),)
CAMPAIGN = (
    f"SELECT {_select(_model_columns(CAMPAIGN_ROW))} FROM {_table(Campaign)} k "
    f"WHERE k.{_q('id')} = %(campaign)s"
)
"""A campaign without its provenance (as ``Campaign.objects`` reads it)."""

MAX_ID = 2**63 - 1


def campaign(campaign_id: object) -> Campaign | None:
    """The campaign of :data:`CAMPAIGN` if ``campaign_id`` is a plausible id (an int or a
    string of digits, in range) naming one that is not a gold companion; else None."""
    text = str(campaign_id)
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_ID:
        return None
    found = rows(CAMPAIGN, {"campaign": int(text)})
    if not found:
        return None
    (loaded,) = instances(CAMPAIGN_ROW, found[0])
    return None if "gold_of" in (loaded.options or {}) else loaded


SAVE_COUNTS_COLUMNS = ("label_count", "relevant_count", "needed", "leased", "open_slots", "status")
SAVE_COUNTS = (
    f"UPDATE {_table(Pair)} SET "
    + ", ".join(f"{_q(name)} = %({name})s" for name in SAVE_COUNTS_COLUMNS)
    + f" WHERE {_q('id')} = %(pair)s"
)
"""A pair's label counts and what the policy needs of it, after a label or an undo."""


def save_counts(pair: Pair) -> None:
    params = {name: getattr(pair, name) for name in SAVE_COUNTS_COLUMNS}
    params["pair"] = pair.pk
    with connection.cursor() as cursor:
        cursor.execute(SAVE_COUNTS, params)


JUDGEMENT_ROW: Sources = ((Judgement, "j"),)
EARLIER_JUDGEMENTS = (
    f"SELECT (SELECT e.{_q('id')} FROM {_table(GoldJudgement)} e WHERE e.{_q('uuid')} = "
    f"%(uuid)s) AS gold_uses, {_select(_model_columns(JUDGEMENT_ROW))} "
    f"FROM (SELECT 1 AS one) x LEFT JOIN {_table(Judgement)} j "
    f"ON j.{_q('uuid')} = %(uuid)s OR (j.{_q('pair_id')} = %(pair)s "
    f"AND j.{_q('annotator_id')} = %(annotator)s AND j.{_q('undone_at')} IS NULL)"
)
"""The judgement a client's id already names, and the annotator's live one on the pair (none:
one row of nulls); ``gold_uses``: the gold answer the id names, if any (one id, one answer
of whatever kind)."""


def _uuid_value(value: object) -> object:
    return Judgement._meta.get_field("uuid").get_db_prep_value(value, connection)


def earlier_judgements(
    client_uuid: object, pair_id: int, annotator_id: int
) -> tuple[list[Judgement], bool]:
    """The judgements of :data:`EARLIER_JUDGEMENTS`, and whether a gold answer has the id."""
    params = {"uuid": _uuid_value(client_uuid), "pair": pair_id, "annotator": annotator_id}
    found = rows(EARLIER_JUDGEMENTS, params)
    judgements = [instances(JUDGEMENT_ROW, row)[0] for row in found if row.j_id is not None]
    return judgements, found[0].gold_uses is not None


def _inserted_id(statement: str, params: Mapping[str, object]) -> int:
    """Run an ``INSERT ... RETURNING id`` and return the new row's id."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        (new_id,) = cursor.fetchone()
    return new_id


INSERT_JUDGEMENT = (
    f"INSERT INTO {_table(Judgement)} ({_q('uuid')}, {_q('pair_id')}, {_q('annotator_id')}, "
    f"{_q('label')}, {_q('seconds')}, {_q('created_at')}) "
    f"VALUES (%(uuid)s, %(pair)s, %(annotator)s, %(label)s, %(seconds)s, %(now)s) "
    f"RETURNING {_q('id')}"
)


def insert_judgement(
    client_uuid: object, pair_id: int, annotator_id: int, label: str, seconds, now: datetime
) -> Judgement:
    """Store a live judgement (:data:`INSERT_JUDGEMENT`) made at ``now``; the new row."""
    params = {
        "uuid": _uuid_value(client_uuid),
        "pair": pair_id,
        "annotator": annotator_id,
        "label": label,
        "seconds": seconds,
        "now": connection.ops.adapt_datetimefield_value(now),
    }
    judgement_id = _inserted_id(INSERT_JUDGEMENT, params)
    return Judgement(
        pk=judgement_id,
        uuid=client_uuid,
        pair_id=pair_id,
        annotator_id=annotator_id,
        label=label,
        seconds=seconds,
        created_at=now,
    )


QUALIFICATION = (
    f"SELECT (SELECT COUNT(*) FROM {_table(GoldPair)} g WHERE g.{_q('campaign_id')} = "
    f"%(campaign)s) AS gold_pairs, a.{_q('id')} AS id, a.{_q('passed')} AS passed, "
    f"a.{_q('admitted_by_id')} AS admitted_by, a.{_q('finished_at')} AS finished_at, "
    f"a.{_q('correct')} AS correct, a.{_q('total')} AS total, "
    f"(SELECT COUNT(*) FROM {_table(GoldJudgement)} j WHERE j.{_q('attempt_id')} = a.{_q('id')} "
    f"AND j.{_q('undone_at')} IS NULL) AS answered FROM (SELECT 1 AS one) x LEFT JOIN {_table(QualificationAttempt)} a "
    f"ON a.{_q('campaign_id')} = %(campaign)s AND a.{_q('annotator_id')} = %(annotator)s "
    f"ORDER BY a.{_q('started_at')}, a.{_q('id')}"
)
"""A campaign's gold pairs and an annotator's qualification attempts in it, oldest first,
with how many training pairs each answered, in one statement (a row with a null ``id``
when there is no attempt)."""


def qualification(campaign_id: int, annotator_id: int) -> tuple[int, list[tuple]]:
    """(gold pairs, attempt rows) of :data:`QUALIFICATION`; ``finished_at`` as an aware
    datetime or None."""
    found = rows(QUALIFICATION, {"campaign": campaign_id, "annotator": annotator_id})
    attempts = [
        row._replace(finished_at=None if row.finished_at is None else aware_time(row.finished_at))
        for row in found
        if row.id is not None
    ]
    return int(found[0].gold_pairs), attempts


PAUSED = (
    f"SELECT {_select(_model_columns(STANDING_ROW))} FROM {_table(AnnotatorStanding)} s "
    f"WHERE s.{_q('campaign_id')} = %(campaign)s AND s.{_q('annotator_id')} = %(annotator)s "
    f"AND s.{_q('paused_at')} IS NOT NULL ORDER BY s.{_q('id')} LIMIT 1"
)
"""An annotator's standing in a campaign if it pauses them."""


def paused(campaign_id: int, annotator_id: int) -> AnnotatorStanding | None:
    found = rows(PAUSED, {"campaign": campaign_id, "annotator": annotator_id})
    return instances(STANDING_ROW, found[0])[0] if found else None


GOLD_QUEUE_ANSWERS = (
    f"SELECT COALESCE(SUM(CASE WHEN a.{_q('created_at')} >= %(since)s THEN 1 ELSE 0 END), 0) "
    f"AS today, COUNT(*) AS total FROM {_table(GoldJudgement)} a "
    f"JOIN {_table(GoldPair)} g ON g.{_q('id')} = a.{_q('gold_pair_id')} "
    f"WHERE g.{_q('campaign_id')} = %(campaign)s AND a.{_q('annotator_id')} = %(annotator)s "
    f"AND a.{_q('purpose')} = %(purpose)s AND a.{_q('undone_at')} IS NULL"
)
"""How many gold pairs an annotator answered in a campaign's queue since a moment, and in all
(answers not taken back)."""


def gold_queue_answers(
    campaign_id: int, annotator_id: int, purpose: str, since: datetime
) -> tuple[int, int]:
    params = {
        "campaign": campaign_id,
        "annotator": annotator_id,
        "purpose": purpose,
        "since": connection.ops.adapt_datetimefield_value(since),
    }
    (row,) = rows(GOLD_QUEUE_ANSWERS, params)
    return int(row.today), int(row.total)


@functools.cache
def gold_task_statement(excluded: int) -> str:
    """A random gold task of ``%(campaign)s`` to serve ``%(annotator)s`` in the queue, with
    caption and video (:data:`PAIR_ROW`): one they have not answered there and do not hold,
    not among ``%(exclude_0)s``...; ``untasked`` counts the campaign's gold pairs that have
    no task yet (made on demand by ``gold_queue.ensure_tasks``)."""
    statement = (
        f"SELECT {_select(_model_columns(PAIR_ROW))}, (SELECT COUNT(*) FROM {_table(GoldPair)} u "
        f"WHERE u.{_q('campaign_id')} = %(campaign)s AND u.{_q('task_id')} IS NULL) AS untasked "
        f"FROM {_table(GoldPair)} g JOIN {_table(Pair)} p ON p.{_q('id')} = g.{_q('task_id')} "
        f"{_with_caption_and_video()} WHERE g.{_q('campaign_id')} = %(campaign)s "
        f"AND NOT EXISTS (SELECT 1 FROM {_table(GoldJudgement)} a "
        f"WHERE a.{_q('gold_pair_id')} = g.{_q('id')} AND a.{_q('annotator_id')} = %(annotator)s "
        f"AND a.{_q('purpose')} = %(queue)s AND a.{_q('undone_at')} IS NULL) "
        f"AND NOT EXISTS (SELECT 1 FROM {_table(Lease)} l WHERE l.{_q('pair_id')} = p.{_q('id')} "
        f"AND l.{_q('annotator_id')} = %(annotator)s)"
    )
    if excluded:
        names = ", ".join(f"%(exclude_{i})s" for i in range(excluded))
        statement += f" AND p.{_q('id')} NOT IN ({names})"
    return statement + " ORDER BY RANDOM() LIMIT 1"


def gold_task(campaign_id: int, annotator_id: int, exclude: Sequence[int]) -> tuple | None:
    """The row of :func:`gold_task_statement`, or None when no gold task is left to serve."""
    params = {
        "campaign": campaign_id,
        "annotator": annotator_id,
        "queue": GoldJudgement.Purpose.QUEUE.value,
    }
    params.update((f"exclude_{i}", pk) for i, pk in enumerate(exclude))
    found = rows(gold_task_statement(len(exclude)), params)
    return found[0] if found else None


GOLD_JUDGEMENT_ROW: Sources = ((GoldJudgement, "e"),)
GOLD_ANSWER = (
    f"SELECT g.{_q('id')} AS gold, g.{_q('campaign_id')} AS campaign, g.{_q('label')} AS label, "
    f"g.{_q('explanation')} AS explanation, g.{_q('guideline')} AS guideline, "
    f"(SELECT a.{_q('id')} FROM {_table(QualificationAttempt)} a "
    f"WHERE a.{_q('campaign_id')} = g.{_q('campaign_id')} "
    f"AND a.{_q('annotator_id')} = %(annotator)s AND a.{_q('finished_at')} IS NULL "
    f"ORDER BY a.{_q('id')} LIMIT 1) AS attempt, "
    f"(SELECT COUNT(*) FROM {_table(GoldJudgement)} q WHERE q.{_q('gold_pair_id')} = g.{_q('id')} "
    f"AND q.{_q('annotator_id')} = %(annotator)s AND q.{_q('purpose')} = %(queue)s "
    f"AND q.{_q('undone_at')} IS NULL) AS answered, "
    f"(SELECT j.{_q('id')} FROM {_table(Judgement)} j WHERE j.{_q('uuid')} = %(uuid)s) "
    f"AS label_uses, s.{_q('paused_at')} AS paused_at, "
    + ", ".join(
        f"(SELECT {value} FROM {_table(GoldJudgement)} a "
        f"JOIN {_table(GoldPair)} h ON h.{_q('id')} = a.{_q('gold_pair_id')} "
        f"WHERE h.{_q('campaign_id')} = g.{_q('campaign_id')} "
        f"AND a.{_q('annotator_id')} = %(annotator)s AND a.{_q('purpose')} = %(queue)s "
        f"AND a.{_q('undone_at')} IS NULL AND (s.{_q('reinstated_at')} IS NULL "
        f"OR a.{_q('created_at')} > s.{_q('reinstated_at')})) AS {name}"
        for name, value in (
            ("gold_total", "COUNT(*)"),
            (
                "gold_correct",
                f"COALESCE(SUM(CASE WHEN a.{_q('label')} = h.{_q('label')} THEN 1 ELSE 0 END), 0)",
            ),
        )
    )
    + f", {_select(_model_columns(GOLD_JUDGEMENT_ROW))} FROM (SELECT 1 AS one) x "
    f"LEFT JOIN {_table(GoldPair)} g ON g.{_q('task_id')} = %(task)s "
    f"LEFT JOIN {_table(AnnotatorStanding)} s ON s.{_q('campaign_id')} = g.{_q('campaign_id')} "
    f"AND s.{_q('annotator_id')} = %(annotator)s "
    f"LEFT JOIN {_table(GoldJudgement)} e ON e.{_q('uuid')} = %(uuid)s"
)
"""Everything an answer on a gold task needs, in one row: the gold pair (null ``gold`` when
it is gone), the annotator's qualification attempt in progress, whether they answered the
pair in the queue already (and not undone), the answer the client's id names if it was
stored, and ``label_uses``: the campaign label that id names, if any (one id names one
answer, whatever its kind, or a gold task would answer a reused id unlike any other). And
the annotator's standing as :data:`GOLD_EVIDENCE` reads it (``paused_at``, and their live
queue answers on the campaign's gold since their reinstatement: ``gold_total``,
``gold_correct``), so that scoring a gold answer takes no statement of its own."""


def gold_answer(task_id: int, annotator_id: int, client_uuid: object) -> tuple:
    """The row of :data:`GOLD_ANSWER`; ``stored`` is the stored answer or None."""
    params = {
        "task": task_id,
        "annotator": annotator_id,
        "queue": GoldJudgement.Purpose.QUEUE.value,
        "uuid": _uuid_value(client_uuid),
    }
    (row,) = rows(GOLD_ANSWER, params)
    stored = instances(GOLD_JUDGEMENT_ROW, row)[0] if row.e_id is not None else None
    return row._replace(
        gold_total=int(row.gold_total or 0), gold_correct=int(row.gold_correct or 0)
    ), stored


INSERT_GOLD_JUDGEMENT = (
    f"INSERT INTO {_table(GoldJudgement)} ({_q('uuid')}, {_q('gold_pair_id')}, "
    f"{_q('annotator_id')}, {_q('label')}, {_q('seconds')}, {_q('created_at')}, "
    f"{_q('purpose')}, {_q('attempt_id')}) VALUES (%(uuid)s, %(gold)s, %(annotator)s, "
    f"%(label)s, %(seconds)s, %(now)s, %(purpose)s, %(attempt)s) RETURNING {_q('id')}"
)


def insert_gold_judgement(
    client_uuid: object,
    gold_pair_id: int,
    annotator_id: int,
    label: str,
    seconds,
    now: datetime,
    purpose: str,
    attempt_id: int | None,
) -> GoldJudgement:
    """Store an answer on a gold pair (:data:`INSERT_GOLD_JUDGEMENT`) made at ``now``."""
    params = {
        "uuid": _uuid_value(client_uuid),
        "gold": gold_pair_id,
        "annotator": annotator_id,
        "label": label,
        "seconds": seconds,
        "now": connection.ops.adapt_datetimefield_value(now),
        "purpose": purpose,
        "attempt": attempt_id,
    }
    judgement_id = _inserted_id(INSERT_GOLD_JUDGEMENT, params)
    return GoldJudgement(
        pk=judgement_id,
        uuid=client_uuid,
        gold_pair_id=gold_pair_id,
        annotator_id=annotator_id,
        label=label,
        seconds=seconds,
        created_at=now,
        purpose=purpose,
        attempt_id=attempt_id,
    )


GOLD_EVIDENCE = (
    f"SELECT s.{_q('paused_at')} AS paused_at, s.{_q('reinstated_at')} AS reinstated_at, "
    f"COUNT(a.{_q('id')}) AS total, "
    f"COALESCE(SUM(CASE WHEN a.{_q('label')} = g.{_q('label')} THEN 1 ELSE 0 END), 0) AS correct "
    f"FROM (SELECT 1 AS one) x LEFT JOIN {_table(AnnotatorStanding)} s "
    f"ON s.{_q('campaign_id')} = %(campaign)s AND s.{_q('annotator_id')} = %(annotator)s "
    f"LEFT JOIN {_table(GoldJudgement)} a ON a.{_q('annotator_id')} = %(annotator)s "
    f"AND a.{_q('purpose')} = %(queue)s AND a.{_q('undone_at')} IS NULL "
    f"AND (s.{_q('reinstated_at')} IS NULL OR a.{_q('created_at')} > s.{_q('reinstated_at')}) "
    f"AND a.{_q('gold_pair_id')} IN (SELECT g2.{_q('id')} FROM {_table(GoldPair)} g2 "
    f"WHERE g2.{_q('campaign_id')} = %(campaign)s) "
    f"LEFT JOIN {_table(GoldPair)} g ON g.{_q('id')} = a.{_q('gold_pair_id')} "
    f"GROUP BY s.{_q('paused_at')}, s.{_q('reinstated_at')}"
)
"""An annotator's standing in a campaign (paused, reinstated: null without one) and their
queue answers on its gold pairs since the reinstatement: how many, how many right."""


def gold_evidence(campaign_id: int, annotator_id: int) -> tuple:
    """The row of :data:`GOLD_EVIDENCE`, times as aware datetimes or None and counts as ints."""
    params = {
        "campaign": campaign_id,
        "annotator": annotator_id,
        "queue": GoldJudgement.Purpose.QUEUE.value,
    }
    (row,) = rows(GOLD_EVIDENCE, params)
    return row._replace(
        paused_at=None if row.paused_at is None else aware_time(row.paused_at),
        reinstated_at=None if row.reinstated_at is None else aware_time(row.reinstated_at),
        total=int(row.total),
        correct=int(row.correct),
    )


@functools.cache
def recent_seconds_statement(since: bool) -> str:
    """The times an annotator spent on their ``%(recent)s`` latest live labels in a campaign
    (after ``%(since)s`` when ``since``), newest first, through the (annotator, time) index."""
    statement = (
        f"SELECT j.{_q('seconds')} AS seconds FROM {_table(Judgement)} j "
        f"JOIN {_table(Pair)} p ON p.{_q('id')} = j.{_q('pair_id')} "
        f"WHERE j.{_q('annotator_id')} = %(annotator)s AND p.{_q('campaign_id')} = %(campaign)s "
        f"AND j.{_q('undone_at')} IS NULL AND j.{_q('seconds')} IS NOT NULL"
    )
    if since:
        statement += f" AND j.{_q('created_at')} > %(since)s"
    return statement + f" ORDER BY j.{_q('created_at')} DESC LIMIT %(recent)s"


def recent_seconds(
    campaign_id: int, annotator_id: int, since: datetime | None, recent: int
) -> list[float]:
    params = {"campaign": campaign_id, "annotator": annotator_id, "recent": recent}
    if since is not None:
        params["since"] = connection.ops.adapt_datetimefield_value(since)
    with connection.cursor() as cursor:
        cursor.execute(recent_seconds_statement(since is not None), params)
        return [float(seconds) for (seconds,) in cursor.fetchall()]


TALLY_COLUMNS = {
    "judged_today": (
        f"SELECT coalesce(sum({_q('judged')}), 0) FROM {_table(AnnotatorTally)} "
        f"WHERE {_q('campaign_id')} = %(campaign)s AND {_q('annotator_id')} = %(annotator)s "
        f"AND {_q('day')} = %(day)s"
    ),
    "judged_total": (
        f"SELECT coalesce(sum({_q('judged')}), 0) FROM {_table(AnnotatorTally)} "
        f"WHERE {_q('campaign_id')} = %(campaign)s AND {_q('annotator_id')} = %(annotator)s"
    ),
    "pairs": (
        f"SELECT coalesce(sum({_q('pairs')}), 0) FROM {_table(CampaignTally)} "
        f"WHERE {_q('campaign_id')} = %(campaign)s"
    ),
    "labels_left": (
        f"SELECT coalesce(sum({_q('labels_left')}), 0) FROM {_table(CampaignTally)} "
        f"WHERE {_q('campaign_id')} = %(campaign)s"
    ),
}
GOLD_TALLY_COLUMNS = {
    name: (
        f"SELECT {count} FROM {_table(GoldJudgement)} a "
        f"JOIN {_table(GoldPair)} g ON g.{_q('id')} = a.{_q('gold_pair_id')} "
        f"WHERE g.{_q('campaign_id')} = %(campaign)s AND a.{_q('annotator_id')} = %(annotator)s "
        f"AND a.{_q('purpose')} = %(queue)s AND a.{_q('undone_at')} IS NULL"
    )
    for name, count in (
        (
            "gold_today",
            f"COALESCE(SUM(CASE WHEN a.{_q('created_at')} >= %(since)s THEN 1 ELSE 0 END), 0)",
        ),
        ("gold_total", "COUNT(*)"),
    )
}


@functools.cache
def tallies_statement(gold: bool) -> str:
    """An annotator's live judgements on a UTC day and in all, and a campaign's pairs not
    held and labels left, from the running totals PostgreSQL's triggers keep (migration
    0004): a few index lookups however large the campaign, where counting would read every
    pair. With ``gold``, also the annotator's queue answers on gold since ``%(since)s``
    (the day's start) and in all, which progress counts as judgements."""
    columns = {**TALLY_COLUMNS, **(GOLD_TALLY_COLUMNS if gold else {})}
    return "SELECT " + ", ".join(f"({query}) AS {name}" for name, query in columns.items())


def tallies(campaign_id: int, annotator_id: int | None, day: date, gold: bool = False) -> tuple:
    """The row of :func:`tallies_statement`, its counts as ints."""
    params = {"campaign": campaign_id, "annotator": annotator_id, "day": day}
    if gold:
        start = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
        params.update(
            queue=GoldJudgement.Purpose.QUEUE.value,
            since=connection.ops.adapt_datetimefield_value(start),
        )
    (row,) = rows(tallies_statement(gold), params)
    return row._make(int(value) for value in row)


# The agreement report's label loader (annotation.services.reporting): building a Python
# object per row is most of its cost, so each row carries as few values as it can.

ANNOTATOR_SPAN = 2**32
"""Annotator ids below this are packed with the pair and label into one integer per row."""


@functools.cache
def judgement_keys_statement(packed: bool, contiguous: bool) -> str:
    """A campaign's live judgements, one row each: ``key`` is ``(pair_id - %(first)s) * 2 +
    (1 if relevant)``, times :data:`ANNOTATOR_SPAN` plus the annotator id when ``packed``
    (else an ``annotator`` column), and ``seconds`` (-1 when missing).

    With ``contiguous`` pair ids, ``pair_id BETWEEN %(first)s AND %(last)s`` (an index)
    selects them without a join; otherwise a join on ``%(campaign)s`` does.
    """
    pair_id = f"j.{_q('pair_id')}"
    key = (
        f"({pair_id} - %(first)s) * 2 + CASE WHEN j.{_q('label')} = %(relevant)s THEN 1 ELSE 0 END"
    )
    columns = (
        {"key": f"({key}) * {ANNOTATOR_SPAN} + j.{_q('annotator_id')}"}
        if packed
        else {"key": key, "annotator": "j.annotator_id"}
    )
    columns["seconds"] = f"COALESCE(j.{_q('seconds')}, -1.0)"
    statement = f"SELECT {_select(columns)} FROM {_table(Judgement)} j "
    if contiguous:
        statement += f"WHERE {pair_id} BETWEEN %(first)s AND %(last)s"
    else:
        statement += (
            f"JOIN {_table(Pair)} p ON p.{_q('id')} = {pair_id} "
            f"WHERE p.{_q('campaign_id')} = %(campaign)s"
        )
    return statement + f" AND j.{_q('undone_at')} IS NULL"


def judgement_keys(
    campaign_id: int, first_pair: int, last_pair: int, contiguous: bool, packed: bool
) -> np.ndarray:
    """The rows of :func:`judgement_keys_statement` as an array (``key``, [``annotator``,] ``seconds``)."""
    names = ["key", "seconds"] if packed else ["key", "annotator", "seconds"]
    dtype = np.dtype([(name, np.float64 if name == "seconds" else np.int64) for name in names])
    params = {
        "first": first_pair,
        "last": last_pair,
        "campaign": campaign_id,
        "relevant": Judgement.Label.RELEVANT.value,
    }
    return array(judgement_keys_statement(packed, contiguous), params, dtype)


# Exports (annotation.services.exports): a join in the database beats assembling pairs,
# captions, videos and judgements in Python by a third at FIRE's scale.

EXPORT_COLUMNS = {
    "pair_id": "p.id",
    "campaign_id": "p.campaign_id",
    "pool_row": "p.pool_row",
    "status": "p.status",
    "adjudicated": "p.adjudicated",
    "caption_id": "p.caption_id",
    "caption_key": "c.key",
    "caption_text": "c.text",
    "video_key": "v.key",
    "annotator_id": "j.annotator_id",
    "label": "j.label",
    "seconds": "j.seconds",
    "created_at": "j.created_at",
    "uuid": "j.uuid",
    "auto_label": "p.auto_label",
}
"""The columns of :data:`EXPORT_ROWS`: alias and expression, in select order."""

EXPORT_ROWS = (
    f"SELECT {_select(EXPORT_COLUMNS)} FROM {_table(Pair)} p {_with_caption_and_video()} "
    f"LEFT JOIN {_table(Judgement)} j ON j.{_q('pair_id')} = p.{_q('id')} "
    f"AND j.{_q('undone_at')} IS NULL "
    f"WHERE p.{_q('id')} >= %(low)s AND p.{_q('id')} < %(high)s "
    f"ORDER BY p.{_q('id')}, j.{_q('created_at')}, j.{_q('id')}"
)
"""One row per live label (or one per unlabelled pair) of the pairs with ids in
``[%(low)s, %(high)s)``, pairs in id order and each pair's labels in the order given.
Every campaign's pairs in the window come back: the caller keeps its own."""


def export_rows(low: int, high: int) -> list[tuple]:
    """The rows of :data:`EXPORT_ROWS` for the id window ``[low, high)``, as plain tuples
    in :data:`EXPORT_COLUMNS` order: read them with ``reader(EXPORT_COLUMNS, ...)``."""
    return plain_rows(EXPORT_ROWS, {"low": low, "high": high}, tuple(EXPORT_COLUMNS))


def uuid_text(value: object) -> str:
    """``8-4-4-4-12`` form of a UUID column (32 hex digits on SQLite, a UUID on PostgreSQL)."""
    text = str(value).lower()
    if len(text) == 32:
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
    return text


def aware_time(value: object) -> datetime:
    """A time column as an aware datetime (UTC text on SQLite, aware on PostgreSQL)."""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


# Bulk inserts (annotation.services.campaigns): hundreds of thousands of pairs through the
# ORM's per-object machinery would take far longer than pooling them.


def column_rows(columns: Mapping[str, object]) -> tuple[list[str], Iterator[tuple]]:
    """(column names, row tuples) from values given by column: a list for a column that
    varies, a single value for one that is the same in every row."""
    lengths = {len(values) for values in columns.values() if isinstance(values, list)}
    if len(lengths) != 1:
        raise ValueError(f"columns given as lists must have one length, not {sorted(lengths)}")
    (n,) = lengths
    values = (v if isinstance(v, list) else itertools.repeat(v, n) for v in columns.values())
    return list(columns), zip(*values, strict=True)


def insert(model: type[Model], columns: Mapping[str, object]) -> int:
    """Insert rows into ``model``'s table, given by column (see :func:`column_rows`).

    Every name must be a column of the model; the others take their database defaults.
    On SQLite the driver's ``executemany`` runs one prepared statement per row in C (the
    fastest path); elsewhere multi-row INSERTs of up to :data:`MAX_PARAMETERS` values.
    Both bind positional placeholders, generated from the same names as the rows.
    """
    names, values = column_rows(columns)
    unknown = set(names) - {field.column for field in model._meta.concrete_fields}
    if unknown:
        raise ValueError(f"{model.__name__} has no columns {sorted(unknown)}")
    table = f"{_table(model)} ({', '.join(map(_q, names))})"
    connection.ensure_connection()
    if connection.vendor == "sqlite":
        row_list = list(values)
        placeholders = ", ".join("?" * len(names))
        connection.connection.executemany(f"INSERT INTO {table} VALUES ({placeholders})", row_list)
        return len(row_list)
    batch = MAX_PARAMETERS.get(connection.vendor, 30000) // len(names)
    row = "(" + ", ".join(["%s"] * len(names)) + ")"
    written = 0
    with connection.cursor() as cursor:
        for chunk in _batches(values, batch):
            flat = [value for values_of_row in chunk for value in values_of_row]
            cursor.execute(f"INSERT INTO {table} VALUES {', '.join([row] * len(chunk))}", flat)
            written += len(chunk)
    return written


def _batches(items: Iterable[tuple], size: int) -> Iterator[list[tuple]]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk
