"""When a campaign's live figures follow its labels: a submit notes it once committed
(:func:`request_refresh`) and this process's :class:`Pacer` queues the ``campaign-figures``
job when due, at most ``max(MIN_INTERVAL, seconds / DUTY)`` apart unless :data:`FRESH` needs
sooner (:func:`pause`); never in the judging request.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import Max, Sum
from django.utils import timezone

from jobs import runner
from jobs.models import StoredFigure

logger = logging.getLogger(__name__)

JOB_KIND = "campaign-figures"
PACED_BY = "campaign-agreement"
"""The figure a refresh computes last: its time marks when the refresh ended."""
KINDS = ("campaign-scores", "campaign-judging", "campaign-proxies", PACED_BY)
"""The live figures one refresh computes, in order; their seconds together pace the next
(the last one's alone started a refresh every 20 s, a quarter of a core)."""
MIN_INTERVAL = timedelta(seconds=20)
DUTY = 0.05
TICK = 1.0
"""Seconds between the pacer's looks at the campaigns noted."""


def subject(campaign_id: int) -> str:
    """The subject a campaign's live figures are stored under."""
    return f"campaign {campaign_id}"


FRESH = timedelta(seconds=60)
"""The pages' promise: a figure is at most this far behind the labels it describes."""


def pause(seconds: float) -> timedelta:
    """How long after a refresh that took ``seconds`` the next may start: ``seconds / DUTY``,
    cut to ``FRESH - 2 * seconds - TICK`` so that no label waits longer than :data:`FRESH`
    for figures that count it (never under :data:`MIN_INTERVAL`)."""
    seconds = max(float(seconds), 0.0)
    thrifty = timedelta(seconds=seconds / DUTY)
    in_time = FRESH - timedelta(seconds=2 * seconds + TICK)
    return max(MIN_INTERVAL, min(thrifty, in_time))


def queue_refresh(
    campaign_id: int, name: str, now: datetime | None = None, noted_at: datetime | None = None
) -> bool:
    """Queue the campaign's ``campaign-figures`` job if due and none is queued or running
    since ``noted_at`` (when the labels to follow were committed; without it every refresh
    ran twice, once per web process); whether it is taken care of (False: look again). It is
    due a pause after the last refresh ended, or after the one running now will end (else
    every worker's pacer queued a second refresh the moment the first began)."""
    if noted_at is not None and runner.unfinished(JOB_KIND, {"campaign": name}, running=noted_at):
        return True  # one queued, or running since the labels came, reads them
    last = StoredFigure.objects.filter(kind__in=KINDS, subject=subject(campaign_id)).aggregate(
        at=Max("computed_at"), seconds=Sum("seconds")
    )
    seconds = float(last["seconds"] or 0.0)
    due = None if last["at"] is None else last["at"] + pause(seconds)
    running = runner.unfinished(JOB_KIND, {"campaign": name})
    if running is not None and running.started_at is not None:
        after = running.started_at + timedelta(seconds=seconds) + pause(seconds)
        due = after if due is None else max(due, after)
    if due is not None and due > (now or timezone.now()):
        return False
    runner.submit(JOB_KIND, {"campaign": name}, join_running=noted_at or False)
    return True


class Pacer:
    """This process's campaigns whose figures are behind their labels, and the thread
    (started by the first note) that queues their refreshes when due."""

    def __init__(self, autostart: bool = True) -> None:
        self.autostart = autostart
        self._lock = threading.Lock()
        self._noted: dict[int, tuple[str, int, datetime]] = {}
        self._count = 0
        self._thread: threading.Thread | None = None

    def note(self, campaign_id: int, name: str) -> None:
        with self._lock:
            self._count += 1
            # The newest label to follow: a refresh that started after it read them all.
            self._noted[campaign_id] = (name, self._count, timezone.now())
            if self.autostart and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(
                    target=self._run, name="firepool-figures-pacer", daemon=True
                )
                self._thread.start()

    def noted(self) -> dict[int, str]:
        with self._lock:
            return {campaign_id: name for campaign_id, (name, *_) in self._noted.items()}

    def look(self, now: datetime | None = None) -> list[int]:
        """Queue the refreshes due now; the campaigns taken care of (no longer noted unless
        noted again meanwhile)."""
        with self._lock:
            noted = dict(self._noted)
        done = []
        for campaign_id, (name, count, since) in noted.items():
            if queue_refresh(campaign_id, name, now, noted_at=since):
                done.append(campaign_id)
                with self._lock:
                    if self._noted.get(campaign_id, (None, 0))[1] == count:
                        del self._noted[campaign_id]
        return done

    def _run(self) -> None:
        """Look every :data:`TICK`; the connection is kept as a request's is (``CONN_MAX_AGE``),
        since closing it after each look opened a PostgreSQL connection a second."""
        while True:
            time.sleep(TICK)
            try:
                self.look()
            except Exception:  # a failed look is tried again next tick
                logger.exception("campaign figures: queueing a refresh failed")
            finally:
                close_old_connections()


pacer = Pacer()


def request_refresh(campaign) -> bool:
    """Once the label's transaction commits, note that the campaign's figures must follow;
    whether noted (not when the figures' jobs are turned off, as in tests)."""
    if not settings.FIREPOOL_WARM_FIGURES:
        return False
    campaign_id, name = campaign.pk, campaign.name
    transaction.on_commit(lambda: pacer.note(campaign_id, name))
    return True
