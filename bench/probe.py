"""Replay an outside tester's probes against a running firepool (``make run``, or the README's
deployment: ``bench/deployment.py`` starts it and runs this) and report every 5xx, every false
success, every other failed check and how far the campaign's figures lag the labels.

Crawls each demo role's pages, sends hostile names, impossible ids and byte ranges, then
checks accounts, figures (within 60 s of the labels), pauses, sizes and limits on objects of
its own (``probe-<hex>``). Loopback only; every loop is bounded::

    .venv/bin/python bench/probe.py --base http://127.0.0.1:8000
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from html import unescape
from urllib.parse import urljoin, urlsplit

import lxml.html
import requests
from harness import parser
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

ROLES = {
    "admin": "firepool-admin",
    "researcher": "firepool-researcher",
    "annotator1": "firepool-annotator1",
}
DATASET = "demo"
HOSTILE_NAMES = ["slash/name", ".", "..", "a\u2028b", "x\u200ey", "<b>x</b>", "\\2F"]
IMPOSSIBLE = [2**31, 2**63, 10**30, -1, 0]
SKIP = re.compile(r"/(logout|admin/logout)/|/media/|\.(mp4|webm|png|jpg|css|js)$")
RLO = "\u202e"
"""RIGHT-TO-LEFT OVERRIDE: turns the rest of a line around where it is shown."""
CHOICES = ("checkbox", "radio")
"""Input types a form sends only when checked."""
BUTTONS = ("submit", "button", "image", "reset", "file", *CHOICES)
"""Input types a form never sends empty (a button only when pressed, a file never here)."""
STALE_SECONDS = 60.0
"""The most a figure on a page may lag the labels."""


def parsed(html: str) -> lxml.html.HtmlElement:
    """The page as lxml reads it; an empty body as an empty page (lxml refuses to read one)."""
    return lxml.html.fromstring(html if html.strip() else "<html></html>")


def links(html: str) -> list[str]:
    """Every link's address on the page."""
    return [a.get("href") for a in parsed(html).iter("a") if a.get("href")]


@dataclass
class Form:
    """One HTML form as a browser would submit it unchanged."""

    action: str
    fields: list[tuple[str, str]]
    choices: list[tuple[str, str]]
    """Every checkbox and radio button (name, value), checked or not."""

    def data(self, **changes: str | list[str]) -> list[tuple[str, str]]:
        """The fields as drawn, those named in ``changes`` replaced (a list: one per value)."""
        kept = [(name, value) for name, value in self.fields if name not in changes]
        for name, value in changes.items():
            kept += [(name, v) for v in (value if isinstance(value, list) else [value])]
        return kept


def form(html: str, wanted: str) -> Form | None:
    """The page's first form whose id is ``wanted`` or whose action contains it, with what a
    browser sends: lxml's ``form_values`` (checked boxes, selected options, no disabled
    control), a text input without a value sent empty, a textarea's first newline dropped."""
    for found in parsed(html).forms:
        action = found.get("action") or ""
        if found.get("id") != wanted and wanted not in action:
            continue
        controls = [c for c in found.inputs if c.name and "disabled" not in c.attrib]
        inputs = [c for c in controls if c.tag == "input"]
        texts = {c.name for c in controls if c.tag == "textarea"}
        fields = [(n, v.removeprefix("\n") if n in texts else v) for n, v in found.form_values()]
        fields += [(c.name, "") for c in inputs if c.type not in BUTTONS and c.get("value") is None]
        choices = [(c.name, c.get("value") or "on") for c in inputs if c.type in CHOICES]
        return Form(action, fields, choices)
    return None


def multipart(fields: list[tuple[str, str]]) -> list[tuple[str, tuple[None, str]]]:
    """Form fields as a browser sends a ``multipart/form-data`` form (no file in it)."""
    return [(name, (None, value)) for name, value in fields]


def messages(html: str) -> list[tuple[str, str]]:
    """The page's flashed messages as (level, text)."""
    found = re.findall(r'<li class="(\w+)">(.*?)</li>', html.split('class="messages"', 1)[-1])
    return [(level, unescape(re.sub("<[^>]+>", "", text))) for level, text in found]


def element(html: str, element_id: str) -> str | None:
    """The text of the element with this id (no nested element of the same tag)."""
    match = re.search(rf'id="{element_id}"[^>]*>(.*?)</', html, re.S)
    return unescape(re.sub("<[^>]+>", "", match.group(1))).strip() if match else None


def number(html: str, element_id: str) -> int | None:
    text = element(html, element_id)
    return int(text.replace(",", "")) if text and text.replace(",", "").isdigit() else None


@dataclass
class Findings:
    """What the probes found on the app at ``base``, through which they send their requests."""

    base: str
    requests: int = 0
    server_errors: list[str] = field(default_factory=list)
    false_successes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    """Checks that failed otherwise: a wrong refusal, a stale figure, a limit not reached."""
    passed: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    """What the passed checks measured (counts, lags, times), for the report."""
    figure_lags: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def check(self, what: str, response: requests.Response) -> requests.Response:
        with self.lock:
            self.requests += 1 + len(response.history)
            if response.status_code >= 500:
                self.server_errors.append(f"{response.status_code} {what}")
        return response

    def get(self, session: requests.Session, path: str, what: str = "", **kwargs):
        """GET ``path`` as ``session``, checked as ``what`` (``GET path`` by default)."""
        return self.check(what or f"GET {path}", session.get(urljoin(self.base, path), **kwargs))

    def post(self, session: requests.Session, path: str, what: str = "", **kwargs):
        """POST to ``path`` as ``session``, checked as ``what`` (``POST path`` by default)."""
        answer = session.post(urljoin(self.base, path), **kwargs)
        return self.check(what or f"POST {path}", answer)

    def check_all(self, what: str, responses: list[requests.Response]) -> list:
        """:meth:`check` each of ``responses`` (answers of one kind); them."""
        for response in responses:
            self.check(what, response)
        return responses

    def verdict(self, ok: bool, what: str, kind: str = "failures", fact: bool = False) -> bool:
        """Record one check: passed, or failed as ``kind`` (failures or false_successes);
        ``fact``: ``what`` states what was measured, worth reporting when it passed too."""
        with self.lock:
            (self.passed if ok else getattr(self, kind)).append(what)
            if ok and fact:
                self.facts.append(what)
        return ok

    def report(self) -> dict:
        return {
            "requests": self.requests,
            "server_errors": self.server_errors,
            "false_successes": self.false_successes,
            "failures": self.failures,
            "passed": len(self.passed),
            "facts": self.facts,
            "figure_lag_max_s": max(self.figure_lags, default=None),
        }


def plain_cookies(response: requests.Response, *args, **kwargs) -> requests.Response:
    """Take ``Secure`` off the cookies a response sets, before the session stores them: the
    probe stands in for the TLS proxy in front of a deployment (``DJANGO_DEBUG=0`` marks the
    session, CSRF and message cookies Secure, which a client keeps off plain http)."""
    original = getattr(response.raw, "_original_response", None)
    headers = getattr(original, "msg", None)
    cookies = headers.get_all("Set-Cookie") if headers is not None else None
    if cookies:
        del headers["Set-Cookie"]
        for cookie in cookies:
            headers["Set-Cookie"] = re.sub(r";\s*Secure(?=;|$)", "", cookie, flags=re.I)
    return response


def browser() -> requests.Session:
    """A client session as a browser keeps one: Secure cookies over loopback, and a GET sent
    again on a new connection when a kept-alive one turns out closed (gunicorn closes one
    after a 413 that left the body unread, without saying so; a POST is never sent twice)."""
    session = requests.Session()
    session.hooks["response"].append(plain_cookies)
    session.mount("http://", HTTPAdapter(max_retries=Retry(total=1, connect=1, read=1, status=0)))
    return session


def login(base: str, user: str, password: str, must: bool = True) -> requests.Session | None:
    session = browser()
    page = session.get(urljoin(base, "/login/"), timeout=30)
    answer = session.post(
        urljoin(base, "/login/"),
        data={"username": user, "password": password, "csrfmiddlewaretoken": csrf(session)},
        headers={"Referer": page.url},
        timeout=30,
    )
    if "sessionid" not in session.cookies:
        if must:
            sys.exit(f"could not log in as {user} ({answer.status_code}); run `make run` first")
        return None
    session.headers["X-CSRFToken"] = csrf(session)
    session.headers["Referer"] = base
    return session


def listed(answer: requests.Response) -> list[dict]:
    """The rows of an API list answer, paginated or not (none for a failed request)."""
    rows = answer.json() if answer.ok else []
    return rows.get("results", rows) if isinstance(rows, dict) else rows


def csrf(session: requests.Session) -> str:
    return session.cookies.get("csrftoken") or ""


def submission(pair: object, label: str = "relevant", seconds: int = 4) -> dict:
    """A submit's body, with a uuid of its own."""
    return {"pair": pair, "label": label, "uuid": str(uuid.uuid4()), "seconds": seconds}


def current(answer: requests.Response) -> dict:
    """The task a judging answer hands out (none for a failed request)."""
    return (answer.json() if answer.ok else {}).get("current") or {}


def job_of(answer: requests.Response) -> int | None:
    """The job a redirect leads to."""
    match = re.search(r"/jobs/(\d+)/", answer.headers.get("Location", ""))
    return int(match.group(1)) if match else None


def parallel(calls: list[Callable[[], requests.Response]], width: int = 8) -> list:
    """Run the calls ``width`` at a time, the first ``width`` lined up by a barrier (Django's
    development server queues at most 10 connections and resets the rest); their answers in
    order."""
    width = min(width, len(calls))
    barrier = threading.Barrier(width)

    def run(call):
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=5)
        return call()

    with ThreadPoolExecutor(width) as pool:
        return list(pool.map(run, calls))


def crawl(session: requests.Session, who: str, found: Findings, limit: int) -> None:
    seen, frontier = set(), ["/"]
    for _depth in range(3):
        following = []
        for path in frontier:
            if path in seen or len(seen) >= limit:
                continue
            seen.add(path)
            response = found.get(session, path, f"{who} GET {path}", timeout=60)
            if response.status_code == 405:
                found.verdict(False, f"{who}: a link leads to a POST-only view: GET {path} 405")
            if "html" not in response.headers.get("Content-Type", ""):
                continue
            for href in links(response.text):
                url = urlsplit(urljoin(response.url, href))
                if url.netloc == urlsplit(found.base).netloc and not SKIP.search(url.path):
                    following.append(url.path + (f"?{url.query}" if url.query else ""))
        frontier = following
    print(f"  {who}: {len(seen)} pages crawled")


def hostile_names(admin: requests.Session, found: Findings) -> None:
    run_file = "\n".join(f"q{i} Q0 v{i} 1 1.0 probe" for i in range(3)).encode()
    for name in HOSTILE_NAMES:
        answer = found.post(
            admin,
            f"/api/datasets/{DATASET}/runs/",
            f"upload run {name!r}",
            data={"name": name, "format": "trec"},
            files={"file": ("run.txt", io.BytesIO(run_file))},
            timeout=60,
        )
        if answer.status_code < 300:
            found.false_successes.append(f"run named {name!r} accepted ({answer.status_code})")
    for path in ["/", "/datasets/", f"/datasets/{DATASET}/"]:
        found.get(admin, path, f"admin GET {path} after hostile uploads")


def judging(annotator: requests.Session, found: Findings) -> str | None:
    """Impossible ids and a retried submit with another label; returns a served video's URL."""
    rows = listed(found.get(annotator, "/api/campaigns/", timeout=30))
    if not rows:
        print("  no campaign open to the annotator: judging probes skipped")
        return None
    api = f"/api/campaigns/{rows[0]['id']}/"
    for value in IMPOSSIBLE:
        body = submission(value, seconds=2)
        found.post(annotator, api + "submit/", f"submit pair={value}", json=body)
        found.post(annotator, api + "escalate/", f"escalate pair={value}", json=body)
    for value in IMPOSSIBLE:
        found.get(annotator, f"/api/campaigns/{value}/next/", f"campaign id {value}")
    task = current(found.post(annotator, api + "next/", "next", json={}))
    if task.get("pair"):
        first = submission(task["pair"], seconds=2)
        found.post(annotator, api + "submit/", "submit", json=first)
        retry = {**first, "label": "irrelevant"}
        again = found.post(annotator, api + "submit/", "retry with another label", json=retry)
        if again.status_code != 409:
            found.false_successes.append(f"retried uuid with another label: {again.status_code}")
    return task.get("video_url")


def ranges(session: requests.Session, video: str | None, found: Findings) -> None:
    if not video:
        print("  no video served: range probes skipped")
        return
    for header in ["bytes=1_0-2_0", "bytes=+1-+5", "bytes=\u0661-\u0662", "bytes=0-1"]:
        answer = found.get(session, video, f"Range {header!r}", headers={"Range": header.encode()})
        if header != "bytes=0-1" and answer.status_code == 206:
            found.false_successes.append(f"non-digit range {header!r} honoured")


@dataclass
class Target:
    """The demo campaign the checks judge in, and the probe's own objects."""

    base: str
    admin: requests.Session
    campaign: dict
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    annotator: requests.Session | None = None
    username: str = ""
    password: str = ""
    annotator_id: int | None = None

    def url(self, path: str) -> str:
        return urljoin(self.base, path)

    @property
    def page(self) -> str:
        return f"/campaigns/{self.campaign['id']}/"

    @property
    def api(self) -> str:
        return self.url(f"/api/campaigns/{self.campaign['id']}/")


def active_campaign(admin: requests.Session, found: Findings) -> dict | None:
    rows = listed(found.get(admin, "/api/campaigns/", "admin GET /api/campaigns/"))
    active = [row for row in rows if row.get("status") == "active"]
    return next((r for r in active if r["name"] == "demo-campaign"), active[0] if active else None)


# --- Accounts and free text ------------------------------------------------------------------


def case_accounts(t: Target, found: Findings, variants: int = 5) -> None:
    """Parallel "add annotator" with names differing only in case: one account, no 5xx. The
    one made is the probe's annotator for the checks after this one."""
    stem = f"probe-case-{t.tag}"
    names = [
        "".join(c.upper() if (i >> k) % 2 else c for k, c in enumerate(stem))
        for i in range(variants)
    ]
    admins = [login(t.base, "admin", ROLES["admin"]) for _ in names]
    path = f"{t.page}annotators/add/"

    def add(session, name):
        return lambda: session.post(
            t.url(path),
            data={"username": name, "email": "", "csrfmiddlewaretoken": csrf(session)},
            allow_redirects=False,
            timeout=60,
        )

    answers = parallel([add(s, n) for s, n in zip(admins, names, strict=True)])
    for name, answer in zip(names, answers, strict=True):
        found.check(f"POST {path} username={name}", answer)
    made = [(s, n) for s, n, a in zip(admins, names, answers, strict=True) if a.status_code == 302]
    codes = sorted(a.status_code for a in answers)
    found.verdict(
        len(made) <= 1,
        f"{len(names)} parallel 'add annotator' with names differing only in case made "
        f"{len(made)} accounts (answers {codes})",
        "false_successes",
        fact=True,
    )
    found.verdict(len(made) >= 1, f"no account made of {names} (answers {codes})")
    if not made:
        return
    session, name = made[0]
    shown = found.get(session, f"{t.page}annotators/made/", "GET the made account")
    t.username = element(shown.text, "new-username") or ""
    t.password = element(shown.text, "new-password") or ""
    t.annotator = login(t.base, t.username, t.password, must=False)
    found.verdict(t.annotator is not None, f"the made account {name!r} cannot log in")
    people = t.admin.get(t.url(f"{t.page}annotators/")).text
    row = re.search(rf'data-annotator="{re.escape(t.username)}".*?</tr>', people, re.S)
    action = re.search(r"/annotators/(\d+)/", row.group(0)) if row else None
    t.annotator_id = int(action.group(1)) if action else None


def token_name(t: Target, researcher: requests.Session, found: Findings) -> None:
    """A token name with U+202E is refused, and no token is made."""
    name = f"probe{RLO}{t.tag}"
    data = {"name": name, "csrfmiddlewaretoken": csrf(researcher)}
    answer = found.post(
        researcher, "/account/tokens/", "POST /account/tokens/ name with U+202E", data=data
    )
    made = answer.status_code < 400 or 'id="token-key"' in answer.text
    found.verdict(not made, f"token named {name!r} made ({answer.status_code})", "false_successes")
    revoke = form(answer.text, "/revoke/") if made else None
    if revoke is not None:  # take back what the bug made
        researcher.post(t.url(revoke.action), data=revoke.data())


# --- Figures -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    """What the campaign page says about its labels and its stored figures."""

    in_all: int | None
    today: int | None
    computed_at: float | None
    current: bool


def figures(t: Target, found: Findings) -> Figures:
    html = found.get(t.admin, t.page, timeout=60).text
    stamp = re.search(r'id="live-figures" data-computed-at="([^"]+)"', html)
    computed = datetime.fromisoformat(stamp.group(1)).timestamp() if stamp else None
    return Figures(
        in_all=number(html, "progress-spent"),
        today=number(html, "progress-today"),
        computed_at=computed,
        current="from the labels as they are now" in html,
    )


def figure_lag(
    t: Target, found: Findings, event: str, moment: float, labels: int | None, limit: float
) -> None:
    """Poll the campaign page until its figures are at least as new as ``moment`` (and it
    counts ``labels`` in all, when given); record the lag, a failure past STALE_SECONDS."""
    while True:
        seen = figures(t, found)
        lag = time.time() - moment
        fresh = seen.current or (seen.computed_at or 0) >= moment
        caught = fresh and (labels is None or seen.in_all == labels)
        if caught or lag > limit:
            break
        time.sleep(1.0)
    found.figure_lags.append(lag)
    found.verdict(
        caught,
        f"figures caught up with {event} in {lag:.1f} s"
        if caught
        else f"figures still behind {lag:.0f} s after {event}: page says {seen.in_all} "
        f"labels in all (expected {labels}), figures computed "
        f"{time.time() - (seen.computed_at or 0):.0f} s ago",
        fact=True,
    )
    found.verdict(
        seen.today is None or seen.in_all is None or seen.today <= seen.in_all,
        f"campaign page: {seen.today} labels today beside {seen.in_all} in all",
    )


def judge(t: Target, found: Findings, n: int) -> int:
    """Submit up to ``n`` labels as the probe's annotator; how many were acknowledged."""
    answer = found.post(t.annotator, t.api + "next/", "probe annotator next", json={})
    done = 0
    for i in range(n):
        pair = current(answer).get("pair")
        if not pair:
            break
        body = submission(pair, "relevant" if i % 2 else "irrelevant")
        answer = found.post(t.annotator, t.api + "submit/", "probe annotator submit", json=body)
        done += bool(answer.ok and answer.json().get("created"))
    return done


def labels_follow(t: Target, found: Findings, n: int, limit: float) -> None:
    """Labels submitted through the judging API reach the campaign page within the limit."""
    before = figures(t, found)
    done = judge(t, found, n)
    found.verdict(done > 0, f"the probe annotator could judge nothing (of {n})")
    if done and before.in_all is not None:
        figure_lag(t, found, f"{done} labels", time.time(), before.in_all + done, limit)


def compute_now(t: Target, found: Findings, presses: int = 10) -> None:
    """The "compute them now" control: a POST answered with a page; ten at once, one job."""
    start = "/jobs/start/campaign-figures/"
    page = t.admin.get(t.url(t.page)).text
    found.verdict(
        not any("/jobs/start/" in href for href in links(page)),
        f"{t.page} links (GET) to a POST-only job start",
    )
    data = {"campaign": t.campaign["name"], "csrfmiddlewaretoken": csrf(t.admin)}
    one = found.post(t.admin, start, data=data, timeout=60)
    found.verdict(
        one.status_code == 200 and "html" in one.headers.get("Content-Type", ""),
        f"POST {start} answered {one.status_code}, not a page",
    )
    press = partial(t.admin.post, t.url(start), data=data, allow_redirects=False, timeout=60)
    answers = found.check_all(f"POST {start} x{presses}", parallel([press] * presses))
    jobs = {job_of(answer) for answer in answers} - {None}
    times = {job: job_times(t, job) for job in sorted(jobs)}
    overlapping = [
        (a, b)
        for a, b in itertools.pairwise(sorted(jobs))
        if times[a][1] is None or times[b][0] < times[a][1]
    ]
    found.verdict(
        bool(jobs) and not overlapping,
        f"{presses} parallel POSTs {start} gave {len(jobs)} jobs, "
        f"{len(overlapping)} queued while another was unfinished: {times}",
        fact=True,
    )


def job_times(t: Target, job: int) -> tuple[str, str | None]:
    """When a job was queued and when it finished (None: not yet), to the second."""
    page = t.admin.get(t.url(f"/jobs/{job}/")).text
    stamps = {
        row: re.search(rf"<th>{row}</th><td>([0-9-]+ [0-9:]+)", page)
        for row in ("Queued", "Finished")
    }
    return stamps["Queued"].group(1), stamps["Finished"].group(1) if stamps["Finished"] else None


# --- Pauses and promotion ------------------------------------------------------------------


def annotator_action(t: Target, action: str, **data: str) -> requests.Response:
    path = f"{t.page}annotators/{t.annotator_id}/{action}/"
    return t.admin.post(t.url(path), data={**data, "csrfmiddlewaretoken": csrf(t.admin)})


def is_paused(t: Target) -> bool:
    people = t.admin.get(t.url(f"{t.page}annotators/")).text
    row = re.search(rf'<tr[^>]*data-annotator="{re.escape(t.username)}"', people)
    return bool(row and "paused" in row.group(0))


def paused_refused(t: Target, found: Findings) -> None:
    """A paused annotator's submit, undo and escalate are refused (409) and counted nowhere;
    a pause reason with U+202E is refused."""
    held = found.post(t.annotator, t.api + "next/", "next before the pause", json={})
    judged_pair = current(held).get("pair")
    body = submission(judged_pair)
    held = found.post(t.annotator, t.api + "submit/", "submit before the pause", json=body)
    pair = current(held).get("pair")
    judged = t.annotator.get(t.api + "progress/").json().get("judged_total")
    found.check("pause, reason with U+202E", annotator_action(t, "pause", reason=f"x{RLO}y"))
    found.verdict(not is_paused(t), "a pause reason with U+202E was accepted", "false_successes")
    if is_paused(t):
        annotator_action(t, "reinstate")
    found.check("pause", annotator_action(t, "pause", reason=f"probe {t.tag}"))
    if not found.verdict(is_paused(t), "the pause did not take"):
        return
    before = figures(t, found).in_all
    refused = {  # the pair leased before the pause; the one just judged (escalate, undo)
        "submit": submission(pair),
        "escalate": {"pair": judged_pair, "reason": "probe", "uuid": str(uuid.uuid4())},
        "undo": {},
    }
    for action, body in refused.items():
        answer = found.post(t.annotator, t.api + f"{action}/", f"paused {action}", json=body)
        found.verdict(
            answer.status_code == 409,
            f"a paused annotator's {action} answered {answer.status_code} "
            f"(body {answer.text[:120]!r})",
            "false_successes" if answer.ok else "failures",
            fact=True,
        )
    after = t.annotator.get(t.api + "progress/").json().get("judged_total")
    found.verdict(
        after == judged and figures(t, found).in_all == before,
        f"a paused annotator's refused answers were counted: judged {judged} -> {after}, "
        f"labels in all {before} -> {figures(t, found).in_all}",
    )
    found.check("reinstate", annotator_action(t, "reinstate"))
    found.verdict(not is_paused(t), "reinstating did not take")


def promote_refused(t: Target, found: Findings) -> None:
    """Promoting every decided pair needs the confirmed count; promoting nothing is no success."""
    path = f"{t.page}gold/promote-decided/"
    page = found.get(t.admin, path).text
    shown = re.search(r'name="expected" value="(\d+)"', page)
    count = int(shown.group(1)) if shown else 0
    tries = {"without the count": {}, f"with {count + 1} for {count}": {"expected": count + 1}}
    if count == 0:
        tries["of nothing, confirmed"] = {"expected": 0}
    for what, extra in tries.items():
        data = {"csrfmiddlewaretoken": csrf(t.admin), "explanation": "probe", **extra}
        answer = found.post(t.admin, path, f"POST {path} {what}", data=data)
        said = messages(answer.text)
        success = answer.history or any(level == "success" for level, _ in said)
        found.verdict(
            not success and answer.status_code in (400, 409),
            f"promote every decided pair {what}: {answer.status_code} {said}",
            "false_successes" if success else "failures",
            fact=True,
        )
    data = {"csrfmiddlewaretoken": csrf(t.admin), "all_decided": "on", "explanation": "probe"}
    promote = f"{t.page}gold/promote/"
    answer = found.post(t.admin, promote, "POST gold/promote/ all without count", data=data)
    found.verdict(
        answer.status_code == 400 and not answer.history,
        f"gold/promote/ of every decided pair without the count: {answer.status_code}",
        "false_successes",
    )


def discount_back(t: Target, found: Findings, limit: float) -> None:
    """Restore: discount the probe annotator's labels (confirming the count shown), then the
    figures must follow that too."""
    path = f"{t.page}annotators/{t.annotator_id}/discount/"
    page = found.get(t.admin, path).text
    confirm = form(page, path)
    if confirm is None:
        found.verdict(False, f"no confirmation form on {path}")
        return
    answer = found.post(t.admin, confirm.action, f"POST {path}", data=confirm.data())
    found.verdict(answer.ok and bool(answer.history), f"discount answered {answer.status_code}")
    figure_lag(t, found, "the discount", time.time(), None, limit)


# --- A campaign of the probe's own: sizes and guidelines -----------------------------------


def wait_for_job(t: Target, job: int, limit: float) -> str:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        state = t.admin.get(t.url(f"/jobs/{job}/status/")).json()
        if state.get("status") in ("succeeded", "failed"):
            return state["status"] + (f": {state.get('error')}" if state.get("error") else "")
        time.sleep(2)
    return "unfinished"


def own_campaign(t: Target, found: Findings, limit: float) -> dict | None:
    """Pool a small campaign of the probe's own from the demo dataset's first run."""
    path = f"/campaigns/new/?dataset={DATASET}"
    page = found.get(t.admin, path).text
    new = form(page, "campaign-form")
    runs = [value for name, value in (new.choices if new else []) if name == "runs"]
    if not runs:
        found.verdict(False, f"no run to pool on {path}")
        return None
    name = f"probe-{t.tag}"
    answer = found.post(
        t.admin,
        path,
        "POST /campaigns/new/",
        files=multipart(new.data(name=name, runs=runs[:1], depth="5")),
        allow_redirects=False,
    )
    job = job_of(answer)
    if not found.verdict(job is not None, f"pooling {name} answered {answer.status_code}"):
        return None
    state = wait_for_job(t, job, limit)
    if not found.verdict(state == "succeeded", f"pooling {name}: job {job} {state}"):
        return None
    rows = listed(t.admin.get(t.url("/api/campaigns/")))
    return next((row for row in rows if row["name"] == name), None)


def guidelines(t: Target, own: dict, found: Findings) -> None:
    """Guidelines refuse U+202E, and a 10 MB text gets a readable error with the limit."""
    path = f"/campaigns/{own['id']}/edit/"
    edit = form(found.get(t.admin, path).text, "campaign-form")
    if edit is None:
        found.verdict(False, f"no form on {path}")
        return
    for what, text in [("U+202E", f"Judge{RLO} carefully"), ("10 MB", "x" * 10_000_000)]:
        files = multipart(edit.data(guidelines=text))
        answer = found.post(
            t.admin, path, f"POST {path} guidelines {what}", files=files, allow_redirects=False
        )
        found.verdict(answer.status_code >= 400, f"guidelines of {what} saved", "false_successes")
        errors = re.findall(r'class="error"[^>]*>(.*?)</p>', answer.text, re.S)
        words = " ".join(unescape(re.sub(r"<[^>]+>|\s+", " ", e)).strip() for e in errors)
        readable = bool(words) and answer.status_code in (400, 413)
        found.verdict(
            readable,
            f"guidelines of {what}: {answer.status_code} "
            + (repr(words[:160]) if words else f"no error shown: {answer.text[:80]!r}"),
            fact=True,
        )


def gold_file(t: Target, found: Findings, rows: int) -> bytes | None:
    """A gold file of ``rows`` pairs of the demo dataset (keys from the demo campaign's export)."""
    export = found.get(t.admin, f"{t.page}export/csv/", "GET demo export csv", timeout=120)
    read = list(csv.DictReader(io.StringIO(export.text)))
    captions = sorted({row["caption_key"] for row in read})
    videos = sorted({row["video_key"] for row in read})
    pairs = list(itertools.islice(itertools.product(captions, videos), rows))
    if not found.verdict(
        len(pairs) == rows, f"only {len(pairs)} caption-video pairs for a gold file of {rows}"
    ):
        return None
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["caption_key", "video_key", "label", "explanation"])
    for i, (caption, video) in enumerate(pairs):
        writer.writerow([caption, video, "relevant" if i % 7 == 0 else "irrelevant", "probe"])
    return out.getvalue().encode()


def big_gold(t: Target, own: dict, found: Findings, rows: int, limit: float) -> None:
    """A gold file of ``rows`` rows imports (at once, or as a job) with no 5xx."""
    content = gold_file(t, found, rows)
    if content is None:
        return
    path = f"/campaigns/{own['id']}/gold/import/"
    began = time.perf_counter()
    answer = found.post(
        t.admin,
        path,
        f"POST {path} {rows} rows",
        data={"csrfmiddlewaretoken": csrf(t.admin)},
        files={"file": ("gold.csv", content)},
        allow_redirects=False,
        timeout=600,
    )
    job = job_of(answer)
    state = wait_for_job(t, job, limit) if job else None
    landed = t.admin.get(t.url(answer.headers.get("Location", path)))
    said = messages(landed.text) if not job else [("job", state)]
    found.verdict(
        answer.status_code == 302 and (state is None or state == "succeeded"),
        f"gold file of {rows} rows: {answer.status_code} {said} "
        f"({time.perf_counter() - began:.1f} s)",
        fact=True,
    )


def close(t: Target, own: dict, found: Findings) -> None:
    path = f"/campaigns/{own['id']}/status/"
    data = {"action": "close", "csrfmiddlewaretoken": csrf(t.admin)}
    found.post(t.admin, path, f"POST {path} close", data=data)


# --- Sessions and limits across workers ----------------------------------------------------


def stranger(base: str, cookies: dict, method: str, path: str, **kwargs) -> requests.Response:
    """One request on a new connection (so any worker may answer) with these cookies."""
    headers = {"X-CSRFToken": cookies.get("csrftoken", ""), "Referer": base, "Connection": "close"}
    return requests.request(
        method, urljoin(base, path), cookies=cookies, headers=headers, timeout=30, **kwargs
    )


def logout_everywhere(t: Target, found: Findings, rounds: int) -> None:
    """After ``POST /logout/`` the old cookie is refused by every worker: ``rounds`` requests
    at once before and after, each on a new connection, so every worker has read the session
    before and is asked after."""
    user = t.username or "annotator1"
    session = login(t.base, user, t.password or ROLES["annotator1"])
    cookies = {"sessionid": session.cookies["sessionid"], "csrftoken": csrf(session)}
    listing = partial(stranger, t.base, cookies, "GET", "/api/campaigns/")
    before = found.check_all("old cookie before logout", parallel([listing] * rounds))
    if not found.verdict(
        all(a.status_code == 200 for a in before),
        f"the session was not accepted before logout: {[a.status_code for a in before]}",
    ):
        return
    out = found.post(session, "/logout/", data={"csrfmiddlewaretoken": csrf(session)})
    found.verdict(out.ok, f"POST /logout/ answered {out.status_code}")
    leasing = partial(
        stranger, t.base, cookies, "POST", f"/api/campaigns/{t.campaign['id']}/next/", json={}
    )
    after = parallel([listing] * rounds) + parallel([leasing] * (rounds // 2))
    found.check_all("old cookie after logout", after)
    accepted = sum(a.status_code == 200 for a in after)
    found.verdict(
        accepted == 0,
        f"after POST /logout/ the old session cookie was accepted {accepted} of {len(after)} "
        "times (GET /api/campaigns/, POST next/)",
        "false_successes",
        fact=True,
    )


def login_limit(t: Target, found: Findings, limit: int, tries: int) -> None:
    """``tries`` parallel wrong passwords for the probe's account get exactly ``limit``
    answers that are not 429, and the right password afterwards is refused too."""
    if not t.username:
        return
    sessions = [browser() for _ in range(tries)]
    for session in sessions:
        session.get(t.url("/login/"))

    def attempt(session, password):
        data = {"username": t.username, "password": password, "csrfmiddlewaretoken": csrf(session)}
        return lambda: session.post(t.url("/login/"), data=data, allow_redirects=False)

    answers = parallel([attempt(s, f"wrong-{i}") for i, s in enumerate(sessions)])
    found.check_all("wrong password", answers)
    tried = sum(a.status_code != 429 for a in answers)
    found.verdict(
        tried <= limit,
        f"{tries} parallel wrong passwords: {tried} tried, limit {limit}",
        "false_successes",
        fact=True,
    )
    found.verdict(tried >= limit, f"{tries} parallel wrong passwords: only {tried} tried")
    right = login(t.base, t.username, t.password, must=False)
    found.verdict(
        right is None, "the right password was accepted after the limit", "false_successes"
    )


def upload_limit(t: Target, researcher: requests.Session, found: Findings, limit: int) -> None:
    """``limit + 6`` parallel run uploads (malformed: nothing is made) by one user: at most
    ``limit`` are let through to the parser, the rest are refused (429)."""
    path = f"/api/datasets/{DATASET}/runs/"

    def upload(i):
        return lambda: researcher.post(
            t.url(path),
            data={"name": f"probe-limit-{t.tag}-{i}"},
            files={"run": ("run.txt", b"not a run\n")},
            timeout=60,
        )

    answers = found.check_all(
        f"POST {path} (limit)", parallel([upload(i) for i in range(limit + 6)])
    )
    through = sum(a.status_code != 429 for a in answers)
    made = sum(a.status_code < 300 for a in answers)
    found.verdict(
        through <= limit and made == 0,
        f"{limit + 6} parallel run uploads: {through} let through (limit {limit}), {made} made",
        "false_successes",
        fact=True,
    )


def sizes(t: Target, found: Findings, args) -> None:
    """A campaign of the probe's own: its guidelines' limits and a big gold file, then closed."""
    own = own_campaign(t, found, args.wait)
    if own is None:
        return
    try:
        guidelines(t, own, found)
        big_gold(t, own, found, args.gold_rows, args.wait)
    finally:
        close(t, own, found)


def main() -> int:
    options = parser(__doc__, paragraph=True)
    options.add_argument("--base", default="http://127.0.0.1:8000")
    options.add_argument("--pages", type=int, default=150, help="most pages crawled per role")
    options.add_argument("--labels", type=int, default=6, help="labels the lag is measured on")
    options.add_argument("--gold-rows", type=int, default=22_000)
    options.add_argument("--login-limit", type=int, default=5, help="the server's per-user limit")
    options.add_argument("--upload-limit", type=int, default=30, help="run uploads per user")
    options.add_argument("--rounds", type=int, default=16, help="requests per logout check")
    options.add_argument("--wait", type=float, default=600.0, help="most seconds per job")
    options.add_argument("--format", choices=["text", "json"], default="text")
    args = options.parse_args()
    host = urlsplit(args.base).hostname or ""
    if not (host.startswith("127.") or host in {"localhost", "::1"}):
        sys.exit("probes go to loopback addresses only")
    found = Findings(args.base)
    sessions = {who: login(args.base, who, password) for who, password in ROLES.items()}
    for who, session in sessions.items():
        crawl(session, who, found, args.pages)
    hostile_names(sessions["admin"], found)
    video = judging(sessions["annotator1"], found)
    ranges(sessions["annotator1"], video, found)
    campaign = active_campaign(sessions["admin"], found)
    if campaign is None:
        found.verdict(False, "no active campaign: the campaign checks did not run")
    else:
        t = Target(args.base, sessions["admin"], campaign)
        steps = [
            ("accounts", lambda: case_accounts(t, found)),
            ("token name", lambda: token_name(t, sessions["researcher"], found)),
            ("labels follow", lambda: labels_follow(t, found, args.labels, STALE_SECONDS + 30)),
            ("compute now", lambda: compute_now(t, found)),
            ("paused", lambda: paused_refused(t, found)),
            ("promote", lambda: promote_refused(t, found)),
            ("discount back", lambda: discount_back(t, found, STALE_SECONDS + 30)),
            ("own campaign", lambda: sizes(t, found, args)),
            ("logout", lambda: logout_everywhere(t, found, args.rounds)),
            ("uploads", lambda: upload_limit(t, sessions["researcher"], found, args.upload_limit)),
            ("logins", lambda: login_limit(t, found, args.login_limit, args.login_limit * 2)),
        ]
        for name, step in steps:
            needs_annotator = name in {"labels follow", "paused", "discount back"}
            if needs_annotator and (t.annotator is None or t.annotator_id is None):
                found.verdict(False, f"{name}: skipped, no probe annotator")
                continue
            began = time.perf_counter()
            try:
                step()
            except requests.RequestException as exc:  # a reset or a timeout: no answer at all
                found.verdict(False, f"{name}: no answer: {exc!r}"[:300])
            print(f"  {name}: {time.perf_counter() - began:.1f} s", flush=True)
    summary = found.report()
    if args.format == "json":
        print(json.dumps(summary, indent=2))
    else:
        lag = summary["figure_lag_max_s"]
        print(
            f"{found.requests} requests, {len(found.server_errors)} 5xx, "
            f"{len(found.false_successes)} false successes, {len(found.failures)} other "
            f"failures, {summary['passed']} checks passed, figure lag max "
            + (f"{lag:.1f} s" if lag is not None else "not measured")
        )
        for kind in ("server_errors", "false_successes", "failures"):
            for line in summary[kind]:
                print(f"  {kind}: {line}")
        for line in found.facts:
            print(f"  measured: {line}")
    return 1 if found.server_errors or found.false_successes or found.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
