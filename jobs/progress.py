"""Progress and liveness of running jobs, written to their rows: a :class:`Reporter` is what a
job's function sees (writing a few times a second at most); :data:`beater` keeps the heartbeat
of this process's jobs fresh from a daemon thread and reaps other processes' stale ones, so
the pages that show jobs only read."""

import logging
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from jobs.models import Job

logger = logging.getLogger(__name__)


def reap_stale(now=None) -> int:
    """Mark failed every held job whose heartbeat is older than the stale limit (its process
    was killed, crashed or restarted); how many were reaped."""
    now = now or timezone.now()
    stale = float(getattr(settings, "FIREPOOL_JOB_STALE_SECONDS", 60))
    return Job.objects.filter(
        status__in=(Job.Status.QUEUED, Job.Status.RUNNING),
        heartbeat_at__lt=now - timedelta(seconds=stale),
    ).update(
        status=Job.Status.FAILED,
        error=(
            "The process running this job stopped answering (it was killed, crashed or "
            f"restarted); no heartbeat for over {stale:.0f} s. Retry it."
        ),
        finished_at=now,
    )


class Reporter:
    """Write a job's step, done and total counts, throttled to ``interval`` seconds."""

    def __init__(self, job_id: int, interval: float = 0.5):
        self.job_id = job_id
        self.interval = interval
        self.done = 0
        self.total: int | None = None
        self.message = ""
        self._written = 0.0

    def step(self, message: str, total: int | None = None, done: int = 0) -> None:
        """Start a step called ``message`` of ``total`` units, ``done`` of them done."""
        self.message = message[:300]
        self.total = total
        self.done = done
        self.flush()

    def advance(self, units: int = 1) -> None:
        """Count ``units`` more units of the current step as done."""
        self.done += int(units)
        if time.monotonic() - self._written >= self.interval:
            self.flush()

    def flush(self) -> None:
        Job.objects.filter(pk=self.job_id).update(
            done=self.done, total=self.total, message=self.message, heartbeat_at=timezone.now()
        )
        self._written = time.monotonic()


class ConsoleReporter(Reporter):
    """A :class:`Reporter` drawing a progress bar on ``stream`` (none when ``quiet``) instead of
    writing a job's row: for a job its command runs in this process."""

    def __init__(self, stream, quiet: bool = False):
        super().__init__(job_id=0)
        self.stream = stream
        self.quiet = quiet
        self._bar = None

    def flush(self) -> None:
        if self.quiet:
            return
        from tqdm import tqdm

        if self._bar is None or self._bar.total != self.total:
            self.close()
            self._bar = tqdm(total=self.total, unit=" items", file=self.stream, leave=False)
        self._bar.set_description_str(self.message, refresh=False)
        self._bar.n = self.done
        self._bar.refresh()
        self._written = time.monotonic()

    def close(self) -> None:
        """End the bar, if one is drawn."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class Beater:
    """A daemon thread that refreshes the heartbeat of the jobs this process holds."""

    def __init__(self) -> None:
        self._held: set[int] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def hold(self, job_id: int) -> None:
        with self._lock:
            self._held.add(job_id)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._beat, name="job-heartbeat")
                self._thread.daemon = True
                self._thread.start()

    def release(self, job_id: int) -> None:
        with self._lock:
            self._held.discard(job_id)

    def beat(self) -> int:
        """Refresh the heartbeat of the jobs held here, then reap other processes' lost jobs
        (how many); a process holding no job stays off the database."""
        with self._lock:
            held = list(self._held)
        if not held:
            return 0
        Job.objects.filter(pk__in=held, status__in=(Job.Status.QUEUED, Job.Status.RUNNING)).update(
            heartbeat_at=timezone.now()
        )
        return reap_stale()

    def _beat(self) -> None:
        while True:
            time.sleep(float(getattr(settings, "FIREPOOL_JOB_HEARTBEAT_SECONDS", 10)))
            with self._lock:
                if not self._held:  # idle: stay off the database (and out of its connections)
                    continue
            try:
                close_old_connections()
                self.beat()
            except Exception:  # a database hiccup must not kill the thread
                logger.exception("job heartbeat failed")
            finally:
                connection.close()


beater = Beater()
