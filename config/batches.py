"""Pure: cut a list of ids into batches, so that no statement's parameters grow with the data.

PostgreSQL takes at most 65,535 parameters in a statement (firepool binds them on the server),
and Django neither batches ``filter(pk__in=...)`` nor, on PostgreSQL, ``bulk_update``: a
22,000-row gold file was a 500. Every statement whose parameters come from user data (a
file's rows, a campaign's pairs, an annotator's labels) runs once per :data:`ID_BATCH` ids,
or passes ``batch_size`` to ``bulk_create`` and ``bulk_update``; :func:`rows_in` reads the
rows of a queryset whose field is among many ids so.
"""

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import TypeVar

ID_BATCH = 10_000
"""Ids per ``IN (...)`` list, and rows per ``bulk_update`` (at most 3 parameters a row) or
``bulk_create`` of narrow rows: well under the 65,535 parameters of one statement."""

T = TypeVar("T")


def batches(items: Iterable[T], size: int = ID_BATCH) -> Iterator[Sequence[T]]:
    """``items`` in lists of at most ``size``, in their order."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def rows_in(queryset: Iterable[T], field: str, ids: Iterable, size: int = ID_BATCH) -> list[T]:
    """The rows of ``queryset`` whose ``field`` is among ``ids``, one statement per batch of
    ids (each id once): ``queryset.filter(field__in=ids)`` whose parameters do not grow with
    the ids. Rows come batch by batch, each batch in the queryset's order."""
    return [
        row
        for batch in batches(dict.fromkeys(ids), size)
        for row in queryset.filter(**{f"{field}__in": batch})  # type: ignore[attr-defined]
    ]
