"""A real gunicorn on the test database, for the tests that need several worker processes."""

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_database_url() -> str:
    """The URL of the database this test runs on, for the server process."""
    db = connection.settings_dict
    user, password = quote(db["USER"] or "", safe=""), quote(db["PASSWORD"] or "", safe="")
    return f"postgres://{user}:{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class Server:
    """gunicorn (``workers`` sync workers) on the test database, in its own process group so
    one SIGKILL ends it all; ``env`` adds to the environment it starts with."""

    def __init__(self, port: int, log_path: Path, workers: int = 2, env: dict | None = None):
        self.port = port
        self.log_path = log_path
        self.workers = workers
        self.env = env or {}
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "DATABASE_URL": server_database_url(),
            "DATABASE_CONN_MAX_AGE": "600",
            "DJANGO_SECRET_KEY": settings.SECRET_KEY,  # the sessions we write must verify
            "DJANGO_DEBUG": "1",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            **self.env,
        }
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "config.wsgi", "-w", str(self.workers)]
                + ["-b", f"127.0.0.1:{self.port}"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_until_up(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log_path.read_text()[-2000:]
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                conn.request("GET", "/api/")
                if conn.getresponse().status < 500:
                    return
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
            finally:
                conn.close()
        raise AssertionError(f"gunicorn did not answer: {self.log_path.read_text()[-2000:]}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
