"""Attempts counted per key within a window, atomically in the database, so every worker adds
to one count (failed logins, run uploads). Cache counts did not hold: a per-process cache let
9 wrong passwords past a limit of 5 with two workers, and the database cache's read-then-write
``incr`` let 8 of 20 parallel attempts past 5 (django-ratelimit and django-axes share those
flaws; jazzband/django-axes#592). Here one ``UPDATE`` adds the attempt and its row lock orders
parallel ones; a key's window starts with its first attempt and lasts ``window`` seconds."""

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
    """The attempts a key made in its current window (this one included), and when it ends."""

    number: int
    ends: datetime

    def seconds_left(self) -> int:
        """Whole seconds until the window ends (at least 1), for a Retry-After header."""
        return max(1, math.ceil((self.ends - timezone.now()).total_seconds()))


def add(key: str, window: int) -> Count:
    """Count one attempt of ``key`` (window ``window`` seconds); the count includes every
    earlier attempt in the window, parallel ones too."""
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
    """One more attempt on ``key``'s row (the first of a new window if its ended); rows changed."""
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
