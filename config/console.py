"""Progress lines for long commands, ``[  42.1 s] what is happening``, never silent for long,
counted from ``FIREPOOL_START`` (one moment for every command of a ``make run``) or import."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

QUIET_SECONDS = 8.0
"""Longest a :func:`ticking` block stays silent before it says it is still working."""


def _started() -> float:
    try:
        return float(os.environ["FIREPOOL_START"])
    except (KeyError, ValueError):
        return time.time()


class Console:
    """Writes timestamped progress lines to ``stream``, remembering when it last wrote."""

    def __init__(self, stream: TextIO | None = None, started: float | None = None) -> None:
        self.stream = stream
        self.started = _started() if started is None else started
        self.last = time.monotonic()
        self._lock = threading.Lock()

    def elapsed(self) -> float:
        return time.time() - self.started

    def say(self, text: str) -> None:
        """Print ``[ seconds s] text`` and flush."""
        stream = self.stream or sys.stdout
        with self._lock:
            stream.write(f"[{self.elapsed():6.1f} s] {text}\n")
            stream.flush()
            self.last = time.monotonic()

    def counter(self, what: str, every: float = 3.0) -> Callable[[int, int], None]:
        """A ``progress(done, total)`` callback saying so at most every ``every`` seconds."""
        shown = [0.0]

        def progress(done: int, total: int) -> None:
            now = time.monotonic()
            if done >= total or now - shown[0] >= every:
                shown[0] = now
                self.say(f"{what}: {done} of {total}")

        return progress

    @contextmanager
    def ticking(self, what: str, quiet: float = QUIET_SECONDS) -> Iterator[None]:
        """Say ``what ...``, ``still working`` after ``quiet`` silent seconds, then ``done``."""
        self.say(f"{what} ...")
        began = time.monotonic()
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(1.0):
                if time.monotonic() - self.last >= quiet:
                    self.say(f"{what}: still working ({time.monotonic() - began:.0f} s so far)")

        thread = threading.Thread(target=tick, name="console-ticker", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
        self.say(f"{what}: done in {time.monotonic() - began:.1f} s")
