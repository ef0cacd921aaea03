"""Cut a list of ids into batches, so no statement's parameters grow with the data: PostgreSQL
takes at most 65,535 parameters and Django batches neither ``pk__in`` nor ``bulk_update`` there
(a 22,000-row gold file was a 500)."""

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


def id_filters(field: str, ids: Iterable, size: int = ID_BATCH) -> Iterator[dict]:
    """Keyword filters that together select the rows whose ``field`` is among ``ids``: on
    PostgreSQL one, the ids as one array parameter (a quarter of the time of batches), else one
    ``field__in`` per batch; each id counts once, and no ids give no filter."""
    from django.db.models.expressions import RawSQL

    from config.backends import backend

    unique = list(dict.fromkeys(ids))
    array = backend().id_array_types.get(frozenset(type(value) for value in unique))
    if unique and array:
        yield {f"{field}__in": RawSQL(f"SELECT unnest(%s::{array})", (unique,))}
        return
    for batch in batches(unique, size):
        yield {f"{field}__in": batch}


def rows_in(queryset: Iterable[T], field: str, ids: Iterable, size: int = ID_BATCH) -> list[T]:
    """The rows of ``queryset`` whose ``field`` is among ``ids``, filter by filter."""
    return [
        row
        for where in id_filters(field, ids, size)
        for row in queryset.filter(**where)  # type: ignore[attr-defined]
    ]
