"""Figures computed once and served from storage, per ``(kind, subject)`` with a fingerprint of
their inputs: a label set's leaderboard took 4.1 s of a 5.3 s page at FIRE's scale, a
campaign's agreement tables 6 s. :func:`exact` serves figures of immutable inputs, never
stale; :func:`stored` a live figure's last value and whether it is current, recomputed by a
job with :func:`store`. A table, not the cache: every process shares it and it survives restarts.
"""

from __future__ import annotations

import hashlib
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from django.utils import timezone

from jobs.models import StoredFigure

T = TypeVar("T")


@dataclass(frozen=True)
class Figure(Generic[T]):
    """A stored figure: its value, when and how fast it was computed, and whether it is of the
    inputs the reader asked with."""

    value: T
    computed_at: datetime
    seconds: float
    current: bool


def fingerprint(*parts: object) -> str:
    """A fixed-length digest of ``parts`` (their ``repr``): equal inputs, equal prints."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def stored(kind: str, subject: str, inputs: str) -> Figure | None:
    """The last figure stored for ``(kind, subject)``, ``current`` if of ``inputs``; None if
    there is none (or it no longer unpickles)."""
    return stored_many((kind,), subject, inputs)[kind]


def stored_many(kinds: tuple[str, ...], subject: str, inputs: str) -> dict[str, Figure | None]:
    """:func:`stored` for several kinds of one subject, in one query."""
    rows = StoredFigure.objects.filter(kind__in=kinds, subject=subject).values_list(
        "kind", "payload", "computed_at", "seconds", "inputs"
    )
    found: dict[str, Figure | None] = dict.fromkeys(kinds)
    for kind, payload, computed_at, seconds, made_from in rows:
        try:
            value = pickle.loads(bytes(payload))
        except Exception:  # a figure of an older shape: as if missing  # noqa: BLE001
            continue
        found[kind] = Figure(value, computed_at, seconds, made_from == inputs)
    return found


def store(kind: str, subject: str, inputs: str, compute: Callable[[], T]) -> Figure[T]:
    """Compute the figure now and store it for ``(kind, subject)``, replacing the last one
    (an upsert: two processes storing at once leave one row)."""
    started = time.perf_counter()
    value = compute()
    seconds = time.perf_counter() - started
    now = timezone.now()
    StoredFigure.objects.bulk_create(
        [
            StoredFigure(
                kind=kind,
                subject=subject,
                inputs=inputs,
                payload=pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL),
                computed_at=now,
                seconds=seconds,
            )
        ],
        update_conflicts=True,
        unique_fields=["kind", "subject"],
        update_fields=["inputs", "payload", "computed_at", "seconds"],
    )
    return Figure(value, now, seconds, True)


def exact(kind: str, subject: str, inputs: str, compute: Callable[[], T]) -> Figure[T]:
    """The figure of ``inputs``: the stored one when current, else computed and stored."""
    found = stored(kind, subject, inputs)
    return found if found is not None and found.current else store(kind, subject, inputs, compute)
