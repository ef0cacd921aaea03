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
    """One live label of a pair (or the pair alone), with what the pair formats print: the
    csv and jsonl exports (``responses`` off) and FIRE JSON (on: ``uuid`` as 8-4-4-4-12 text).
    The caption and video come as ids, looked up by the export (see :func:`_export_rows_text`)."""

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
""":class:`ExportLabelRow` and the label's response id (FIRE JSON's ``response_ids``)."""


class ExportPairRow(NamedTuple):
    """One pair, no labels: what the qrels export prints (caption and video by id)."""

    pair_id: int
    status: str
    caption_id: int
    video_id: int


class ExportRawRow(NamedTuple):
    """One live label with its time as whole microseconds since 1970 (UTC): the raw export
    (caption and video by id)."""

    caption_id: int
    video_id: int
    annotator_id: int
    label: str
    seconds: float | None
    seconds_played: float | None
    created_us: int


EXPORT_KINDS = ("labels", "responses", "pairs", "raw")
"""What an export reads (:data:`EXPORT_ROWS`' variants): ``labels`` / ``responses`` the pair
formats' columns, ``pairs`` one row per pair for qrels, ``raw`` the labels alone with their
times as numbers."""

EXPORT_ROW_TYPES = {
    "labels": ExportLabelRow,
    "responses": ExportResponseRow,
    "pairs": ExportPairRow,
    "raw": ExportRawRow,
}


def _export_rows_text(kind: str) -> str:
    """The export join for ``kind`` (see :data:`EXPORT_KINDS`): each kind selects only the
    columns its formats print, since fetching and converting unused columns (the caption
    text for qrels, the times for every format but raw) was most of an export's time.

    The kinds name the caption and video by id, not by key and text: the export reads the videos once and each window's captions beside the window
    (``annotation.campaign_read.exports._WindowCaptions``). Joining them here hashed the
    dataset's 55,288 captions for every window and carried each caption's text on every
    label row, so the window's sort spilled to disk with PostgreSQL's default 4 MB
    ``work_mem``: 61 ms a 20,000-pair window, 29 ms without the joins (FIRE scale,
    ``bench/export_bench.py``)."""
    pair = "p.{pair.id} AS pair_id"
    where = (
        "WHERE p.{pair.id} >= %(low)s AND p.{pair.id} < %(high)s"
        " AND p.{pair.campaign} = %(campaign)s"
    )
    # The window again, on the labels: PostgreSQL then reads the window's labels by their
    # pair index instead of scanning every label of every campaign per window (190 ms a
    # window, 5 of a FIRE-scale export's 9 s).
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
"""Rows of the pairs with ids in ``[%(low)s, %(high)s)``, pairs in id order and each pair's
labels in the order given: one row per live label (or one per unlabelled pair; ``raw``:
labels only, ``pairs``: one per pair), of ``%(campaign)s`` only."""


def export_rows(low: int, high: int, kind: str, campaign: int) -> list[tuple]:
    """The rows of :data:`EXPORT_ROWS` for ``campaign``'s id window ``[low, high)``, as plain
    tuples in the kind's row type's field order: read them with
    ``reader(EXPORT_ROW_TYPES[kind]._fields, ...)``."""
    return EXPORT_ROWS.plain_rows({"low": low, "high": high, "campaign": campaign}, kind=kind)


def export_windows(
    windows: Iterable[tuple[int, int]], kind: str, campaign: int
) -> Iterator[list[tuple]]:
    """:func:`export_rows` of each id window in turn, reading ahead on PostgreSQL.

    There, from the second window on, each window's query is sent before the previous
    window's rows are handed on (psycopg's pipeline mode, see :class:`_ReadAhead`), so the
    server computes the next window while the caller writes this one. It is the caller's
    own connection, so the rows are exactly :func:`export_rows`' (same transaction, its
    uncommitted writes included). Measured at FIRE's scale (``bench/export_bench.py``,
    2 cores): the windows' queries took 1.4-1.6 s of a 4-5 s export, waited for one after
    another; read ahead, the export waits about 0.35 s for them.
    """
    windows = iter(windows)
    first = next(windows, None)
    if first is None:
        return
    rows = export_rows(*first, kind, campaign)  # run plainly: checks the columns once
    ahead = _ReadAhead.start()
    try:
        for low, high in windows:
            params = {"low": low, "high": high, "campaign": campaign}
            if ahead is None or not ahead.send(EXPORT_ROWS.fill(kind=kind), params):
                yield rows
                rows = EXPORT_ROWS.plain_rows(params, kind=kind)
                continue
            yield rows
            rows = ahead.rows()
        yield rows
    finally:
        if ahead is not None:
            ahead.close()


class _ReadAhead:
    """One query at a time sent ahead of its reading on the default connection (psycopg 3
    pipeline mode). While it is open, any other query through Django on that connection
    first collects what is in flight and leaves pipeline mode (the connection's execute
    wrapper, :meth:`__call__`): code that runs between two windows, or after a caller
    abandons the export half-way, sees an ordinary connection. The reads ahead go through
    a psycopg cursor of their own, so they are not in ``connection.queries``."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.pipeline = raw.pipeline()
        self.pipeline.__enter__()
        self.cursor = None
        connection.execute_wrappers.append(self)

    @classmethod
    def start(cls) -> "_ReadAhead | None":
        """A read-ahead on the default connection, or None where it has no pipeline mode
        (SQLite, psycopg2, libpq before 14)."""
        connection.ensure_connection()
        raw = connection.connection
        pipeline = getattr(type(raw), "pipeline", None)
        if pipeline is None or raw.pgconn.pipeline_status or not _pipeline_supported():
            return None
        return cls(raw)

    def send(self, sql: str, params: Mapping[str, object]) -> bool:
        """Send the query (False where the read-ahead was closed: run it plainly)."""
        if self.pipeline is None:
            return False
        self.cursor = self.raw.cursor()
        self.cursor.execute(sql, params)
        return True

    def rows(self) -> list[tuple]:
        """The rows of the query sent last (collected by :meth:`close` if it ran since)."""
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


def _pipeline_supported() -> bool:
    import psycopg

    return psycopg.Pipeline.is_supported()
