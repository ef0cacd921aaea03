"""What differs between the databases firepool runs on, in one place: code asks
:func:`backend` for an operation, never which database it runs on (``tests/test_house_rules.py``
checks that only this module, the statement registry and migrations read the vendor).
:class:`Backend` is SQLite's behaviour and the default; :class:`PostgreSQL` overrides it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from django.db import connection as default_connection
from django.db import transaction

_UUID_PARTS = ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))


class Backend:
    """SQLite: one writing transaction at a time (``BEGIN IMMEDIATE``), UUIDs kept as 32 hex
    digits, times as UTC text, reads in process."""

    server_side_reads = False
    """Whether a background job's reads go through a server-side cursor (in a transaction)."""

    background_settings: tuple[str, ...] = ()
    """Session settings set around a background job's reads, and reset after."""

    id_array_types: dict[frozenset, str] = {}
    """The array type that passes many ids as one parameter, per Python type of the ids."""

    def uuid_text(self, column: str) -> str:
        """SQL for the UUID ``column`` as 8-4-4-4-12 lower-case text: a ``uuid.UUID`` per
        row and its formatting cost 1.1 s at FIRE's 679,000 labels."""
        parts = [f"substr({column}, {start}, {n})" for start, n in _UUID_PARTS]
        return "lower(" + " || '-' || ".join(parts) + ")"

    def epoch_microseconds(self, column: str) -> str:
        """SQL for the time ``column`` as exact microseconds since 1970 (a datetime per label
        cost 5.3 s of the raw export's 12 s at FIRE's scale): whole seconds via julianday."""
        return (
            f"CAST(ROUND((julianday(substr({column}, 1, 19)) - 2440587.5) * 86400.0) AS INTEGER)"
            f" * 1000000 + CAST(ROUND(COALESCE(CAST(NULLIF(substr({column}, 20), '') AS REAL),"
            " 0.0) * 1000000.0) AS INTEGER)"
        )

    def hold_starts(self, name: str) -> None:
        """Hold whoever else starts ``name`` until this transaction ends (here ``BEGIN
        IMMEDIATE`` already lets one writer in at a time)."""

    def bulk_load(self, table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
        """Write ``rows`` (database-ready values in ``columns``' order) into ``table`` in one
        bulk operation, bypassing the ORM: here one ``executemany`` in a transaction."""
        quote = default_connection.ops.quote_name
        names = ", ".join(map(quote, columns))
        marks = ", ".join(["%s"] * len(columns))
        with transaction.atomic(), default_connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {quote(table)} ({names}) VALUES ({marks})", rows)

    def bulk_update(
        self, table: str, key: str, columns: Sequence[str], rows: Iterable[Sequence]
    ) -> None:
        """Set ``columns`` of the rows of ``table`` whose ``key`` is each row's last value, in
        one bulk operation: here one ``executemany`` in a transaction."""
        quote = default_connection.ops.quote_name
        sets = ", ".join(f"{quote(column)} = %s" for column in columns)
        with transaction.atomic(), default_connection.cursor() as cursor:
            cursor.executemany(f"UPDATE {quote(table)} SET {sets} WHERE {quote(key)} = %s", rows)


class PostgreSQL(Backend):
    """PostgreSQL: native UUIDs and times, server-side cursors, advisory locks, arrays."""

    server_side_reads = True
    # No parallel plan: a COUNT over 600,000 pairs took the leader and two parallel workers,
    # every core of a two-core server, from the judging beside it.
    background_settings = ("max_parallel_workers_per_gather = 0",)
    # 100,000 ids as one array parameter (``IN (SELECT unnest(%s))``) took a quarter of the
    # time of ten batches of 10,000 parameters.
    id_array_types = {frozenset({int}): "bigint[]", frozenset({str}): "text[]"}

    def uuid_text(self, column: str) -> str:
        return f"CAST({column} AS text)"

    def epoch_microseconds(self, column: str) -> str:
        return f"CAST(EXTRACT(EPOCH FROM {column}) * 1000000 AS bigint)"

    def hold_starts(self, name: str) -> None:
        """A transaction-level advisory lock on ``name``: the next holder's statements then
        see what the previous one committed."""
        digest = hashlib.sha256(f"firepool job start {name}".encode()).digest()
        with default_connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s)",
                [int.from_bytes(digest[:8], "big", signed=True)],
            )

    def bulk_load(self, table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
        """One ``COPY ... FROM STDIN``, then ``ANALYZE`` (an export of a fresh 10,000-pair world
        planned for an empty table took 17 s instead of 0.2)."""
        quote = default_connection.ops.quote_name
        names = ", ".join(map(quote, columns))
        with (
            default_connection.cursor() as cursor,
            cursor.cursor.copy(f"COPY {quote(table)} ({names}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)
        with default_connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {quote(table)}")

    def bulk_update(
        self, table: str, key: str, columns: Sequence[str], rows: Iterable[Sequence]
    ) -> None:
        """The rows COPied into a temporary table of the same column types, then one
        ``UPDATE ... FROM`` it."""
        quote = default_connection.ops.quote_name
        every = ", ".join(map(quote, [*columns, key]))
        sets = ", ".join(f"{quote(column)} = bulk.{quote(column)}" for column in columns)
        with transaction.atomic(), default_connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TEMPORARY TABLE bulk ON COMMIT DROP AS SELECT "
                f"{every} FROM {quote(table)} WITH NO DATA"
            )
            with cursor.cursor.copy(f"COPY bulk ({every}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            cursor.execute(
                f"UPDATE {quote(table)} SET {sets} FROM bulk "
                f"WHERE {quote(table)}.{quote(key)} = bulk.{quote(key)}"
            )
            cursor.execute("DROP TABLE bulk")  # a second call in the same transaction
            cursor.execute(f"ANALYZE {quote(table)}")


BACKENDS: dict[str, Backend] = {"postgresql": PostgreSQL()}
_DEFAULT = Backend()


def backend(connection=None) -> Backend:
    """The operations of ``connection``'s database (the default connection's by default)."""
    return BACKENDS.get((connection or default_connection).vendor, _DEFAULT)
