"""Debian's nginx running the shipped ``deploy/nginx/firepool.conf``: the nginx tests and the
load bench start it in front of the app with their own port, upstream and folders."""

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "deploy" / "nginx" / "firepool.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
DEBIAN_MIME_TYPES = Path("/etc/nginx/mime.types")
needs_nginx = pytest.mark.skipif(
    not os.path.exists(NGINX),
    reason="Debian nginx not installed (`make test` installs it when run as root)",
)


def render_site(upstream: str, port: int, static_root: Path, media_root: Path) -> str:
    """The shipped site with this run's upstream, port and folders in place of the
    deployment's; a line the rendering replaces that the file no longer has is an error."""
    text = SITE.read_text()
    for old, new in (
        ("listen 80;", f"listen 127.0.0.1:{port};"),
        ("listen [::]:80;", ""),
        ("server 127.0.0.1:8000;", f"server {upstream};"),
        ("/srv/firepool/var/static/", f"{static_root}/"),
        ("/srv/firepool/var/media/", f"{media_root}/"),
    ):
        if old not in text:
            raise ValueError(f"{SITE} no longer has {old!r}; update tests/nginx_support.py")
        text = text.replace(old, new)
    return text


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Nginx:
    """nginx in the foreground with the rendered site, its files (pid, logs, buffers) in ``folder``."""

    folder: Path
    upstream: str
    static_root: Path
    media_root: Path
    workers: int = 1
    port: int = 0
    process: subprocess.Popen | None = None

    def start(self, timeout: float = 20.0) -> "Nginx":
        self.port = self.port or free_port()
        self.folder.mkdir(parents=True, exist_ok=True)
        conf = self.folder / "nginx.conf"
        conf.write_text(self._main_config())
        log = self.folder / "error.log"
        self.process = subprocess.Popen(
            [NGINX, "-p", str(self.folder), "-c", str(conf), "-e", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nginx did not listen on {self.port} within {timeout:.0f} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "Nginx":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _main_config(self) -> str:
        """Debian's nginx.conf in short, around the site; as root the workers stay root, since
        nobody (nginx's default worker user) cannot enter pytest's or tempfile's 0700 folders."""
        folder = self.folder
        temp = "\n".join(
            f"    {kind}_temp_path {folder / kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        types = f"include {DEBIAN_MIME_TYPES};" if DEBIAN_MIME_TYPES.exists() else ""
        site = render_site(self.upstream, self.port, self.static_root, self.media_root)
        return f"""{"user root;" if os.geteuid() == 0 else ""}
daemon off;
worker_processes {self.workers};
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} warn;
events {{ worker_connections 4096; }}
http {{
    {types}
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
{temp}
{site}
}}
"""
