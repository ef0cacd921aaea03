"""Replay an outside tester's probes against a running firepool (``make run``) and report every
5xx and every false success.

Logs in as each demo role, crawls the pages it can reach (links two levels deep, same host
only, GET only), then sends the odd requests the probe found: hostile names through the run
upload API and the add-model form, impossible ids in the judging API, non-digit byte ranges,
and a retried submit with another label. Loopback only; every loop is bounded.

    .venv/bin/python bench/probe.py --base http://127.0.0.1:8000
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import uuid
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import requests

ROLES = {
    "admin": "firepool-admin",
    "researcher": "firepool-researcher",
    "annotator1": "firepool-annotator1",
}
HOSTILE_NAMES = ["slash/name", ".", "..", "a\u2028b", "x\u200ey", "<b>x</b>", "\\2F"]
IMPOSSIBLE = [2**31, 2**63, 10**30, -1, 0]
SKIP = re.compile(r"/(logout|admin/logout)/|/media/|\.(mp4|webm|png|jpg|css|js)$")


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


@dataclass
class Findings:
    requests: int = 0
    server_errors: list[str] = field(default_factory=list)
    false_successes: list[str] = field(default_factory=list)

    def check(self, what: str, response: requests.Response) -> requests.Response:
        self.requests += 1
        if response.status_code >= 500:
            self.server_errors.append(f"{response.status_code} {what}")
        return response


def login(base: str, user: str, password: str) -> requests.Session:
    session = requests.Session()
    page = session.get(urljoin(base, "/login/"), timeout=30)
    token = session.cookies.get("csrftoken") or ""
    answer = session.post(
        urljoin(base, "/login/"),
        data={"username": user, "password": password, "csrfmiddlewaretoken": token},
        headers={"Referer": page.url},
        timeout=30,
    )
    if "sessionid" not in session.cookies:
        sys.exit(f"could not log in as {user} ({answer.status_code}); run `make run` first")
    session.headers["X-CSRFToken"] = session.cookies.get("csrftoken") or ""
    session.headers["Referer"] = base
    return session


def crawl(base: str, session: requests.Session, who: str, found: Findings, limit: int) -> None:
    seen, frontier = set(), ["/"]
    for _depth in range(3):
        following = []
        for path in frontier:
            if path in seen or len(seen) >= limit:
                continue
            seen.add(path)
            response = found.check(
                f"{who} GET {path}", session.get(urljoin(base, path), timeout=60)
            )
            if "html" not in response.headers.get("Content-Type", ""):
                continue
            parser = Links()
            parser.feed(response.text)
            for href in parser.hrefs:
                url = urlsplit(urljoin(response.url, href))
                if url.netloc == urlsplit(base).netloc and not SKIP.search(url.path):
                    following.append(url.path + (f"?{url.query}" if url.query else ""))
        frontier = following
    print(f"  {who}: {len(seen)} pages crawled")


def hostile_names(base: str, admin: requests.Session, found: Findings) -> None:
    run_file = "\n".join(f"q{i} Q0 v{i} 1 1.0 probe" for i in range(3)).encode()
    for name in HOSTILE_NAMES:
        answer = found.check(
            f"upload run {name!r}",
            admin.post(
                urljoin(base, "/api/datasets/demo/runs/"),
                data={"name": name, "format": "trec"},
                files={"file": ("run.txt", io.BytesIO(run_file))},
                timeout=60,
            ),
        )
        if answer.status_code < 300:
            found.false_successes.append(f"run named {name!r} accepted ({answer.status_code})")
    for path in ["/", "/datasets/", "/datasets/demo/"]:
        found.check(f"admin GET {path} after hostile uploads", admin.get(urljoin(base, path)))


def judging(base: str, annotator: requests.Session, found: Findings) -> str | None:
    """Impossible ids and a retried submit with another label; returns a served video's URL."""
    campaigns = annotator.get(urljoin(base, "/api/campaigns/"), timeout=30)
    found.check("GET /api/campaigns/", campaigns)
    listed = campaigns.json() if campaigns.ok else []
    rows = listed.get("results", listed) if isinstance(listed, dict) else listed
    if not rows:
        print("  no campaign open to the annotator: judging probes skipped")
        return None
    api = urljoin(base, f"/api/campaigns/{rows[0]['id']}/")
    for value in IMPOSSIBLE:
        body = {"pair": value, "label": "relevant", "uuid": str(uuid.uuid4()), "seconds": 2}
        found.check(f"submit pair={value}", annotator.post(api + "submit/", json=body))
        found.check(f"escalate pair={value}", annotator.post(api + "escalate/", json=body))
    for value in IMPOSSIBLE:
        found.check(
            f"campaign id {value}", annotator.get(urljoin(base, f"/api/campaigns/{value}/next/"))
        )
    task = found.check("next", annotator.post(api + "next/", json={})).json()
    current = (task or {}).get("current") or {}
    video = current.get("video_url")
    if current.get("pair"):
        same = str(uuid.uuid4())
        first = {"pair": current["pair"], "label": "relevant", "uuid": same, "seconds": 2}
        found.check("submit", annotator.post(api + "submit/", json=first))
        again = found.check(
            "retry with another label",
            annotator.post(api + "submit/", json={**first, "label": "irrelevant"}),
        )
        if again.status_code != 409:
            found.false_successes.append(f"retried uuid with another label: {again.status_code}")
    return video


def ranges(base: str, session: requests.Session, video: str | None, found: Findings) -> None:
    if not video:
        print("  no video served: range probes skipped")
        return
    for header in ["bytes=1_0-2_0", "bytes=+1-+5", "bytes=\u0661-\u0662", "bytes=0-1"]:
        answer = found.check(
            f"Range {header!r}",
            session.get(urljoin(base, video), headers={"Range": header.encode()}),
        )
        if header != "bytes=0-1" and answer.status_code == 206:
            found.false_successes.append(f"non-digit range {header!r} honoured")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--pages", type=int, default=150, help="most pages crawled per role")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args()
    host = urlsplit(args.base).hostname or ""
    if not (host.startswith("127.") or host in {"localhost", "::1"}):
        sys.exit("probes go to loopback addresses only")
    found = Findings()
    sessions = {who: login(args.base, who, password) for who, password in ROLES.items()}
    for who, session in sessions.items():
        crawl(args.base, session, who, found, args.pages)
    hostile_names(args.base, sessions["admin"], found)
    video = judging(args.base, sessions["annotator1"], found)
    ranges(args.base, sessions["annotator1"], video, found)
    if args.format == "json":
        print(json.dumps(found.__dict__, indent=2))
    else:
        print(
            f"{found.requests} requests, {len(found.server_errors)} 5xx, "
            f"{len(found.false_successes)} false successes"
        )
        for line in found.server_errors + found.false_successes:
            print("  " + line)
    return 1 if found.server_errors or found.false_successes else 0


if __name__ == "__main__":
    raise SystemExit(main())
