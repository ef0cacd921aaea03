"""What every benchmark script repeats: Django on a throw-away var directory and database (or a
PostgreSQL database of its own), logging with the elapsed time, timing and percentiles, the
machine line and the common options, so that each script states only what it measures."""

import argparse
import contextlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benches import the project (and tests' shared helpers)

_STARTED = time.monotonic()


def log(message: str) -> None:
    """A diagnostic line on stderr, after the seconds since the script started (stdout keeps
    the figures)."""
    print(f"[{time.monotonic() - _STARTED:8.1f} s] {message}", file=sys.stderr, flush=True)


def machine() -> str:
    """One line describing this machine, for RESULTS.md."""
    processor = platform.processor() or platform.machine()
    return f"{processor}, {os.cpu_count()} cores, Python {platform.python_version()}"


def parser(
    doc: str, database: bool = False, seed: bool = False, paragraph: bool = False
) -> argparse.ArgumentParser:
    """The script's options, described by its docstring's first line (first paragraph with
    ``paragraph``); ``database`` adds ``--database-url`` and ``seed`` adds ``--seed``."""
    first = doc.split("\n\n")[0] if paragraph else doc.strip().splitlines()[0]
    options = argparse.ArgumentParser(description=first)
    if database:
        options.add_argument(
            "--database-url",
            help="an empty, throw-away PostgreSQL database to run on instead of SQLite",
        )
    if seed:
        options.add_argument("--seed", type=int, default=0)
    return options


# -- timing -------------------------------------------------------------------------------


def once(work: Callable[..., object], *arguments, **options) -> tuple[float, object]:
    """Seconds of one call of ``work`` (given ``arguments`` and ``options``), and what it
    returned."""
    began = time.perf_counter()
    result = work(*arguments, **options)
    return time.perf_counter() - began, result


def timed(work: Callable[[], object], repeats: int) -> tuple[list[float], object]:
    """Seconds of each of ``repeats`` calls of ``work``, and what the last returned."""
    times, result = [], None
    for _ in range(repeats):
        seconds, result = once(work)
        times.append(seconds)
    return times, result


def summarised(
    work: Callable[[], object], repeats: int, how: Callable[[list[float]], float] = min
) -> tuple[float, object]:
    """``how`` (the best by default, or the median...) of :func:`timed`'s seconds, and what
    the last call returned."""
    times, result = timed(work, repeats)
    return how(times), result


def percentiles(
    values: Sequence[float], which: Sequence[float] = (50, 95, 99), digits: int = 1
) -> tuple[float, ...]:
    """The ``which`` percentiles of ``values``, rounded (NaN for none)."""
    if not len(values):
        return (float("nan"),) * len(which)
    found = np.percentile(np.asarray(values, dtype=float), list(which))
    return tuple(round(float(value), digits) for value in found)


def anchor_count(model, repeats: int = 3, **where) -> float:
    """Median seconds of a ``SELECT count(*)`` over ``model``'s rows matching ``where``
    (column = value): the anchor that lets figures compare across machines."""
    import statistics

    from django.db import connection

    quote = connection.ops.quote_name
    names = [model._meta.get_field(name).column for name in where]
    condition = " AND ".join(f"{quote(name)} = %s" for name in names) or "1 = 1"
    sql = f"SELECT count(*) FROM {quote(model._meta.db_table)} WHERE {condition}"

    def count() -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql, list(where.values()))
            cursor.fetchone()

    return statistics.median(timed(count, repeats)[0])


# -- servers ------------------------------------------------------------------------------


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(
    url: str, processes: Sequence, timeout: float = 60.0, any_status: bool = True
) -> None:
    """Block until ``url`` answers (any HTTP status, or only 200 unless ``any_status``);
    fail when one of ``processes`` (``subprocess.Popen``) exits first or time runs out."""
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(process.poll() is not None for process in processes):
            raise RuntimeError("a server process exited while starting")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if any_status or response.status == 200:
                    return
        except urllib.error.HTTPError:
            if any_status:
                return  # 403 for an anonymous client: it answers
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"no answer from {url} within {timeout:.0f} s")


def start_group(command: Sequence[str], env: dict[str, str], log: Path):
    """``command`` run by this Python from the project's root with ``env`` added to this
    process's, its output appended to ``log``, in a process group of its own (one signal
    reaches a server and its workers); the ``subprocess.Popen``."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, *command],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_groups(processes: Sequence, timeout: float = 30.0) -> None:
    """SIGTERM to the process groups of ``processes``, SIGKILL to those still there after
    ``timeout`` seconds."""
    import signal

    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# -- Django and its database --------------------------------------------------------------


@contextlib.contextmanager
def temporary_django(
    database_url: str | None = None, template: Path | None = None
) -> Iterator[Path]:
    """Django on a fresh temporary var dir (SQLite unless ``database_url``; copied from
    ``template``, a :func:`save_var` of a world built earlier), migrated; yields the temporary
    directory, removed afterwards once the jobs queued in this process (figure refreshes) have
    ended: one still writing there as it was removed lost a run's printed tables."""
    with tempfile.TemporaryDirectory(prefix="firepool-bench-") as tmp:
        var = Path(tmp) / "var"
        if template is not None:
            shutil.copytree(template, var)
        else:
            var.mkdir()
        database_url = database_url or f"sqlite:///{var / 'bench.sqlite3'}"
        setup_django({"FIREPOOL_VAR_DIR": str(var), "DATABASE_URL": database_url})
        try:
            yield Path(tmp)
        finally:
            from django.db import connections

            from jobs.runner import finish_in_process

            finish_in_process()
            connections.close_all()


def django_ready(environment: dict[str, str] | None = None) -> None:
    """Django set up on ``environment`` (added to this process's); its database untouched."""
    os.environ.update(environment or {})
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def setup_django(environment: dict[str, str] | None = None) -> float:
    """:func:`django_ready`, migrated; seconds the migrations took."""
    django_ready(environment)
    from django.core.management import call_command

    return once(lambda: call_command("migrate", verbosity=0))[0]


def save_var(tmp: Path, target: Path) -> None:
    """Copy the temporary var dir (SQLite database checkpointed, media left out) to ``target``,
    so a later run can start from it (``temporary_django(template=target)``)."""
    from django.db import connection

    connection.close()  # the last connection to close checkpoints SQLite's write-ahead log
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(tmp / "var", target, ignore=shutil.ignore_patterns("media"))


def postgres_server(given: str | None = None) -> str:
    """A PostgreSQL server's URL: ``given``, ``DATABASE_URL`` if it names one, or
    ``bin/local-postgres``'s (which starts the local server)."""
    url = given or os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        return url
    found = subprocess.run(
        [str(ROOT / "bin" / "local-postgres")], capture_output=True, text=True, check=False
    )
    lines = found.stdout.strip().splitlines()
    if found.returncode != 0 or not lines:
        raise SystemExit("no PostgreSQL: pass --database-url or run bin/local-postgres as root")
    return lines[-1]


def database_url(server: str, name: str) -> str:
    """The URL of the database ``name`` on ``server``."""
    return urlunsplit(urlsplit(server)._replace(path="/" + name))


def create_database(server: str, name: str, drop: bool = True) -> bool:
    """Create the database ``name`` on ``server`` (dropped first when it exists and ``drop``);
    whether it existed and was kept."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(server, autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if exists and not drop:
            return True
        if exists:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return False


def postgres_database(name: str, drop: bool = True) -> str:
    """The URL of the database ``name`` on :func:`postgres_server`'s server, created (dropped
    first when it exists and ``drop``); the machine logged beside it."""
    log(f"machine: {machine()}; load average before: {os.getloadavg()[0]:.2f}")
    server = postgres_server()
    create_database(server, name, drop)
    return database_url(server, name)


def drop_database(url: str) -> None:
    """Drop the database of ``url`` (this process's Django connections closed first)."""
    import psycopg
    from django.db import connections
    from psycopg import sql

    connections.close_all()
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(database_url(url, "postgres"), autocommit=True) as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def database_name() -> str:
    """What the default connection runs on, for the machine line (``sqlite``, ``postgresql``)."""
    from django.db import connection

    return connection.display_name.lower()
