"""Jobs recorded for a named worker (make run's deferred work) and the progress lines of
long commands: the worker runs them in order and never stays silent; the console and
bin/heartbeat say "still working" when a step is quiet."""

import io
import subprocess
import sys
import time
from pathlib import Path

import pytest

from config.console import Console
from jobs import runner
from jobs.models import Job
from jobs.runner import startup_jobs, unfinished_job
from jobs.worker import run_recorded
from tests.jobs import kinds  # noqa: F401 - registers the test kinds

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db(transaction=True)
def test_recorded_jobs_wait_for_their_worker_which_runs_them_oldest_first():
    first = runner.record("test-count", {"units": "3"}, runner.STARTUP)
    second = runner.record("test-count", {"units": "2", "fail": "user"}, runner.STARTUP)
    other = runner.record("test-count", {"units": "1"}, "someone-else")
    # Nothing ran them: no task backend was told.
    assert set(Job.objects.values_list("status", flat=True)) == {Job.Status.QUEUED}
    assert [job.pk for job in startup_jobs()] == [first.pk, second.pk]
    assert unfinished_job("test-count", units=2) == second

    lines: list[str] = []
    ran = run_recorded(runner.STARTUP, lines.append, interval=0.05)

    assert [job.pk for job in ran] == [first.pk, second.pk]
    first.refresh_from_db()
    second.refresh_from_db()
    other.refresh_from_db()
    assert first.status == Job.Status.SUCCEEDED and first.result == {"counted": 3}
    assert second.status == Job.Status.FAILED and "line 3" in second.error
    assert other.status == Job.Status.QUEUED  # another worker's
    assert lines[0] == f"job {first.pk} (count): starting"
    assert f"job {first.pk} (count): done" in lines
    assert any(line.startswith(f"job {second.pk} (count) failed: ") for line in lines)
    assert startup_jobs() == [] and unfinished_job("test-count", units=2) is None
    assert run_recorded(runner.STARTUP, lines.append) == []  # nothing left: returns at once


@pytest.mark.django_db(transaction=True)
def test_the_worker_reports_a_long_job_while_it_runs():
    runner.record("test-count", {"units": "4", "seconds": "0.8"}, runner.STARTUP)
    lines: list[str] = []
    run_recorded(runner.STARTUP, lines.append, interval=0.05, quiet=0.2)
    progress = [line for line in lines if ": counting" in line]
    assert len(progress) >= 2, lines
    assert any(line.endswith("%)") for line in progress)


@pytest.mark.django_db
def test_recording_checks_the_arguments_like_submitting():
    with pytest.raises(runner.JobError, match="units"):
        runner.record("test-count", {"units": "-1"}, runner.STARTUP)
    assert not Job.objects.exists()


def test_console_lines_count_from_the_make_start_and_tick_when_quiet():
    out = io.StringIO()
    console = Console(out, started=time.time() - 42)
    with console.ticking("rendering", quiet=0.3):
        time.sleep(1.6)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[  42.") and lines[0].endswith("] rendering ...")
    assert any("rendering: still working" in line for line in lines[1:-1])
    assert "rendering: done in" in lines[-1]
    counter = console.counter("clips", every=60)
    counter(1, 10)
    counter(2, 10)  # too soon after the first: not said
    counter(10, 10)  # the end is always said
    said = [line for line in out.getvalue().splitlines() if "clips:" in line]
    assert [line.split("] ")[1] for line in said] == ["clips: 1 of 10", "clips: 10 of 10"]


def beat(*args: str, env=None) -> subprocess.CompletedProcess:
    """bin/heartbeat with ``args``, its output captured."""
    return subprocess.run(
        [sys.executable, str(ROOT / "bin" / "heartbeat"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_heartbeat_passes_output_on_and_fills_silences():
    command = "print('hello', flush=True); import time; time.sleep(2.5); print('bye')"
    done = beat(
        *("--quiet", "1", "--drop", "^bye", "napping", "--", sys.executable, "-c", command),
        env={"FIREPOOL_START": str(time.time()), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0].endswith("] napping ...") and lines[1] == "hello"
    assert any("napping: still working" in line for line in lines)
    assert "bye" not in lines and lines[-1].split("] ")[1].startswith("napping: done in")
    failed = beat("x", "--", sys.executable, "-c", "1/0")
    assert failed.returncode == 1 and "x: failed (exit status 1)" in failed.stdout
    # After the --until line (a server that is up) a quiet command is left quiet.
    served = "print('Quit the server', flush=True); import time; time.sleep(2.5)"
    up = beat("--quiet", "1", "--until", "^Quit", "serving", "--", sys.executable, "-c", served)
    assert "still working" not in up.stdout and "Quit the server" in up.stdout
