"""The export's hand-written SQL: the rows of a campaign's pairs and labels, window by id
window, read ahead on PostgreSQL. A join in the database beats assembling pairs, captions,
videos and judgements in Python by a third at FIRE's scale (``bench/export_bench.py``);
:mod:`annotation.campaign_read.exports` writes the formats from these rows."""

from collections.abc import Iterable, Iterator, Mapping
from typing import NamedTuple

from django.db import connection

from annotation.judging.statements import MODELS
from config.backends import backend
from config.raw_sql import Statement


class ExportLabelRow(NamedTuple):
    """One live label of a pair (or the pair alone), with what csv, jsonl and FIRE JSON print
    (caption and video by id)."""

    pair_id: int
    pool_row: int
    status: str
    adjudicated: str
    caption_id: int
    video_id: int
    auto_label: str
    annotator_id: int | None
    label: str | None


ExportResponseRow = NamedTuple(  # noqa: UP014 - the fields of ExportLabelRow, and one more
    "ExportResponseRow", [*ExportLabelRow.__annotations__.items(), ("uuid", str | None)]
)
""":class:`ExportLabelRow` and the label's response id (8-4-4-4-12 text) for FIRE JSON."""


class ExportPairRow(NamedTuple):
    """One pair, no labels: what the qrels export prints (caption and video by id)."""

    pair_id: int
    status: str
    caption_id: int
    video_id: int


class ExportRawRow(NamedTuple):
    """One live label with its time in microseconds since 1970 (UTC): the raw export."""

    caption_id: int
    video_id: int
    annotator_id: int
    label: str
    seconds: float | None
    seconds_played: float | None
    created_us: int


EXPORT_ROW_TYPES = {
    "labels": ExportLabelRow,
    "responses": ExportResponseRow,
    "pairs": ExportPairRow,
    "raw": ExportRawRow,
}
EXPORT_KINDS = tuple(EXPORT_ROW_TYPES)


def _export_rows_text(kind: str) -> str:
    """The export join for ``kind``, selecting only the columns its formats print (unused
    columns were most of an export's time). Captions and videos come by id: joining them
    spilled each window's sort to disk, 61 ms a 20,000-pair window against 29 ms."""
    pair = "p.{pair.id} AS pair_id"
    where = (
        "WHERE p.{pair.id} >= %(low)s AND p.{pair.id} < %(high)s"
        " AND p.{pair.campaign} = %(campaign)s"
    )
    # The window again on the labels, so PostgreSQL reads them by their pair index instead
    # of scanning every label per window (190 ms a window, 5 of a FIRE-scale export's 9 s).
    live = (
        "j.{judgement.pair} = p.{pair.id} AND j.{judgement.undone_at} IS NULL"
        " AND j.{judgement.pair} >= %(low)s AND j.{judgement.pair} < %(high)s"
    )
    order = "ORDER BY p.{pair.id}, j.{judgement.created_at}, j.{judgement.id}"
    ids = "p.{pair.caption} AS caption_id, p.{pair.video} AS video_id"
    if kind == "pairs":
        return (
            f"SELECT {pair}, p.{{pair.status}} AS status, {ids} FROM {{pair}} p"
            f"\n{where} ORDER BY p.{{pair.id}}"
        )
    if kind == "raw":
        return (
            f"SELECT {ids}, j.{{judgement.annotator}} AS annotator_id, "
            "j.{judgement.label} AS label, j.{judgement.seconds} AS seconds, "
            "j.{judgement.seconds_played} AS seconds_played, "
            f"{backend().epoch_microseconds('j.{judgement.created_at}')} AS created_us FROM {{pair}} p"
            f"\nJOIN {{judgement}} j ON {live}\n{where} {order}"
        )
    columns = (
        f"{pair}, p.{{pair.pool_row}} AS pool_row, p.{{pair.status}} AS status, "
        f"p.{{pair.adjudicated}} AS adjudicated, {ids}, p.{{pair.auto_label}} AS auto_label, "
        "j.{judgement.annotator} AS annotator_id, j.{judgement.label} AS label"
        + (f", {backend().uuid_text('j.{judgement.uuid}')} AS uuid" if kind == "responses" else "")
    )
    return f"SELECT {columns} FROM {{pair}} p\nLEFT JOIN {{judgement}} j ON {live}\n{where} {order}"


EXPORT_ROWS = Statement(
    "export_rows",
    MODELS,
    _export_rows_text,
    lambda kind: EXPORT_ROW_TYPES[kind],
    [{"kind": kind} for kind in EXPORT_KINDS],
)
"""Rows of ``%(campaign)s``'s pairs with ids in ``[%(low)s, %(high)s)`` in id order, one per
live label in the order given (or per unlabelled pair; ``pairs``: one per pair)."""


def export_rows(low: int, high: int, kind: str, campaign: int) -> list[tuple]:
    """:data:`EXPORT_ROWS` for ``campaign``'s id window ``[low, high)`` as plain tuples in the
    field order of ``EXPORT_ROW_TYPES[kind]``."""
    return EXPORT_ROWS.plain_rows({"low": low, "high": high, "campaign": campaign}, kind=kind)


def export_windows(
    windows: Iterable[tuple[int, int]], kind: str, campaign: int
) -> Iterator[list[tuple]]:
    """:func:`export_rows` of each id window in turn; on PostgreSQL each window's query is
    sent (:class:`_ReadAhead`, same connection and transaction) before the previous window's
    rows are handed on: at FIRE's scale the export then waits 0.35 s for them, not 1.5 s."""
    windows = iter(windows)
    first = next(windows, None)
    if first is None:
        return
    rows = export_rows(*first, kind, campaign)  # run plainly: checks the columns once
    ahead = _ReadAhead.start()
    try:
        for low, high in windows:
            params = {"low": low, "high": high, "campaign": campaign}
            sent = ahead is not None and ahead.send(EXPORT_ROWS.fill(kind=kind), params)
            yield rows
            rows = ahead.rows() if sent else EXPORT_ROWS.plain_rows(params, kind=kind)
        yield rows
    finally:
        if ahead is not None:
            ahead.close()


class _ReadAhead:
    """One query at a time sent ahead of its reading on the default connection (psycopg 3
    pipeline mode); any other query through Django first leaves pipeline mode (the execute
    wrapper, :meth:`__call__`), so other code always sees an ordinary connection."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.pipeline = raw.pipeline()
        self.pipeline.__enter__()
        self.cursor = None
        connection.execute_wrappers.append(self)

    @classmethod
    def start(cls) -> "_ReadAhead | None":
        """A read-ahead on the default connection, or None without pipeline mode."""
        connection.ensure_connection()
        raw = connection.connection
        if getattr(type(raw), "pipeline", None) is None or raw.pgconn.pipeline_status:
            return None
        import psycopg  # a psycopg 3 connection: the driver is installed

        return cls(raw) if psycopg.Pipeline.is_supported() else None

    def send(self, sql: str, params: Mapping[str, object]) -> bool:
        """Send the query (False where the read-ahead was closed: run it plainly)."""
        if self.pipeline is None:
            return False
        self.cursor = self.raw.cursor(binary=True)  # ids parse quicker than as text
        self.cursor.execute(sql, params)
        return True

    def rows(self) -> list[tuple]:
        cursor, self.cursor = self.cursor, None
        try:
            return cursor.fetchall()
        finally:
            cursor.close()

    def close(self) -> None:
        """Leave pipeline mode, collecting the query in flight (its rows stay readable)."""
        if self.pipeline is None:
            return
        pipeline, self.pipeline = self.pipeline, None
        connection.execute_wrappers.remove(self)
        pipeline.__exit__(None, None, None)

    def __call__(self, execute, sql, params, many, context):
        self.close()
        return execute(sql, params, many, context)
