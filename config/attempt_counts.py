"""Attempts counted per key within a window, atomically and in the database, so that every
worker process and thread of a deployment adds to the one count.

Failed logins (:mod:`config.login_throttle`) and run uploads
(:class:`retrieval.api.permissions.RunUploadThrottle`) are limited by these counts. They
used to live in the default cache, where they did not hold: a per-process cache (the
default, ``locmem://``) gave each gunicorn worker its own counts (9 wrong passwords passed a
limit of 5 with two workers), and the database cache's ``incr`` reads and then writes, so a
burst of parallel attempts slipped past (8 of 20 against 5). Neither well-kept library
fits: django-ratelimit counts in the cache and needs one whose ``incr`` is atomic and
shared (Redis or Memcached; its installation guide says the database cache undercounts),
and django-axes reads the failures stored before it authenticates and records a failure
after, so parallel guesses all pass its check (jazzband/django-axes#592, closed as a known
issue). Here one ``UPDATE`` adds the attempt, and the row lock it takes orders parallel
attempts (PostgreSQL re-reads the row once the lock is free; SQLite's ``BEGIN IMMEDIATE``
serialises the transactions), so N parallel attempts read the counts 1 to N, each once.
It costs a login or an upload three statements; nothing on the judging path counts.

A key's window starts with its first attempt after the previous window ended and lasts
``window`` seconds; rows of windows that ended are deleted when a new key is counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from config.models import AttemptCount


@dataclass(frozen=True)
class Count:
    """The attempts a key made in its current window (this one included), and when the
    window ends."""

    number: int
    ends: datetime

    def seconds_left(self) -> int:
        """Whole seconds until the window ends (at least 1), for a Retry-After header."""
        return max(1, math.ceil((self.ends - timezone.now()).total_seconds()))


def add(key: str, window: int) -> Count:
    """Count one attempt of ``key``, whose window lasts ``window`` seconds from its first
    attempt; the count includes this attempt and every earlier one in the window, parallel
    ones included (see the module docstring)."""
    now = timezone.now()
    ends = now + timedelta(seconds=window)
    created = False
    with transaction.atomic():
        if not _bump(key, now, ends):
            try:
                with transaction.atomic():  # a savepoint: a parallel first attempt may win
                    AttemptCount.objects.create(key=key, count=1, ends=ends)
                created = True
            except IntegrityError:
                _bump(key, now, ends)
        number, ends = AttemptCount.objects.filter(key=key).values_list("count", "ends").get()
    if created:
        AttemptCount.objects.filter(ends__lt=now).delete()
    return Count(number, ends)


def _bump(key: str, now: datetime, ends: datetime) -> int:
    """One more attempt on ``key``'s row, or the first of a new window if its window ended;
    the number of rows changed (0 when the key has no row)."""
    current = When(ends__gt=now, then=F("count") + 1)
    return AttemptCount.objects.filter(key=key).update(
        count=Case(current, default=Value(1)),
        ends=Case(When(ends__gt=now, then=F("ends")), default=Value(ends)),
    )


def take_back(key: str) -> None:
    """Give ``key`` one attempt back in its current window (a login that succeeded)."""
    AttemptCount.objects.filter(key=key, ends__gt=timezone.now(), count__gt=0).update(
        count=F("count") - 1
    )


def forget(key: str) -> None:
    """Forget ``key``'s attempts: its next one starts a new window."""
    AttemptCount.objects.filter(key=key).delete()
