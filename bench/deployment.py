"""Start the README's deployment on this machine and replay ``bench/probe.py`` against it.

PostgreSQL (database ``firepool_probes``), ``DJANGO_DEBUG=0``, gunicorn ``-w 2 --threads 4``
and the two job workers, without nginx or TLS (``DJANGO_SECURE_SSL_REDIRECT=0``, media sent by
the workers). The demo world in ``var/probe-deployment`` is kept for the next run
(``--fresh`` rebuilds); 500s and lost workers in the servers' logs are printed after the
report. Exit status: the probe's::

    .venv/bin/python bench/deployment.py [--fresh] [--build] [-- probe arguments]
"""

import argparse
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

from harness import (
    ROOT,
    free_port,
    postgres_database,
    start_group,
    stop_groups,
    wait_until_up,
)

DB_NAME = "firepool_probes"
TROUBLE = ("Internal Server Error", "WORKER TIMEOUT", "Exception in worker", "was sent SIG")
"""What a 500 (Django's request log) or a lost gunicorn worker leaves in the logs."""


def environment(url: str, var: Path, port: int) -> dict[str, str]:
    """The README's deployment variables, on loopback."""
    return {
        **os.environ,
        "DATABASE_URL": url,
        "DATABASE_CONN_MAX_AGE": "60",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_CSRF_TRUSTED_ORIGINS": f"http://127.0.0.1:{port}",
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "FIREPOOL_TASKS_BACKEND": "database",
        "FIREPOOL_LIVE_QUEUE": "1",
        "FIREPOOL_VAR_DIR": str(var),
        "FIREPOOL_NLTK_DATA": str(ROOT / "var" / "nltk_data"),
        "PYTHONUNBUFFERED": "1",
    }


def manage(env: dict[str, str], *command: str) -> None:
    subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fresh", action="store_true", help="drop the database and var dir")
    parser.add_argument("--build", action="store_true", help="build the demo world and stop")
    parser.add_argument("--var", type=Path, default=ROOT / "var" / "probe-deployment")
    parser.add_argument("probe", nargs=argparse.REMAINDER, help="arguments for bench/probe.py")
    args = parser.parse_args()
    if args.fresh:
        shutil.rmtree(args.var, ignore_errors=True)
    args.var.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = environment(postgres_database(DB_NAME, drop=args.fresh), args.var, port)
    began = time.perf_counter()
    manage(env, "setup_demo")
    manage(env, "startup_jobs")  # the deferred demo work, in this process as `make run` does
    manage(env, "check", "--deploy")
    print(f"demo world ready in {time.perf_counter() - began:.0f} s", flush=True)
    if args.build:
        return 0
    base = f"http://127.0.0.1:{port}"
    logs = args.var / "logs"  # kept for a look afterwards; replaced on every run
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir()
    processes = [
        start_group(
            [
                *("-m", "gunicorn", "config.wsgi", "-w", "2", "--threads", "4"),
                *("--keep-alive", "5", "-b", f"127.0.0.1:{port}"),
            ],
            env,
            logs / "gunicorn.log",
        )
    ] + [
        start_group(["manage.py", "db_worker", "--queue-name", queue, "--no-reload"], env, logs / f"worker-{queue}.log")
        for queue in ("default", "live")
    ]  # fmt: skip
    try:
        wait_until_up(f"{base}/login/", processes, timeout=120)
        print(f"deployment serving at {base}: gunicorn -w 2 --threads 4, workers default and live", flush=True)  # fmt: skip
        probe = [sys.executable, str(ROOT / "bench" / "probe.py"), "--base", base]
        rc = subprocess.run([*probe, *[a for a in args.probe if a != "--"]], cwd=ROOT).returncode
    finally:
        stop_groups(processes)
    for log in sorted(logs.iterdir()):
        lines = log.read_text(errors="replace").splitlines()
        bad = [i for i, line in enumerate(lines) if any(sign in line for sign in TROUBLE)]
        print(f"{log}: {len(bad)} 500s or worker failures")
        for i in bad[:5]:
            print("\n".join(lines[i : i + 30]))
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
