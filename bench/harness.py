"""Shared set-up for benchmark scripts: Django on a throw-away var directory and database."""

import contextlib
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benches import the project (and tests' shared helpers)


@contextlib.contextmanager
def temporary_django(
    database_url: str | None = None, template: Path | None = None
) -> Iterator[Path]:
    """Set up Django on a fresh temporary var dir (SQLite unless ``database_url``), migrated.

    ``template``: a var dir saved by :func:`save_var` to start from (a world built earlier).
    Yields the temporary directory; everything in it is removed afterwards.
    """
    with tempfile.TemporaryDirectory(prefix="firepool-bench-") as tmp:
        var = Path(tmp) / "var"
        if template is not None:
            shutil.copytree(template, var)
        else:
            var.mkdir()
        os.environ["FIREPOOL_VAR_DIR"] = str(var)
        os.environ["DATABASE_URL"] = database_url or f"sqlite:///{var / 'bench.sqlite3'}"
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        yield Path(tmp)


def save_var(tmp: Path, target: Path) -> None:
    """Copy the temporary var dir (SQLite database checkpointed, media left out) to ``target``,
    so a later run can start from it (``temporary_django(template=target)``)."""
    from django.db import connection

    connection.close()  # the last connection to close checkpoints SQLite's write-ahead log
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(tmp / "var", target, ignore=shutil.ignore_patterns("media"))


def machine() -> str:
    """One line describing this machine, for RESULTS.md."""
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
