"""Time the first ``make run`` of a fresh clone: seconds to the first HTTP 200, and silences.

Clones HEAD into a temporary folder, runs ``make run`` and prints the time to the login page's
first 200 and the longest silence between output lines beside the targets (two minutes, ten
seconds), step by step; ``--wait-jobs`` waits for the deferred jobs, ``--again`` times a
second start that must rebuild nothing. The figure depends on the machine::

    .venv/bin/python bench/first_start.py --wait-jobs --again --keep
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness import ROOT, free_port, parser, wait_until_up

TARGET_SECONDS = 120.0
TARGET_SILENCE = 10.0
# Environment that would point the clone at another checkout's database or files.
FOREIGN_ENV = ("DATABASE_URL", "FIREPOOL_", "DJANGO_", "VIRTUAL_ENV", "PYTHONPATH")
STEP_PREFIXES = (".venv/bin/", "test -", "touch ", "mkdir ")
# "[  12.3 s] migrating the database ..." begins a step; counters and "still working" lines
# of a step end otherwise.
PROGRESS_STEP = re.compile(r"^\[\s*\d+(\.\d+)? s\] (?P<step>.+?) \.\.\.$")
SERVER_STEP = ("Watching for file changes", "Performing system checks")
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Output:
    """Lines of a process's output with the seconds (since ``started``) they arrived."""

    started: float
    session: int = 0
    lines: list[tuple[float, str]] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, text: str) -> None:
        now = time.monotonic() - self.started
        used = session_cpu(self.session)
        with self.lock:
            self.lines.append((now, text))
            self.cpu.append(used)

    def snapshot(self) -> list[tuple[float, str]]:
        with self.lock:
            return list(self.lines)

    def cpu_at(self, seconds: float) -> float:
        """CPU seconds the session had used by the last line at or before ``seconds``."""
        with self.lock:
            used = [c for (t, _), c in zip(self.lines, self.cpu, strict=True) if t <= seconds]
        return used[-1] if used else 0.0


def session_cpu(session: int) -> float:
    """CPU seconds (user + system) used by the processes of ``session``, with the children
    they have reaped: make reaps each finished recipe, so the whole run is counted. On an idle
    machine a one-process step's wall time is about its CPU time; on a busy one, far more."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session:  # field 6 of stat, the session id
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / TICKS


def read_output(process: subprocess.Popen, output: Output, log) -> None:
    """Split the process's bytes on newlines and carriage returns as they arrive."""
    pending = b""
    fd = process.stdout.fileno()
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        log.write(chunk)
        log.flush()
        pending += chunk
        *complete, pending = re.split(rb"[\r\n]", pending)
        for piece in complete:
            text = piece.decode("utf-8", "replace").rstrip()
            if text:
                output.add(text)
    if pending.strip():
        output.add(pending.decode("utf-8", "replace").rstrip())


@contextlib.contextmanager
def make_run(clone: Path, port: int, log_path: Path) -> Iterator[tuple[subprocess.Popen, Output]]:
    """``make run`` in ``clone`` without the environment that would point it elsewhere, its
    output read as it arrives (and appended to ``log_path``); at the end its process group is
    interrupted (as Ctrl-C would), then insisted on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV)}
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            ["make", "run", f"PORT={port}"],
            cwd=clone,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            # Started from a shell's background job, we would pass on an ignored SIGINT, and the
            # server would not stop on it as it does on a terminal's Ctrl-C.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        output = Output(started=time.monotonic(), session=process.pid)
        threading.Thread(target=read_output, args=(process, output, log), daemon=True).start()
        try:
            yield process, output
        finally:
            for sig, grace in ((signal.SIGINT, 10), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                if process.poll() is not None:
                    break
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(grace)


def wait_for_200(process: subprocess.Popen, url: str, timeout: float, began: float) -> float | None:
    """Seconds from ``began`` until ``url`` answers 200 (after redirects); None when the
    process exits first or ``timeout`` seconds from ``began`` pass."""
    try:
        wait_until_up(url, [process], timeout - (time.monotonic() - began), any_status=False)
    except RuntimeError:
        return None
    return time.monotonic() - began


def longest_silence(lines: list[tuple[float, str]], until: float) -> tuple[float, float, str]:
    """The longest gap (seconds, where it began, the line before it) from 0 to ``until``."""
    kept = [(0.0, "(start)"), *((when, line) for when, line in lines if when <= until)]
    ends = [when for when, _ in kept[1:]] + [until]
    gaps = [end - when for end, (when, _) in zip(ends, kept, strict=True)]
    i = gaps.index(max(gaps))
    return gaps[i], kept[i][0], kept[i][1]


def steps(
    lines: list[tuple[float, str]], until: float, output: Output
) -> list[tuple[str, float, float, float, float]]:
    """(name, start, seconds, longest silence, CPU seconds) of each step up to ``until``."""
    starts = []
    for when, line in lines:
        if when > until:
            break
        match = PROGRESS_STEP.match(line)
        if line.startswith(STEP_PREFIXES):
            starts.append((when, line))
        elif match:
            starts.append((when, match.group("step")))
        elif line.startswith(SERVER_STEP) and not (starts and starts[-1][1] == "server start"):
            starts.append((when, "server start"))
    rows = []
    for i, (when, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else until
        inside = [(t - when, text) for t, text in lines if when <= t <= end]
        silence = longest_silence(inside, end - when)[0]
        cpu = output.cpu_at(end) - output.cpu_at(when - 1e-9)
        rows.append((shorten(name), when, end - when, silence, cpu))
    return rows


def shorten(command: str) -> str:
    command = command.replace(".venv/bin/python ", "").replace("2>&1 | { grep", "| grep")
    return command if len(command) <= 70 else command[:67] + "..."


def open_jobs(clone: Path) -> tuple[int, int] | None:
    """(unfinished, all) deferred jobs in the clone's database, or None before it exists."""
    path = clone / "var" / "firepool.sqlite3"
    if not path.exists():
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return db.execute(
                "SELECT count(*) FILTER (WHERE status IN ('queued', 'running')), count(*)"
                " FROM jobs_job"
            ).fetchone()
    except sqlite3.Error:
        return None


def report(title: str, seconds: float | None, output: Output, until: float) -> None:
    lines = output.snapshot()
    silence, at, before = longest_silence(lines, until)
    print(f"\n{title}")
    shown = f"{seconds:7.1f} s" if seconds is not None else "  never"
    verdict = "" if seconds is None else ("  ok" if seconds <= TARGET_SECONDS else "  OVER")
    print(f"  first HTTP 200:        {shown}   (target {TARGET_SECONDS:.0f} s){verdict}")
    verdict = "  ok" if silence <= TARGET_SILENCE else "  OVER"
    print(
        f"  longest silence:       {silence:7.1f} s   (target {TARGET_SILENCE:.0f} s){verdict}"
        f"  from {at:.1f} s, after: {shorten(before)!r}"
    )
    print(
        f"  CPU seconds used by then: {output.cpu_at(until):.1f} (about the wall time of an idle "
        "machine for one-process steps)"
    )
    print(f"  {'step':<70} {'start':>7} {'seconds':>8} {'silence':>8} {'CPU s':>7}")
    for name, when, length, quiet, cpu in steps(lines, until, output):
        print(f"  {name:<70} {when:7.1f} {length:8.1f} {quiet:8.1f} {cpu:7.1f}")


def main(argv: list[str] | None = None) -> int:
    options = parser(__doc__, paragraph=True)
    options.add_argument("--repo", default=str(ROOT), help="Repository to clone (its HEAD).")
    options.add_argument("--port", type=int, default=0, help="Port (default: a free one).")
    options.add_argument("--timeout", type=float, default=900, help="Give up after this long.")
    options.add_argument(
        "--wait-jobs", action="store_true", help="Also wait for the deferred jobs to finish."
    )
    options.add_argument("--again", action="store_true", help="Time a second `make run` too.")
    options.add_argument("--keep", action="store_true", help="Keep the clone (prints where).")
    options.add_argument("--dir", help="Clone here instead of a new temporary folder.")
    args = options.parse_args(argv)

    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="firepool-first-start-"))
    clone = base / "firepool"
    port = args.port or free_port()
    url = f"http://127.0.0.1:{port}/login/"
    log_path = base / "make-run.log"
    subprocess.run(["git", "clone", "--quiet", args.repo, str(clone)], check=True)
    head = subprocess.run(
        ["git", "-C", str(clone), "log", "-1", "--format=%h %s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"Cloned {args.repo} at {head[:90]}")
    print(f"into {clone}; `make run PORT={port}`, output in {log_path}")
    print(f"{os.cpu_count()} cores; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with make_run(clone, port, log_path) as (process, output):
        first = wait_for_200(process, url, args.timeout, output.started)
        until = first if first is not None else time.monotonic() - output.started
        report("First `make run` of a fresh clone", first, output, until)
        if first is None:
            print("  the server never answered; the log's last lines:")
            for _, line in output.snapshot()[-15:]:
                print(f"    {line}")
        elif args.wait_jobs:
            while time.monotonic() - output.started < args.timeout and process.poll() is None:
                counts = open_jobs(clone)
                if counts is not None and counts[0] == 0:
                    break
                time.sleep(1)
            done = time.monotonic() - output.started
            counts = open_jobs(clone)
            print(
                f"  deferred jobs: {counts[1] if counts else 0}, all finished after {done:.1f} s"
                if counts and counts[0] == 0
                else f"  deferred jobs still unfinished after {done:.1f} s: {counts}"
            )
            silence, at, before = longest_silence(output.snapshot(), done)
            print(
                f"  longest silence until then: {silence:.1f} s from {at:.1f} s, after "
                f"{shorten(before)!r}"
            )
    if args.again and first is not None:
        with make_run(clone, port, log_path) as (process, output):
            again = wait_for_200(process, url, args.timeout, output.started)
            report("Second `make run` of the same clone", again, output, again or args.timeout)
    if args.keep or args.dir:
        print(f"\nKept {base}")
    else:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if first is not None else 1


if __name__ == "__main__":
    sys.exit(main())
