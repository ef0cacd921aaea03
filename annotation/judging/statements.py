"""Every hand-written SQL statement of the annotation app, and the helpers that run them.

Each replaced an ORM query that measured too slow on a hot path (``bench/RESULTS.md``,
``bench/request_profile.py``). Each is a :class:`config.raw_sql.Statement`: SQL whose names
come from the models' ``_meta`` (``{pair}``, ``{pair.open_slots}``, ``{pair:p.*}``), with
aliased columns and named parameters, registered with the named tuple of its rows and run
by one test on every backend; an ORM-written query is compiled once and rebound
(:class:`config.raw_sql.Compiled`). Statements whose rows become several models' instances
at once stay hand-written: the ORM's per-row machinery is what measured slow. The triggers
that keep the tallies live with their migrations (0004 on PostgreSQL, 0013 on SQLite).
"""

import contextlib
import contextvars
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import NamedTuple

import numpy as np
from django.core.exceptions import EmptyResultSet
from django.db import connection, transaction
from django.db.models import F, Model, QuerySet, Value
from django.db.models.sql.subqueries import UpdateQuery

from annotation.judging.task_ids import MAX_ID
from annotation.models import (
    AnnotatorModel,
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
    open_slots_expression,
)
from config.backends import backend
from config.raw_sql import Compiled, Sources, Statement, instances, model_row
from config.raw_sql import column_names as _names
from config.raw_sql import converted as _converted
from config.raw_sql import quote as _q
from config.raw_sql import table as _table
from retrieval.models import BROWSER_READY_STATES, Caption, Video

FETCH_ROWS = 50_000
"""Rows fetched from the cursor at a time while filling an array."""

MAX_PARAMETERS = 60_000
"""Bound parameters per multi-row INSERT: under PostgreSQL's limit of 65,535."""


def reader(names: Iterable[str], *wanted: str) -> Callable[[tuple], object]:
    """A function giving the ``wanted`` columns of a plain row whose columns are ``names``:
    their values in the order asked (a single value when one is asked)."""
    order = list(names)
    return operator.itemgetter(*(order.index(name) for name in wanted))


STREAM_ROWS = 20_000
"""Rows a streamed read (:func:`streamed_reads`) asks the server for at a time."""
_STREAMED = contextvars.ContextVar("firepool_streamed_reads", default=False)


@contextlib.contextmanager
def streamed_reads() -> Iterator[None]:
    """Inside, :func:`array` and :func:`queryset_array` read as a background job should: on
    PostgreSQL through a server-side cursor, :data:`STREAM_ROWS` rows at a time and no
    parallel plan, so a niced job paces its server work (read at once, 600,000 pairs' status
    held a PostgreSQL core for 0.6 s beside 250 annotators judging, ``bench/load.py``)."""
    token = _STREAMED.set(True)
    settings = backend().background_settings
    with connection.cursor() as cursor:
        for setting in settings:
            cursor.execute(f"SET {setting}")
    try:
        yield
    finally:
        _STREAMED.reset(token)
        with connection.cursor() as cursor:
            for setting in settings:
                cursor.execute(f"RESET {setting.split('=')[0].strip()}")


@contextlib.contextmanager
def _reading_cursor() -> Iterator:
    """A client cursor, or a server-side one inside :func:`streamed_reads` where the
    backend has them (:attr:`config.backends.Backend.server_side_reads`)."""
    if not (_STREAMED.get() and backend().server_side_reads):
        with connection.cursor() as cursor:
            yield cursor
        return
    with transaction.atomic(), connection.chunked_cursor() as cursor:
        yield cursor


def array(
    statement: Statement, params: Mapping[str, object], dtype: np.dtype, **variant
) -> np.ndarray:
    """The rows of ``statement`` as a structured array whose fields are the column aliases,
    in chunks straight from the driver: the way to read hundreds of thousands of rows."""
    with _reading_cursor() as cursor:
        statement.cursor_rows(cursor, params, **variant)
        return _fetch_array(cursor, dtype)


def queryset_array(queryset: QuerySet, dtype: np.dtype) -> np.ndarray:
    """The rows of a ``values_list`` queryset as a structured array, without model objects
    (none for a queryset that can match nothing, such as an empty ``__in``)."""
    try:
        statement = queryset.query.sql_with_params()
    except EmptyResultSet:
        return np.empty(0, dtype=dtype)
    with _reading_cursor() as cursor:
        cursor.execute(*statement)
        return _fetch_array(cursor, dtype)


def _fetch_array(cursor, dtype: np.dtype) -> np.ndarray:
    if _names(cursor) != dtype.names:
        raise ValueError(f"columns {_names(cursor)} do not match the fields {dtype.names}")
    chunks = [np.empty(0, dtype=dtype)]
    rows = STREAM_ROWS if _STREAMED.get() else FETCH_ROWS
    while batch := cursor.fetchmany(rows):
        chunks.append(np.array(batch, dtype=dtype))
    return np.concatenate(chunks)


PAIR_ROW: Sources = ((Pair, "p"), (Caption, "c"), (Video, "v"))
LEASE_ROW: Sources = ((Lease, "l"), *PAIR_ROW)
LOCKED_PAIR_ROW: Sources = ((Pair, "p"), (Campaign, "k", ("provenance",)))
STANDING_ROW: Sources = ((AnnotatorStanding, "s"),)

MODELS = {
    "pair": Pair,
    "caption": Caption,
    "video": Video,
    "lease": Lease,
    "campaign": Campaign,
    "judgement": Judgement,
    "gold_pair": GoldPair,
    "gold_judgement": GoldJudgement,
    "standing": AnnotatorStanding,
    "attempt": QualificationAttempt,
    "annotator_tally": AnnotatorTally,
    "campaign_tally": CampaignTally,
    "annotator_model": AnnotatorModel,
}
"""The names a statement's text uses for the models (``{pair}``, ``{pair.open_slots}``)."""


def statement(name: str, text, row, variants=({},)) -> Statement:
    """Register one of this module's statements (see :class:`config.raw_sql.Statement`)."""
    return Statement(name, MODELS, text, row, variants)


class Inserted(NamedTuple):
    """The row of an ``INSERT ... RETURNING`` the new row's id."""

    id: int


def in_list(prefix: str, n: int) -> str:
    """``%(prefix_0)s, %(prefix_1)s, ...``: the parameters of an ``IN`` list of ``n`` values."""
    return ", ".join(f"%({prefix}_{i})s" for i in range(n))


def joined_pair(pair: Pair, caption: Caption, video: Video) -> Pair:
    """``pair`` with the caption and video read in the same row (:data:`PAIR_ROW`'s rest)."""
    pair.caption, pair.video = caption, video
    return pair


WITH_CAPTION_AND_VIDEO = """
JOIN {caption} c ON c.{caption.id} = p.{pair.caption}
JOIN {video} v ON v.{video.id} = p.{pair.video}"""


# The judging queue (annotation.judging.queue): composing these two through the ORM
# took 1.4-1.9 ms of CPU each, about eight times the cost of running them.

LeaseRow = model_row("LeaseRow", LEASE_ROW)
HELD_AND_EXPIRED = statement(
    "held_and_expired",
    """
    SELECT {lease:l.*}, {pair:p.*}, {caption:c.*}, {video:v.*}
    FROM {lease} l JOIN {pair} p ON p.{pair.id} = l.{lease.pair}"""
    + WITH_CAPTION_AND_VIDEO
    + """
    WHERE (p.{pair.campaign} = %(campaign)s OR p.{pair.id} IN (
            SELECT g.{gold_pair.task} FROM {gold_pair} g
            WHERE g.{gold_pair.campaign} = %(campaign)s AND g.{gold_pair.task} IS NOT NULL))
      AND (l.{lease.annotator} = %(annotator)s OR l.{lease.expires_at} <= %(now)s)
    ORDER BY l.{lease.created_at}, l.{lease.id}""",
    LeaseRow,
)
"""An annotator's leases in a campaign (its gold tasks included) and everyone's expired ones,
oldest first, with pair, caption and video (:data:`LEASE_ROW`)."""


def held_and_expired(campaign_id: int, annotator_id: int, now: datetime) -> list[Lease]:
    """The leases of :data:`HELD_AND_EXPIRED`, each with its pair, caption and video."""
    moment = connection.ops.adapt_datetimefield_value(now)
    params = {"campaign": campaign_id, "annotator": annotator_id, "now": moment}
    leases = []
    for lease, *pair in HELD_AND_EXPIRED.instances(params, LEASE_ROW):
        lease.pair = joined_pair(*pair)
        leases.append(lease)
    return leases


def _next_pair_text(same_caption: bool, excluded: int) -> str:
    """The first open, playable pair in queue order that the annotator has not judged, with
    caption and video (on ``%(caption)s`` with ``same_caption``; ``excluded`` pairs left
    out), its row locked where the database can, skipping rows others hold. NOT EXISTS goes
    through the (pair, annotator) index; NOT IN their judged pairs would grow with them."""
    return (
        "SELECT {pair:p.*}, {caption:c.*}, {video:v.*} FROM {pair} p"
        + WITH_CAPTION_AND_VIDEO
        + "\nWHERE p.{pair.campaign} = %(campaign)s AND p.{pair.open_slots} > 0"
        + " AND v.{video.media_state} IN (%(as_is)s, %(ready)s)"
        + (" AND p.{pair.caption} = %(caption)s" if same_caption else "")
        + (f" AND p.{{pair.id}} NOT IN ({in_list('exclude', excluded)})" if excluded else "")
        + """
        AND NOT EXISTS (SELECT 1 FROM {judgement} j WHERE j.{judgement.pair} = p.{pair.id}
            AND j.{judgement.annotator} = %(annotator)s AND j.{judgement.undone_at} IS NULL)
        ORDER BY p.{pair.position} LIMIT 1"""
        + (
            " FOR UPDATE OF p SKIP LOCKED"
            if connection.features.has_select_for_update_skip_locked
            else ""
        )
    )


PairRow = model_row("PairRow", PAIR_ROW)
NEXT_PAIR = statement(
    "next_pair",
    _next_pair_text,
    PairRow,
    [{"same_caption": same, "excluded": n} for same in (False, True) for n in (0, 2)],
)


def next_pair(
    campaign_id: int, annotator_id: int, exclude: Sequence[int], caption_id: int | None
) -> Pair | None:
    """The pair of :data:`NEXT_PAIR` with its caption and video (on ``caption_id`` when
    given), or None."""
    params = {"campaign": campaign_id, "annotator": annotator_id, "caption": caption_id}
    params["as_is"], params["ready"] = BROWSER_READY_STATES
    params.update((f"exclude_{i}", pk) for i, pk in enumerate(exclude))
    variant = {"same_caption": caption_id is not None, "excluded": len(exclude)}
    found = NEXT_PAIR.instances(params, PAIR_ROW, **variant)
    return joined_pair(*found[0]) if found else None


# The submit path (annotation.judging.queue, pair_state, standing, gold_queue): the
# same trade as the queue's queries above; composing each through the ORM cost 1-3 ms of CPU
# per request, several times its run (measured by bench/request_profile.py).


class PairTarget(NamedTuple):
    """A pair's campaign and caption ids, the campaign's options, the campaign a gold task
    serves (None for a campaign's own pairs) and whether the annotator is paused in the
    campaign judged (the main one for a gold task)."""

    campaign: int
    caption: int
    options: dict
    gold_of: int | None
    paused: bool


PAIR_TARGET = statement(
    "pair_target",
    """
    SELECT p.{pair.campaign} AS campaign, p.{pair.caption} AS caption, k.{campaign.options} AS options,
           k.{campaign.gold_of} AS gold_of, s.{standing.id} IS NOT NULL AS paused
    FROM {pair} p JOIN {campaign} k ON k.{campaign.id} = p.{pair.campaign}
    LEFT JOIN {standing} s
        ON s.{standing.campaign} = COALESCE(k.{campaign.gold_of}, k.{campaign.id})
        AND s.{standing.annotator} = %(annotator)s AND s.{standing.paused_at} IS NOT NULL
    WHERE p.{pair.id} = %(pair)s""",
    PairTarget,
)
"""A pair's campaign, caption, campaign options, the campaign a gold task serves and whether
the annotator is paused there, read without locking: every write an annotator sends starts
with it, so the paused check costs no statement of its own (a standing is unique per
campaign and annotator, so the join adds no row)."""


def pair_target(pair_id: int, annotator_id: int | None = None) -> PairTarget | None:
    """The row of :data:`PAIR_TARGET`, options as the ORM reads them, or None."""
    found = PAIR_TARGET.rows({"pair": pair_id, "annotator": annotator_id})
    if not found:
        return None
    (row,) = found
    return row._replace(
        options=_converted(Campaign, "k", "options", row.options), paused=bool(row.paused)
    )


LockedPairRow = model_row("LockedPairRow", LOCKED_PAIR_ROW)
LOCKED_PAIR = statement(
    "locked_pair",
    lambda: (
        """
    SELECT {pair:p.*}, {campaign:k.* -provenance}
    FROM {pair} p JOIN {campaign} k ON k.{campaign.id} = p.{pair.campaign}
    WHERE p.{pair.id} = %(pair)s"""
        + (" FOR UPDATE OF p" if connection.features.has_select_for_update else "")
    ),
    LockedPairRow,
)
"""A pair with its campaign (less the provenance), its row locked where the database can."""


def locked_pair(pair_id: int) -> Pair | None:
    """The pair of :data:`LOCKED_PAIR` with ``.campaign`` filled in, or None."""
    found = LOCKED_PAIR.instances({"pair": pair_id}, LOCKED_PAIR_ROW)
    if not found:
        return None
    pair, campaign = found[0]
    pair.campaign = campaign
    return pair


class TallyId(NamedTuple):
    id: int


LOCK_TALLIES = statement(
    "lock_tallies",
    lambda shards: (
        f"""
    SELECT t.{{campaign_tally.id}} AS id FROM {{campaign_tally}} t
    WHERE t.{{campaign_tally.campaign}} = %(campaign)s
      AND t.{{campaign_tally.shard}} IN ({in_list("shard", shards)})
    ORDER BY t.{{campaign_tally.shard}}"""
        + (" FOR UPDATE" if connection.features.has_select_for_update else "")
    ),
    TallyId,
    [{"shards": 1}, {"shards": 3}],
)
"""A campaign's tally rows of shards ``%(shard_0)s``..., in shard order, locked where the
database can."""


INSERT_LEASE = statement(
    "insert_lease",
    """
    INSERT INTO {lease} ({lease.pair}, {lease.annotator}, {lease.created_at}, {lease.expires_at})
    VALUES (%(pair)s, %(annotator)s, %(now)s, %(expires)s) RETURNING {lease.id}""",
    Inserted,
)


def insert_lease(pair_id: int, annotator_id: int, now: datetime, expires: datetime) -> int:
    """Store a lease (:data:`INSERT_LEASE`); the lease's id. The pair's counts are
    ``pair_state``'s to move."""
    adapt = connection.ops.adapt_datetimefield_value
    params = {"pair": pair_id, "annotator": annotator_id, "now": adapt(now)}
    params["expires"] = adapt(expires)
    return inserted_id(INSERT_LEASE, params)


DELETE_LEASE = statement(
    "delete_lease",
    """
    DELETE FROM {lease} WHERE {lease.pair} = %(pair)s AND {lease.annotator} = %(annotator)s""",
    None,
)


def delete_lease(pair_id: int, annotator_id: int) -> int:
    """Delete the annotator's lease on the pair; how many rows went (0 or 1). The pair's
    counts are ``pair_state``'s to move."""
    return DELETE_LEASE.execute({"pair": pair_id, "annotator": annotator_id})


class _Update(NamedTuple):
    """An UPDATE the ORM writes, in the shape :class:`Compiled` compiles (``.query``)."""

    query: UpdateQuery


def _leases_moved(pair: int, step: int) -> _Update:
    query = Pair.objects.filter(pk=pair).query.chain(UpdateQuery)
    leased = F("leased") + Value(step)
    query.add_update_values({"leased": leased, "open_slots": open_slots_expression(leased=leased)})
    return _Update(query)


LEASES_MOVED = Compiled("leases_moved", _leases_moved, ("pair", "step"), None)
"""A pair's lease count moved by ``step`` (1 or -1) and its open slots by the rule
(:func:`annotation.models.open_slots_expression`): the ORM writes it, compiled once per
backend and rebound per lease, since composing the update through the ORM took tens of times
longer than running it (SQLite, statement included: ~1.8 ms against ~0.06 ms) and the
judging path leases on nearly every request. Only ``pair_state`` runs it."""


CAMPAIGN_ROW: Sources = ((Campaign, "k", ("provenance",)),)
CampaignRow = model_row("CampaignRow", CAMPAIGN_ROW)
CAMPAIGN = statement(
    "campaign",
    "SELECT {campaign:k.* -provenance} FROM {campaign} k WHERE k.{campaign.id} = %(campaign)s",
    CampaignRow,
)
"""A campaign without its provenance (as ``Campaign.objects`` reads it)."""


def campaign(campaign_id: object) -> Campaign | None:
    """The campaign of :data:`CAMPAIGN` if ``campaign_id`` is a plausible id (an int or a
    string of digits, in range) naming one that is not a gold companion; else None."""
    text = str(campaign_id)
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_ID:
        return None
    found = CAMPAIGN.instances({"campaign": int(text)}, CAMPAIGN_ROW)
    if not found:
        return None
    ((loaded,),) = found
    return None if loaded.gold_of_id is not None else loaded


SAVE_COUNTS_COLUMNS = ("label_count", "relevant_count", "needed", "leased", "open_slots", "status")
SAVE_COUNTS = (
    f"UPDATE {_table(Pair)} SET "
    + ", ".join(f"{_q(name)} = %({name})s" for name in SAVE_COUNTS_COLUMNS)
    + f" WHERE {_q('id')} = %(pair)s"
)
"""A pair's label counts and what the policy needs of it, after a label or an undo."""
statement("save_counts", SAVE_COUNTS, None)


def save_counts(pair: Pair) -> None:
    params = {name: getattr(pair, name) for name in SAVE_COUNTS_COLUMNS}
    params["pair"] = pair.pk
    with connection.cursor() as cursor:
        cursor.execute(SAVE_COUNTS, params)


MOVE_MAX = 64
"""The most pairs one :data:`MOVE_PAIRS` moves (a query's pool holds a few dozen)."""


def _move_pairs_text(n: int) -> str:
    """New queue positions of ``n`` pairs: ``%(pair_i)s`` to ``%(position_i)s``."""
    cases = " ".join(f"WHEN %(pair_{i})s THEN %(position_{i})s" for i in range(n))
    return (
        "UPDATE {pair} SET {pair.position} = CASE {pair.id} "
        + cases
        + " END WHERE {pair.id} IN ("
        + in_list("pair", n)
        + ")"
    )


MOVE_PAIRS = statement("move_pairs", _move_pairs_text, None, [{"n": 1}, {"n": 3}])
"""A query's pairs moved in the queue after a label under a judging order that re-ranks:
the metric-aware order moves a few on nearly every label, and ``bulk_update`` composing the
same ``CASE`` cost about 4 ms of CPU per request (``bench/request_profile.py --policy
adaptive --profile``)."""


def move_pairs(positions: Mapping[int, int]) -> None:
    """Set at most :data:`MOVE_MAX` pairs' queue positions (pair id -> position)."""
    if len(positions) > MOVE_MAX:
        raise ValueError(f"{len(positions)} pairs: move at most {MOVE_MAX} at once")
    params = {}
    for i, (pk, position) in enumerate(positions.items()):
        params[f"pair_{i}"], params[f"position_{i}"] = int(pk), int(position)
    if params:
        MOVE_PAIRS.execute(params, n=len(positions))


JUDGEMENT_ROW: Sources = ((Judgement, "j"),)
EarlierJudgementRow = model_row("EarlierJudgementRow", JUDGEMENT_ROW, "gold_uses")
EARLIER_JUDGEMENTS = statement(
    "earlier_judgements",
    """
    SELECT {judgement:j.*}, (SELECT e.{gold_judgement.id} FROM {gold_judgement} e
            WHERE e.{gold_judgement.uuid} = %(uuid)s) AS gold_uses
    FROM (SELECT 1 AS one) x LEFT JOIN {judgement} j ON j.{judgement.uuid} = %(uuid)s
        OR (j.{judgement.pair} = %(pair)s AND j.{judgement.annotator} = %(annotator)s
            AND j.{judgement.undone_at} IS NULL)""",
    EarlierJudgementRow,
)
"""The judgement a client's id already names, and the annotator's live one on the pair (none:
one row of nulls); ``gold_uses``: the gold answer the id names, if any (one id, one answer
of whatever kind)."""


def uuid_value(value: object) -> object:
    return Judgement._meta.get_field("uuid").get_db_prep_value(value, connection)


def earlier_judgements(
    client_uuid: object, pair_id: int, annotator_id: int
) -> tuple[list[Judgement], bool]:
    """The judgements of :data:`EARLIER_JUDGEMENTS`, and whether a gold answer has the id."""
    params = {"uuid": uuid_value(client_uuid), "pair": pair_id, "annotator": annotator_id}
    found = EARLIER_JUDGEMENTS.rows(params)
    judgements = [instances(JUDGEMENT_ROW, row)[0] for row in found if row.j_id is not None]
    return judgements, found[0].gold_uses is not None


def inserted_id(statement: Statement, params: Mapping[str, object]) -> int:
    """Run an ``INSERT ... RETURNING id`` and return the new row's id."""
    (row,) = statement.rows(params)
    return row.id


INSERT_JUDGEMENT = statement(
    "insert_judgement",
    """
    INSERT INTO {judgement} ({judgement.uuid}, {judgement.pair}, {judgement.annotator},
        {judgement.label}, {judgement.seconds}, {judgement.seconds_played},
        {judgement.created_at})
    VALUES (%(uuid)s, %(pair)s, %(annotator)s, %(label)s, %(seconds)s, %(played)s, %(now)s)
    RETURNING {judgement.id}""",
    Inserted,
)


def insert_judgement(
    client_uuid: object,
    pair_id: int,
    annotator_id: int,
    label: str,
    seconds,
    now: datetime,
    played=None,
) -> Judgement:
    """Store a live judgement (:data:`INSERT_JUDGEMENT`) made at ``now``, ``played`` seconds
    of its video seen; the new row."""
    params = {
        "uuid": uuid_value(client_uuid),
        "pair": pair_id,
        "annotator": annotator_id,
        "label": label,
        "seconds": seconds,
        "played": played,
        "now": connection.ops.adapt_datetimefield_value(now),
    }
    judgement_id = inserted_id(INSERT_JUDGEMENT, params)
    return Judgement(
        pk=judgement_id,
        uuid=client_uuid,
        pair_id=pair_id,
        annotator_id=annotator_id,
        label=label,
        seconds=seconds,
        seconds_played=played,
        created_at=now,
    )


StandingRow = model_row("StandingRow", STANDING_ROW)
PAUSED = statement(
    "paused",
    """
    SELECT {standing:s.*} FROM {standing} s
    WHERE s.{standing.campaign} = %(campaign)s AND s.{standing.annotator} = %(annotator)s
      AND s.{standing.paused_at} IS NOT NULL
    ORDER BY s.{standing.id} LIMIT 1""",
    StandingRow,
)
"""An annotator's standing in a campaign if it pauses them."""


def paused(campaign_id: int, annotator_id: int) -> AnnotatorStanding | None:
    found = PAUSED.rows({"campaign": campaign_id, "annotator": annotator_id})
    return instances(STANDING_ROW, found[0])[0] if found else None


class JudgingStanding(NamedTuple):
    """A campaign's status and the annotator's pause in it (``paused_reason`` None while
    they are not paused; ``gold_of`` set for a gold companion, which no one judges)."""

    status: str
    gold_of: int | None
    paused_reason: str | None


JUDGING_STANDING = statement(
    "judging_standing",
    """
    SELECT k.{campaign.status} AS status, k.{campaign.gold_of} AS gold_of,
        s.{standing.reason} AS paused_reason
    FROM {campaign} k LEFT JOIN {standing} s
        ON s.{standing.campaign} = k.{campaign.id} AND s.{standing.annotator} = %(annotator)s
        AND s.{standing.paused_at} IS NOT NULL
    WHERE k.{campaign.id} = %(campaign)s""",
    JudgingStanding,
)
"""Whether an annotator may judge in a campaign now, in one statement of two primary-key
lookups (a standing is unique per campaign and annotator): what the judging page's
standing poll reads (:func:`annotation.judging.submit.refusal` says it)."""


def judging_standing(campaign_id: int, annotator_id: int) -> JudgingStanding | None:
    """:data:`JUDGING_STANDING`'s row, None for no such campaign."""
    found = JUDGING_STANDING.rows({"campaign": campaign_id, "annotator": annotator_id})
    return found[0] if found else None


class Seconds(NamedTuple):
    seconds: float


RECENT_SECONDS = statement(
    "recent_seconds",
    lambda since: (
        """
    SELECT CASE WHEN j.{judgement.seconds_played} < j.{judgement.seconds}
            THEN j.{judgement.seconds_played} ELSE j.{judgement.seconds} END AS seconds
    FROM {judgement} j JOIN {pair} p ON p.{pair.id} = j.{judgement.pair}
    WHERE j.{judgement.annotator} = %(annotator)s AND p.{pair.campaign} = %(campaign)s
      AND j.{judgement.undone_at} IS NULL AND j.{judgement.seconds} IS NOT NULL"""
        + (" AND j.{judgement.created_at} > %(since)s" if since else "")
        + " ORDER BY j.{judgement.created_at} DESC LIMIT %(recent)s"
    ),
    Seconds,
    [{"since": False}, {"since": True}],
)
"""The times an annotator spent on their ``%(recent)s`` latest live labels in a campaign
(after ``%(since)s`` when ``since``), newest first, through the (annotator, time) index: the
seconds on the pair, or the seconds its video played where fewer (a label given while the
video did not play was not watched)."""


def recent_seconds(
    campaign_id: int, annotator_id: int, since: datetime | None, recent: int
) -> list[float]:
    params = {"campaign": campaign_id, "annotator": annotator_id, "recent": recent}
    if since is not None:
        params["since"] = connection.ops.adapt_datetimefield_value(since)
    rows = RECENT_SECONDS.plain_rows(params, since=since is not None)
    return [float(seconds) for (seconds,) in rows]


TALLY_COLUMNS = {
    "judged_today": """
        SELECT coalesce(sum({annotator_tally.judged}), 0) FROM {annotator_tally}
        WHERE {annotator_tally.campaign} = %(campaign)s
          AND {annotator_tally.annotator} = %(annotator)s AND {annotator_tally.day} = %(day)s""",
    "judged_total": """
        SELECT coalesce(sum({annotator_tally.judged}), 0) FROM {annotator_tally}
        WHERE {annotator_tally.campaign} = %(campaign)s
          AND {annotator_tally.annotator} = %(annotator)s""",
    "pairs": """
        SELECT coalesce(sum({campaign_tally.pairs}), 0) FROM {campaign_tally}
        WHERE {campaign_tally.campaign} = %(campaign)s""",
    "labels_left": """
        SELECT coalesce(sum({campaign_tally.labels_left}), 0) FROM {campaign_tally}
        WHERE {campaign_tally.campaign} = %(campaign)s""",
    "labels_given": """
        SELECT coalesce(sum({annotator_tally.judged}), 0) FROM {annotator_tally}
        WHERE {annotator_tally.campaign} = %(campaign)s""",
}
GOLD_TALLY_COLUMNS = {
    name: f"""
        SELECT {count} FROM {{gold_judgement}} a
        JOIN {{gold_pair}} g ON g.{{gold_pair.id}} = a.{{gold_judgement.gold_pair}}
        WHERE g.{{gold_pair.campaign}} = %(campaign)s
          AND a.{{gold_judgement.annotator}} = %(annotator)s
          AND a.{{gold_judgement.purpose}} = %(queue)s AND a.{{gold_judgement.undone_at}} IS NULL"""
    for name, count in (
        (
            "gold_today",
            "COALESCE(SUM(CASE WHEN a.{gold_judgement.created_at} >= %(since)s THEN 1 ELSE 0 END), 0)",
        ),
        ("gold_total", "COUNT(*)"),
    )
}


Tallies = NamedTuple("Tallies", [(name, int) for name in TALLY_COLUMNS])
"""An annotator's live judgements on a day and in all; a campaign's pairs not held, the
labels they need and the live labels given in all (a column per :data:`TALLY_COLUMNS`)."""
GoldTallies = NamedTuple(
    "GoldTallies", [(name, int) for name in [*TALLY_COLUMNS, *GOLD_TALLY_COLUMNS]]
)
""":class:`Tallies` and the annotator's queue answers on gold that day and in all."""


def _tallies_text(gold: bool) -> str:
    """:class:`Tallies` (with ``gold``, :class:`GoldTallies`) from the running totals the
    triggers keep: a few index lookups however large the campaign, where counting would
    read every pair."""
    columns = {**TALLY_COLUMNS, **(GOLD_TALLY_COLUMNS if gold else {})}
    return "SELECT " + ", ".join(f"({query}) AS {name}" for name, query in columns.items())


TALLIES = statement(
    "tallies",
    _tallies_text,
    lambda gold: GoldTallies if gold else Tallies,
    [{"gold": False}, {"gold": True}],
)


def tallies(campaign_id: int, annotator_id: int | None, day: date, gold: bool = False) -> tuple:
    """The row of :data:`TALLIES`, its counts as ints."""
    params = {
        "campaign": campaign_id,
        "annotator": annotator_id,
        "day": connection.ops.adapt_datefield_value(day),
    }
    if gold:
        start = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
        params.update(
            queue=GoldJudgement.Purpose.QUEUE.value,
            since=connection.ops.adapt_datetimefield_value(start),
        )
    (row,) = TALLIES.rows(params, gold=gold)
    return row._make(int(value) for value in row)


def aware_time(value: object) -> datetime:
    """A time column as an aware datetime (UTC text on SQLite, aware on PostgreSQL)."""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


# Bulk inserts (annotation.campaigns.service): hundreds of thousands of pairs through the
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
    """Insert rows into ``model``'s table, given by column (see :func:`column_rows`; other
    columns take their defaults): SQLite's driver ``executemany`` (one prepared statement
    per row, in C), elsewhere multi-row INSERTs of up to :data:`MAX_PARAMETERS` values."""
    names, values = column_rows(columns)
    unknown = set(names) - {field.column for field in model._meta.concrete_fields}
    if unknown:
        raise ValueError(f"{model.__name__} has no columns {sorted(unknown)}")
    table = f"{_table(model)} ({', '.join(map(_q, names))})"
    connection.ensure_connection()
    if connection.features.max_query_params is not None:
        row_list = list(values)
        placeholders = ", ".join("?" * len(names))
        connection.connection.executemany(f"INSERT INTO {table} VALUES ({placeholders})", row_list)
        return len(row_list)
    batch = MAX_PARAMETERS // len(names)
    row = "(" + ", ".join(["%s"] * len(names)) + ")"
    written = 0
    with connection.cursor() as cursor:
        while chunk := list(itertools.islice(values, batch)):
            flat = [value for values_of_row in chunk for value in values_of_row]
            cursor.execute(f"INSERT INTO {table} VALUES {', '.join([row] * len(chunk))}", flat)
            written += len(chunk)
    return written


class LiveLabel(NamedTuple):
    """A live label with its annotator's stored confusion in the pair's campaign (the
    confusion prior where none is stored): what the adaptive policy's posterior reads."""

    pair_id: int
    said: int
    sens: float
    spec: float


def _live_labels_text(by_pair: bool) -> str:
    """The live labels of one pair (``by_pair``) or of one query's pairs, each joined with its
    annotator's stored model in the pair's campaign."""
    where = (
        "p.{pair.id} = %(pair)s"
        if by_pair
        else "p.{pair.campaign} = %(campaign)s AND p.{pair.caption} = %(caption)s"
    )
    return (
        """
    SELECT j.{judgement.pair} AS pair_id,
           CASE WHEN j.{judgement.label} = %(relevant)s THEN 1 ELSE 0 END AS said,
           COALESCE(m.{annotator_model.sensitivity}, %(prior)s) AS sens,
           COALESCE(m.{annotator_model.specificity}, %(prior)s) AS spec
    FROM {judgement} j JOIN {pair} p ON p.{pair.id} = j.{judgement.pair}
    LEFT JOIN {annotator_model} m ON m.{annotator_model.campaign} = p.{pair.campaign}
         AND m.{annotator_model.annotator} = j.{judgement.annotator}
    WHERE """
        + where
        + " AND j.{judgement.undone_at} IS NULL"
    )


LIVE_LABELS = statement(
    "live_labels",
    _live_labels_text,
    LiveLabel,
    variants=({"by_pair": True}, {"by_pair": False}),
)
"""The live labels of a pair, or of a query's pairs, with their annotators' stored models:
read on every label of an adaptive campaign, where composing the ORM's version (two
correlated subqueries) cost about as much CPU as the rest of the submit's queries
(``bench/load.py --policy adaptive``: 11.8 ms of CPU per request against 6.8 ms for FIRE's
policy)."""


def live_labels(prior: float, *, pair: int | None = None, campaign: int = 0, caption: int = 0):
    """Rows of :data:`LIVE_LABELS` for one pair, or for the query ``caption`` of ``campaign``."""
    params = {"relevant": Judgement.Label.RELEVANT.value, "prior": float(prior)}
    if pair is not None:
        return LIVE_LABELS.rows({**params, "pair": pair}, by_pair=True)
    return LIVE_LABELS.rows({**params, "campaign": campaign, "caption": caption}, by_pair=False)
