"""Many annotators judging one big campaign through gunicorn and PostgreSQL, with a crash.

A fresh database (``firepool_loadbench``) holds one campaign of ``--pairs`` pairs and
``--annotators`` logged-in accounts (``bench/world.py``), served by ``gunicorn --preload`` as
deployed (``DJANGO_DEBUG=0``, persistent connections, prepared statements unless
``--no-prepared``). Each annotator is an aiohttp task that thinks ``--think-ms`` (0.5x-1.5x)
and submits with a fresh UUID, retried with the same UUID until a 200 names it; ``--crash``
SIGKILLs gunicorn halfway with submits in flight. Afterwards ``lost`` counts acknowledged
UUIDs missing and ``duplicated`` repeats and labels past the policy; stdout's last line is one
JSON object, diagnostics go to stderr. ``--viewers N`` adds annotators streaming a 1080p clip
(through gunicorn or, with ``--media-server nginx``, nginx in front of everything). Targets:
p99 <= 50 ms, nothing lost or duplicated. Anchors: Label Studio needs over 15 s to count tasks
past 10,000 (HumanSignal/label-studio #9637); doccano freezes with 5-6 users
(doccano/doccano #2304)::

    .venv/bin/python bench/load.py [--annotators 100] [--seconds 60] [--pairs 600000] [--crash]
        [--viewers 100 --media-server nginx]
"""

import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import world
from harness import (
    ROOT,
    drop_database,
    free_port,
    log,
    parser,
    percentiles,
    postgres_database,
    setup_django,
    start_group,
    stop_groups,
    wait_until_up,
)

from tests.nginx_support import Nginx

DB_NAME = "firepool_loadbench"
DEPTH = 10  # pairs per query caption (the campaign's pooling depth)
RELEVANT_SHARE = 0.3
TARGET_P99_MS = 50.0
TARGET_FIGURES_LAG_S = 60.0
CRASH_IN_FLIGHT = 3  # unanswered submits the crash waits for
RECOVERY_WINDOW_S = 10.0  # after a crash: left out of p99_ms_outside_recovery
CLIP_BIT_RATE = 6_000_000  # bits/s of the 1080p clip, what streaming sites use for H.264
READ_AHEAD_SECONDS = 2.0  # video a viewer reads at once before settling to the clip's rate
KEEP_ALIVE_SECONDS = 5  # gunicorn's --keep-alive (threaded workers keep idle connections)
WORKER_PRIORITY = {"same": [], "nice": ["nice", "-n", "10"], "idle": ["chrt", "--idle", "0"]}
"""How the job workers run beside gunicorn: at its priority, niced, or SCHED_IDLE."""


def server_environment(database_url: str, prepared: bool, debug: bool) -> dict[str, str]:
    """Environment of both this process and gunicorn (same secret key: sessions must verify);
    ``prepared``: server-side binding and prepared statements (the PostgreSQL default)."""
    return {
        "DATABASE_URL": database_url,
        "DATABASE_PREPARED": "1" if prepared else "0",
        "DATABASE_CONN_MAX_AGE": "600",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DEBUG": "1" if debug else "0",
        "DJANGO_SECRET_KEY": "firepool-load-bench-" + uuid.uuid4().hex,
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        # Jobs go to database queues that worker processes run, as the README deploys them.
        "FIREPOOL_TASKS_BACKEND": "database",
        "FIREPOOL_LIVE_QUEUE": "1",
    }


def build_world(args, annotators: int) -> tuple[int, int, list[tuple[int, str]]]:
    """One active campaign of ``--pairs`` pairs, ``annotators`` accounts with live sessions and
    200 gold pairs if asked; (campaign id, pairs, [(user id, session key)])."""
    from django.db import connection

    campaign, pair_pks = world.kitchen_campaign(
        "load",
        args.pairs,
        DEPTH,
        urls=True,
        lease_seconds=args.lease_seconds,
        judging_order=args.judging_order,
        label_policy=args.policy,
        confidence=getattr(args, "confidence", 0.95),
    )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    user_pks = world.annotators([f"load{i:04d}" for i in range(annotators)], "pw-load-annotator")
    keys = world.sessions(user_pks)
    if args.gold_rate > 0 or args.qualified:
        world.gold(campaign, 200, args.gold_rate, args.qualified)
    if args.qualified:
        world.admit(campaign, user_pks[: args.annotators])
    return campaign.pk, len(pair_pks), list(zip(user_pks.tolist(), keys, strict=True))


def make_clip(path: Path, seconds: float) -> None:
    """A 1080p 25 fps H.264 mp4 of ``seconds``: a moving random pattern at CLIP_BIT_RATE."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    tiles = rng.integers(0, 256, (1080 // 8, 1920 // 8, 3), dtype=np.uint8)
    pattern = np.kron(tiles, np.ones((8, 8, 1), dtype=np.uint8))
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 1920, 1080, "yuv420p"
        stream.bit_rate = CLIP_BIT_RATE
        stream.options = {"preset": "ultrafast"}
        for i in range(int(seconds * 25)):
            frame = av.VideoFrame.from_ndarray(np.roll(pattern, 7 * i, axis=1), format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode())  # what the encoder still holds


def add_media(media_root: Path, clips: int, seconds: float) -> list[tuple[str, int]]:
    """``clips`` copies of one 1080p clip as the media of campaign videos: (name, size)."""
    from annotation.models import Pair
    from retrieval.models import Video

    began = time.perf_counter()
    first = media_root / "load" / "clip0.mp4"
    make_clip(first, seconds)
    size = first.stat().st_size
    log(
        f"1080p clip: {seconds:.0f} s, {size / 1e6:.1f} MB ({size * 8 / seconds / 1e6:.1f} "
        f"Mbit/s), encoded in {time.perf_counter() - began:.1f} s; {clips} copies"
    )
    videos = sorted(set(Pair.objects.values_list("video_id", flat=True)[:1000]))[:clips]
    named = []
    for i, video in enumerate(videos):
        name = f"load/clip{i}.mp4"
        if i:
            shutil.copyfile(first, media_root / name)
        Video.objects.filter(pk=video).update(media=name)
        named.append((name, size))
    return named


def stat_cpu(fields: list[str]) -> float:
    """CPU seconds (user + system) of a /proc/PID/stat line's fields after the name."""
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_used(group: int) -> dict[str, float]:
    """CPU seconds used so far by gunicorn (process group ``group``), the database's backends,
    nginx and this client, and the whole machine's busy and total seconds since boot, from /proc
    (Linux). Diagnostics only."""
    used = {"gunicorn": 0.0, "postgres": 0.0, "nginx": 0.0}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[2]) == group:
            used["gunicorn"] += stat_cpu(fields)
        elif cmdline.startswith(b"postgres: ") and DB_NAME.encode() in cmdline:
            used["postgres"] += stat_cpu(fields)
        elif cmdline.startswith(b"nginx: "):
            used["nginx"] += stat_cpu(fields)
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    used["machine busy"] = (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
    used["machine total"] = sum(ticks) / os.sysconf("SC_CLK_TCK")
    used["client"] = time.process_time()
    return used


@dataclass
class Server:
    """A gunicorn process group serving the project on ``port``."""

    port: int
    workers: int
    threads: int
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen = field(init=False)

    def start(self) -> None:
        self.process = start_group(
            [
                *("-m", "gunicorn", "config.wsgi", "-w", str(self.workers)),
                *("--threads", str(self.threads), "-b", f"127.0.0.1:{self.port}"),
                *("--backlog", "2048"),
                *("--keep-alive", str(KEEP_ALIVE_SECONDS)),  # the README's (threaded workers)
                "--preload",  # import Django once in the master: workers fork ready
            ],
            self.env,
            self.log_path,
        )

    def kill(self) -> None:
        """SIGKILL the master and every worker at once: a crash, nothing shuts down cleanly."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        stop_groups([self.process], timeout=20)


@dataclass
class Record:
    """What the clients saw: latencies, acknowledged judgements and failures."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    acknowledged: list[tuple[str, int, str]] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    failures: int = 0
    retries: int = 0
    submitting: int = 0
    """Submits sent and not yet answered, now."""
    first_ok_after_crash: float | None = None
    crash_at: float | None = None
    finished: list[tuple[float, float]] = field(default_factory=list)
    """(monotonic time, ms) of every answered request: where the slow ones come from."""

    def answered(self, kind: str, ms: float, status: int) -> None:
        self.latencies[kind].append(ms)
        self.finished.append((time.monotonic(), ms))
        self.statuses[f"{kind} {status}"] += 1
        if status == 200 and self.crash_at is not None and self.first_ok_after_crash is None:
            self.first_ok_after_crash = time.monotonic()


class Unanswered(Exception):
    """The request got no HTTP answer, or a 5xx: the client must try again."""


async def request(http, record: Record, kind: str, method: str, url: str, **kwargs):
    """One timed request; (status, JSON body). Raises :class:`Unanswered` on failure."""
    import aiohttp

    began = time.perf_counter()
    try:
        async with http.request(method, url, **kwargs) as response:
            body = await response.json(content_type=None)
            status = response.status
    except (TimeoutError, aiohttp.ClientError, json.JSONDecodeError) as exc:
        record.failures += 1
        # Refused: the server was down; disconnected or reset: it died during the request.
        record.statuses[f"{kind} {type(exc).__name__}"] += 1
        raise Unanswered(str(exc)) from exc
    record.answered(kind, (time.perf_counter() - began) * 1000.0, status)
    if status >= 500:
        raise Unanswered(f"HTTP {status}")
    return status, body


async def annotate(
    http,
    record: Record,
    base: str,
    user_id: int,
    session_key: str,
    think_ms: float,
    end: float,
    judgements: int | None = None,
    one_request: bool = False,
    standing_s: float = 0.0,
) -> None:
    """One annotator until ``end`` (or ``judgements`` submits): next, think, submit with a
    fresh UUID; with ``one_request`` the task a submit answers with is judged next, and with
    ``standing_s`` ``GET standing/`` after that long without an answer (as the judging page)."""
    csrf = uuid.uuid4().hex
    headers = {"Cookie": f"sessionid={session_key}; csrftoken={csrf}", "X-CSRFToken": csrf}
    rng = random.Random(user_id)
    # Annotators start spread over one think time, as people do, not in one burst.
    await asyncio.sleep(rng.uniform(0.0, think_ms / 1000.0))
    heard = {"at": time.monotonic()}  # when the server last answered this annotator
    poller = None
    if standing_s > 0:
        poller = asyncio.create_task(
            poll_standing(http, record, base, headers, standing_s, end, heard)
        )

    async def answer(kind: str, **kwargs) -> tuple[int, dict] | None:
        """POST ``kind/`` until it is answered (None: the run ended first)."""
        backoff, submits = 0.05, int(kind == "submit")
        while time.monotonic() < end:
            record.submitting += submits
            try:
                answered = await request(
                    http, record, kind, "POST", f"{base}{kind}/", headers=headers, **kwargs
                )
            except Unanswered:
                record.submitting -= submits
                record.retries += submits
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
                continue
            record.submitting -= submits
            heard["at"] = time.monotonic()
            return answered
        return None

    try:
        following = None  # the next task a submit answered with (the judging page's one request)
        while time.monotonic() < end:
            current, following = following, None
            if current is None:
                answered = await answer("next")
                if answered is None:
                    return
                status, body = answered
                if status != 200:
                    raise RuntimeError(f"next/ answered {status}: {body}")
                current = body["current"]
                if current is None:
                    if body["finished"]:
                        return
                    await asyncio.sleep(0.2)
                    continue
            think = think_ms * rng.uniform(0.5, 1.5) / 1000.0
            if time.monotonic() + think >= end:
                return  # the run ends while this pair is on screen
            await asyncio.sleep(think)
            key = str(uuid.uuid4())
            label = "relevant" if rng.random() < RELEVANT_SHARE else "irrelevant"
            payload = {"pair": current["pair"], "label": label, "uuid": key, "seconds": 1.0}
            answered = await answer("submit", json=payload)
            if answered is not None and answered[0] == 200 and answered[1].get("judgement") == key:
                record.acknowledged.append((key, user_id, current["pair"]))
                if one_request:
                    following = answered[1].get("current")
            if judgements is not None:
                judgements -= 1
                if judgements <= 0:
                    return
    finally:
        if poller is not None:
            poller.cancel()


async def poll_standing(http, record, base, headers, every_s, end, heard) -> None:
    """``GET standing/`` whenever the server has not answered this annotator for ``every_s``
    seconds, looked at four times a period, until ``end`` (as the judging page does)."""
    while time.monotonic() < end:
        await asyncio.sleep(every_s / 4)
        if time.monotonic() - heard["at"] < every_s:
            continue
        with contextlib.suppress(Unanswered):
            await request(http, record, "standing", "GET", base + "standing/", headers=headers)
        heard["at"] = time.monotonic()


@dataclass
class Views:
    """What the viewers saw: time to the first byte of each range, bytes read, failures."""

    first_byte: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    received: int = 0
    failures: int = 0


async def view(
    http,
    views: Views,
    base: str,
    session_key: str,
    clips: list[tuple[str, int]],
    byte_rate: float,
    watch_s: float,
    end: float,
) -> None:
    """One viewer until ``end``: an open-ended range of a random clip from a random offset,
    read ahead for :data:`READ_AHEAD_SECONDS` and then at ``byte_rate`` for about
    ``watch_s``; then the connection is dropped (the next pair, or a seek)."""
    import aiohttp

    rng = random.Random(session_key)
    await asyncio.sleep(rng.uniform(0.0, watch_s))
    while time.monotonic() < end:
        name, size = rng.choice(clips)
        first = rng.randrange(0, size // 2)
        stop = min(end, time.monotonic() + watch_s * rng.uniform(0.5, 1.5))
        headers = {"Cookie": f"sessionid={session_key}", "Range": f"bytes={first}-"}
        began = time.perf_counter()
        try:
            async with http.get(base + name, headers=headers) as response:
                views.first_byte.append((time.perf_counter() - began) * 1000.0)
                views.statuses[response.status] += 1
                if response.status != 206:
                    raise RuntimeError(f"{name} answered {response.status}")
                started, read = time.monotonic(), 0
                while time.monotonic() < stop:
                    block = await response.content.read(64 * 1024)
                    if not block:
                        break
                    read += len(block)
                    ahead = read / byte_rate - READ_AHEAD_SECONDS - (time.monotonic() - started)
                    if ahead > 0:
                        await asyncio.sleep(min(ahead, max(0.0, stop - time.monotonic())))
                views.received += read
                response.close()  # leaves the rest unread: the connection is dropped
        except (TimeoutError, aiohttp.ClientError):
            views.failures += 1
            await asyncio.sleep(0.5)


async def loop_lag(end: float, lags: list[float]) -> None:
    """How late the client's event loop wakes up: latency it adds to every measurement."""
    while time.monotonic() < end:
        began = time.perf_counter()
        await asyncio.sleep(0.01)
        lags.append((time.perf_counter() - began - 0.01) * 1000.0)


async def crash_and_restart(server: Server, record: Record, at: float) -> float:
    """SIGKILL gunicorn at ``at``, once (within 10 s) several submits are unanswered so some
    die queued, in their transaction or answering, and start it again; seconds until a request
    succeeds again."""
    await asyncio.sleep(max(0.0, at - time.monotonic()))
    while record.submitting < CRASH_IN_FLIGHT and time.monotonic() < at + 10:
        await asyncio.sleep(0.001)
    log(
        f"crash: SIGKILL to the gunicorn master and workers, {record.submitting} submits unanswered"
    )
    record.crash_at = time.monotonic()
    server.kill()
    server.start()
    while record.first_ok_after_crash is None:
        await asyncio.sleep(0.01)
    return record.first_ok_after_crash - record.crash_at


async def warm_up(http, base: str, sessions: list[tuple[int, str]]) -> Record:
    """Every annotator judges one pair, untimed, so that each worker has loaded its code and
    prepared its statements, as on a server that has been up for a while."""
    record = Record()
    end = time.monotonic() + 60
    await asyncio.gather(
        *(annotate(http, record, base, user, key, 0.0, end, judgements=1) for user, key in sessions)
    )
    return record


@dataclass
class Run:
    """One timed run: what the clients saw and what it cost."""

    record: Record
    elapsed: float
    recovery: float | None
    lags: list[float]
    cpu: dict[str, float]
    began: float
    warm_acknowledged: list[tuple[str, int, str]]
    views: Views | None = None


async def drive(server: Server, args, setup: "Setup", port: int | None) -> Run:
    """Warm up, then run every annotator (and viewer) for ``--seconds`` (crashing the server
    halfway with ``--crash``); ``port``: where the clients connect (nginx's, or gunicorn's)."""
    import aiohttp

    record, views, lags = Record(), Views(), []
    port = port or server.port
    base = f"http://127.0.0.1:{port}/api/campaigns/{setup.campaign_id}/"
    # A pooled connection is dropped by the client before the server would close it: a
    # request sent on a connection the server just closed fails with a reset, which a
    # browser retries unseen and this client would count as unanswered.
    connector = aiohttp.TCPConnector(
        limit=len(setup.sessions), force_close=False, keepalive_timeout=KEEP_ALIVE_SECONDS - 1
    )
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        warm = await warm_up(http, base, setup.sessions)
        cpu_before = cpu_used(server.process.pid)
        began = time.monotonic()
        end = began + args.seconds
        pace = {"one_request": args.one_request, "standing_s": args.standing_seconds}
        tasks = [
            asyncio.create_task(annotate(http, record, base, user, key, args.think_ms, end, **pace))
            for user, key in setup.sessions
        ]
        # Viewers have connections of their own, as a browser's video element does.
        viewing = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max(1, len(setup.viewers)), force_close=True),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=30),
        )
        clips = setup.clips
        byte_rate = clips[0][1] / args.clip_seconds if clips else 1.0
        media = f"http://127.0.0.1:{port}/media/"
        tasks += [
            asyncio.create_task(
                view(viewing, views, media, key, clips, byte_rate, args.watch_seconds, end)
            )
            for _, key in setup.viewers
        ]
        lag_task = asyncio.create_task(loop_lag(end, lags))
        crasher = None
        if args.crash:
            crasher = asyncio.create_task(crash_and_restart(server, record, end - args.seconds / 2))
        await asyncio.gather(*tasks)
        elapsed = time.monotonic() - began
        await viewing.close()
        cpu_after = cpu_used(server.process.pid)
        cpu = {key: cpu_after[key] - cpu_before[key] for key in cpu_after}
        await lag_task
        recovery = await asyncio.wait_for(crasher, timeout=60) if crasher is not None else None
    viewed = views if setup.viewers else None
    return Run(record, elapsed, recovery, lags, cpu, began, warm.acknowledged, viewed)


def excess_judgements(campaign, live) -> int:
    """The judgements of ``live`` (the campaign's, not undone) stored after their pair already
    had all the labels the policy asked for."""
    from annotation.models import Judgement
    from annotation.policy import rules as policy

    if campaign.settings.label_policy.adaptive:
        # What a label needed depends on the annotator models of the moment (refitted as
        # labels came in), so only the cap is checked afterwards: no pair above it.
        per_pair = Counter(live.values_list("pair_id", flat=True))
        return sum(max(n - campaign.max_labels, 0) for n in per_pair.values())
    rows = live.order_by("pair_id", "created_at", "pk").values_list(
        "pair_id", "label", "pair__double"
    )
    excess = 0
    state: dict[int, tuple[int, int]] = {}
    for pair_id, label, double in rows:
        relevant, total = state.get(pair_id, (0, 0))
        labels = [True] * relevant + [False] * (total - relevant)
        excess += policy.needed_for(labels, double, campaign.max_labels) <= 0
        state[pair_id] = (relevant + (label == Judgement.Label.RELEVANT), total + 1)
    return excess


def verify(campaign_id: int, acknowledged: list[tuple[str, int, str]]) -> dict[str, int]:
    """Count the acknowledged judgements in the database: lost, duplicated and the rest."""
    from django.db.models import Count

    from annotation.judging import queue
    from annotation.models import Campaign, GoldJudgement, Judgement, Lease, Pair

    campaign = Campaign.objects.get(pk=campaign_id)
    live = Judgement.objects.filter(pair__campaign_id=campaign_id, undone_at__isnull=True)
    stored = Counter(str(key) for key in live.values_list("uuid", flat=True))
    # Answers on gold pairs are stored apart, never as labels of the campaign.
    gold = GoldJudgement.objects.filter(gold_pair__campaign_id=campaign_id)
    stored.update(str(key) for key in gold.values_list("uuid", flat=True))

    def repeated(rows, *by: str) -> int:
        """Rows beyond the first of each value of the fields ``by``."""
        return sum(row["n"] - 1 for row in rows.values(*by).annotate(n=Count("pk")).filter(n__gt=1))

    gold_twice = repeated(gold, "gold_pair_id", "annotator_id")
    acked = {key for key, _, _ in acknowledged}
    lost = len(acked - stored.keys())
    double_uuid = sum(n - 1 for n in stored.values() if n > 1)
    double_pair = repeated(live, "pair_id", "annotator_id")
    excess = excess_judgements(campaign, live)
    counted = Counter(live.values_list("pair_id", flat=True))
    mismatched = sum(
        counted[pk] != label_count
        for pk, label_count in Pair.objects.filter(pk__in=counted).values_list("pk", "label_count")
    )
    tallied = queue.campaign_totals(campaign)
    pairs = Pair.objects.filter(campaign_id=campaign_id, held=False)
    exact = pairs.aggregate(n=Count("pk"))["n"], sum(pairs.values_list("needed", flat=True))
    log(
        f"verify: {len(acked):,} acknowledged, {sum(stored.values()):,} stored "
        f"({len(stored.keys() - acked):,} stored but never acknowledged), lost {lost}, "
        f"uuid twice {double_uuid}, (pair, annotator) twice {double_pair}, over policy {excess}, "
        f"label_count mismatches {mismatched}, leases now {Lease.objects.count()}, "
        f"progress (pairs, labels left) {tallied[0]:,}/{tallied[1]:,} "
        f"vs counted {exact[0]:,}/{exact[1]:,}"
    )
    return {
        "lost": lost,
        "duplicated": double_uuid + double_pair + excess + gold_twice,
        "gold_answers": gold.count(),
        "label_count_mismatches": mismatched,
        "progress_exact": int(tallied == exact),
    }


def wait_settled(pids: list[int], timeout: float = 90.0) -> float:
    """Wait until the job workers ``pids`` have finished starting (under 0.05 s of CPU in a
    second), so their start never overlaps the measured run; seconds waited."""
    began = time.monotonic()

    def used() -> float:
        total = 0.0
        for pid in pids:
            with contextlib.suppress(OSError):
                total += stat_cpu(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split())
        return total

    last = used()
    while time.monotonic() - began < timeout:
        time.sleep(1.0)
        now = used()
        if now - last < 0.05:
            break
        last = now
    return time.monotonic() - began


class Watch(threading.Thread):
    """A thread calling :meth:`sample` every ``every`` seconds, on a database connection of
    its own, until :meth:`stop` (which returns its figures)."""

    def __init__(self, every: float) -> None:
        super().__init__(daemon=True)
        self.every = every
        self._halt = threading.Event()

    def run(self) -> None:
        from django.db import connection

        try:
            with connection.cursor() as cursor:
                while not self._halt.wait(self.every):
                    self.sample(cursor)
        finally:
            connection.close()

    def stop(self) -> dict[str, object]:
        self._halt.set()
        self.join(timeout=30)
        return self.figures()


class FigureWatch(Watch):
    """How far the campaign's stored figures lag its labels while the annotators judge: 0
    when no label came after the oldest figure was computed, else its age (target 60 s)."""

    def __init__(self, campaign_id: int, every: float = 2.0) -> None:
        from annotation.campaign_read import figures_due

        super().__init__(every)
        self.campaign_id = campaign_id
        self.subject = figures_due.subject(campaign_id)
        self.lags: list[float] = []
        self.refreshed = 0
        self.seen = None

    def sample(self, cursor) -> None:
        from django.db.models import Max, Min
        from django.utils import timezone

        from annotation.models import Judgement
        from jobs.models import StoredFigure

        now = timezone.now()
        figures = StoredFigure.objects.filter(subject=self.subject)
        oldest = figures.aggregate(at=Min("computed_at"))["at"]
        labels = Judgement.objects.filter(pair__campaign_id=self.campaign_id)
        newest_label = labels.aggregate(at=Max("created_at"))["at"]
        if oldest is not None and oldest != self.seen:
            self.refreshed += self.seen is not None
            self.seen = oldest
        behind = newest_label is not None and (oldest is None or newest_label > oldest)
        self.lags.append((now - (oldest or now)).total_seconds() if behind else 0.0)

    def figures(self) -> dict[str, object]:
        lags = sorted(self.lags)
        return {
            "figures_lag_max_s": round(lags[-1], 1) if lags else None,
            "figures_lag_p95_s": round(lags[int(0.95 * (len(lags) - 1))], 1) if lags else None,
            "figures_refreshed": self.refreshed,
        }


class LockWatch(Watch):
    """PostgreSQL's sessions waiting for a lock (``wait_event_type = 'Lock'``) by statement,
    while the annotators judge: how much of the tail is queueing on rows, not work."""

    def __init__(self, every: float = 0.01) -> None:
        super().__init__(every)
        self.samples = 0
        self.waiting: Counter[str] = Counter()

    def sample(self, cursor) -> None:
        cursor.execute(
            "SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 90) FROM"
            " pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND datname = current_database()"
        )
        self.samples += 1
        self.waiting.update(row[0] for row in cursor.fetchall())

    def figures(self) -> dict[str, object]:
        waits = sum(self.waiting.values())
        for query, n in self.waiting.most_common(4):
            log(f"  waiting for a lock in {n / max(1, self.samples):.1%} of samples: {query}")
        return {"lock_waiters_mean": round(waits / max(1, self.samples), 3)}


def job_timeline(began: float) -> str:
    """Every job that ran: the second of the run it started at and how long it took."""
    from jobs.models import Job

    rows = Job.objects.exclude(started_at=None).order_by("started_at")
    parts = []
    for kind, start, end in rows.values_list("kind", "started_at", "finished_at"):
        took = f"{(end - start).total_seconds():.1f} s" if end else "unfinished"
        parts.append(f"{kind} at {start.timestamp() - began:.0f}s ({took})")
    return ", ".join(parts) or "none"


def refit_jobs() -> dict[str, object]:
    """The adaptive policy's refit jobs during the run: how many ran and how long each took."""
    from jobs.models import Job

    jobs = list(
        Job.objects.filter(kind="refit-policy").values_list("status", "started_at", "finished_at")
    )
    took = [(end - start).total_seconds() for _, start, end in jobs if start and end]
    return {
        "refits": len(jobs),
        "refits_succeeded": sum(1 for status, _, _ in jobs if status == Job.Status.SUCCEEDED),
        "refit_seconds_max": round(max(took), 2) if took else None,
    }


def arguments():
    """The options of the annotators, their campaign, the server, its workers and viewers."""
    options = parser(__doc__)
    add = options.add_argument
    add("--annotators", type=int, default=100)
    add("--seconds", type=float, default=60.0)
    add("--pairs", type=int, default=600_000)
    add("--workers", type=int, default=2, help="gunicorn worker processes")
    add("--threads", type=int, default=1, help="threads per worker (over 1: gthread, keep-alive)")
    add(
        "--think-ms",
        type=float,
        default=5000.0,
        help="mean time an annotator looks at a pair (uniform over 0.5x-1.5x)",
    )
    add("--lease-seconds", type=int, default=300)
    add(
        "--standing-seconds",
        type=float,
        default=12.0,
        help="seconds without an answer after which an annotator asks GET standing/, as the "
        "judging page does (0: never)",
    )
    add(
        "--no-prepared",
        dest="prepared",
        action="store_false",
        help="client-side parameter binding (DATABASE_PREPARED=0) instead of prepared statements",
    )
    add(
        "--judging-order",
        default="depth",
        help="the campaign's judging order (depth, maxmean, metric-first, mtf, ...)",
    )
    add(
        "--two-requests",
        dest="one_request",
        action="store_false",
        help="ask next/ before every pair (two requests per judgement) instead of judging the "
        "task each submit answers with (one request per judgement, as the judging page does; "
        "the default)",
    )
    add("--one-request", action="store_true", help="the default (kept for older scripts)")
    add(
        "--gold-rate",
        type=float,
        default=0.0,
        help="share of tasks that are gold pairs (200 gold pairs are made; 0: none)",
    )
    add(
        "--qualified",
        action="store_true",
        help="the campaign requires qualification, and every annotator has passed it",
    )
    add(
        "--policy",
        choices=["fire", "adaptive"],
        default="fire",
        help="the campaign's labelling policy; adaptive refits run in a job worker beside "
        "the server (manage.py db_worker), as in a deployment",
    )
    add(
        "--worker-priority",
        choices=sorted(WORKER_PRIORITY),
        default="nice",
        help="the job workers' CPU priority beside gunicorn (the README's: nice)",
    )
    add(
        "--worker-interval",
        type=float,
        default=1.0,
        help="seconds an idle job worker waits before looking at its queue again",
    )
    add(
        "--no-job-workers",
        action="store_true",
        help="start no job worker (nothing computes the figures: an isolation, not a deployment)",
    )
    add("--confidence", type=float, default=0.95, help="the adaptive target")
    add("--viewers", type=int, default=0, help="annotators watching 1080p video beside the others")
    add(
        "--media-server",
        choices=["django", "nginx"],
        default="django",
        help="who sends the videos: gunicorn, or nginx in front of it (deploy/nginx/firepool.conf)",
    )
    add("--clips", type=int, default=4, help="distinct 1080p video files")
    add("--clip-seconds", type=float, default=30.0, help="length of each clip")
    add("--watch-seconds", type=float, default=5.0, help="mean time a viewer reads one range")
    add("--crash", action="store_true", help="SIGKILL gunicorn halfway through")
    add("--debug", action="store_true", help="serve with DJANGO_DEBUG=1")
    add("--keep", action="store_true", help="keep the database afterwards")
    add(
        "--watch-locks",
        action="store_true",
        help="sample PostgreSQL's sessions waiting for a lock every 10 ms (costs a little CPU)",
    )
    return options.parse_args()


@dataclass
class Setup:
    """The bench's database, the server's environment and the world built in it."""

    database_url: str
    env: dict[str, str]
    media_root: Path | None
    campaign_id: int
    pairs: int
    sessions: list[tuple[int, str]]
    viewers: list[tuple[int, str]]
    clips: list[tuple[str, int]]


def set_up(args) -> Setup:
    """A fresh database (:data:`DB_NAME`, dropped and created again), Django on it as the
    server runs it, migrated, and the world of the run (untimed)."""
    url = postgres_database(DB_NAME)
    env = server_environment(url, args.prepared, args.debug)
    media_root = None
    if args.viewers or args.media_server == "nginx":
        media_root = Path(tempfile.mkdtemp(prefix="firepool-load-media-"))
        env.update(FIREPOOL_MEDIA_ROOT=str(media_root), FIREPOOL_MEDIA_SERVER=args.media_server)
    migrated = setup_django(env)
    began = time.perf_counter()
    campaign_id, pairs, sessions = build_world(args, args.annotators + args.viewers)
    sessions, viewers = sessions[: args.annotators], sessions[args.annotators :]
    clips = add_media(media_root, args.clips, args.clip_seconds) if viewers else []
    log(
        f"set-up: migrate {migrated:.1f} s, {pairs:,} pairs and "
        f"{args.annotators} annotators {time.perf_counter() - began:.1f} s"
    )
    from django.db import connections

    connections.close_all()
    return Setup(url, env, media_root, campaign_id, pairs, sessions, viewers, clips)


def job_workers(args, env: dict[str, str]) -> list[subprocess.Popen]:
    """The README's job workers beside the server: one for the default queue, one for the
    live queue (the campaign's figures, the adaptive policy's refits)."""
    command = [*WORKER_PRIORITY[args.worker_priority], sys.executable, "manage.py", "db_worker"]
    command += ["--interval", str(args.worker_interval), "--no-reload", "--no-startup-delay"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    return [
        subprocess.Popen(
            [*command, "--queue-name", queue], cwd=ROOT, env={**os.environ, **env}, **quiet
        )
        for queue in (() if args.no_job_workers else ("default", "live"))
    ]


def serve_and_run(args, setup: Setup) -> tuple["Run", dict[str, object]]:
    """Start gunicorn (behind nginx with ``--media-server nginx``) and the job workers, run
    the annotators and viewers against it, stop everything; the run and the figures' and
    locks' watches."""
    with tempfile.TemporaryDirectory(prefix="firepool-load-") as tmp:
        server = Server(
            free_port(), args.workers, args.threads, setup.env, Path(tmp) / "gunicorn.log"
        )
        server.start()
        workers = job_workers(args, setup.env)
        watches = [FigureWatch(setup.campaign_id)] + ([LockWatch()] if args.watch_locks else [])
        front = None
        try:
            wait_until_up(f"http://127.0.0.1:{server.port}/api/", [server.process])
            if workers:
                waited = wait_settled([worker.pid for worker in workers])
                log(f"job workers started in {waited:.1f} s (waited before the run)")
            log(
                f"gunicorn: {args.workers} workers x {args.threads} threads, port {server.port}; "
                f"{args.annotators} annotators for {args.seconds:.0f} s, think {args.think_ms} ms"
            )
            if args.media_server == "nginx":
                front = Nginx(
                    Path(tmp) / "nginx",
                    f"127.0.0.1:{server.port}",
                    Path(tmp) / "static",
                    setup.media_root,
                    workers=os.cpu_count() or 1,  # Debian's worker_processes auto
                ).start()
            if setup.viewers or front:
                log(
                    f"{len(setup.viewers)} viewers, media sent by {args.media_server}"
                    + (f" (nginx on port {front.port}, every request through it)" if front else "")
                )
            for watch in watches:
                watch.start()
            run = asyncio.run(drive(server, args, setup, front.port if front else None))
        finally:
            if front is not None:
                front.stop()
            server.stop()
            if setup.media_root is not None:
                shutil.rmtree(setup.media_root, ignore_errors=True)
            freshness = {}
            for watch in watches:
                freshness.update(watch.stop() if watch.is_alive() else {})
            for worker in workers:
                worker.terminate()
                worker.wait(timeout=60)
            if server.log_path.exists():
                tail = server.log_path.read_text(errors="replace").splitlines()[-5:]
                log("gunicorn log tail:\n  " + "\n  ".join(tail))
    return run, freshness


def diagnose(args, run: "Run") -> None:
    """The diagnostics on stderr: latencies by kind, statuses, the client's lag, slow
    requests over time and CPU per request."""
    record, cpu = run.record, run.cpu
    for kind, values in sorted(record.latencies.items()):
        log(f"{kind}: n={len(values):,} p50/p95/p99 = {percentiles(values)} ms")
    log(
        f"statuses: {dict(record.statuses)}; unanswered {record.failures}, retries {record.retries}"
    )
    log(f"client event-loop lag p50/p95/p99 = {percentiles(run.lags)} ms")
    buckets = Counter(
        int((at - run.began) // 5) * 5 for at, ms in record.finished if ms > TARGET_P99_MS
    )
    log(
        f"requests over {TARGET_P99_MS:.0f} ms by second of the run: "
        + ", ".join(f"{second}s: {n}" for second, n in sorted(buckets.items()))
    )
    per_request = 1000.0 / max(1, len(record.finished))
    if args.crash:
        log("CPU of the killed server processes is lost: per-request CPU not counted")
    else:
        log(
            f"CPU per request: gunicorn {cpu['gunicorn'] * per_request:.1f} ms, PostgreSQL "
            f"{cpu['postgres'] * per_request:.1f} ms, client {cpu['client'] * per_request:.1f} ms"
        )
    log(
        f"machine busy {cpu['machine busy'] / cpu['machine total']:.0%} of "
        f"{cpu['machine total'] / run.elapsed:.1f} cores during the run (all processes)"
    )
    if args.media_server != "django" or run.views is not None:
        log(
            "CPU in the run, in cores: "
            + ", ".join(
                f"{name} {cpu[name] / run.elapsed:.2f}"
                for name in ("gunicorn", "postgres", "nginx", "client")
            )
            + " (the client's includes the viewers' reading)"
        )


def figures(args, run: "Run", pairs: int, checks: dict, extra: dict) -> dict[str, object]:
    """The run's figures: the JSON object of stdout's last line."""
    record = run.record
    every = [ms for _, ms in record.finished]
    p50, p95, p99 = percentiles(every)
    result: dict[str, object] = {
        "annotators": args.annotators,
        "pairs": pairs,
        "p50_ms": p50,
        "p95_ms": p95,
        "p99_ms": p99,
        "judgements_per_s": round(len(record.acknowledged) / run.elapsed, 1),
        "lost": checks["lost"],
        "duplicated": checks["duplicated"],
    }
    if args.crash:
        result["crashes"] = 1
        result["recovery_s"] = round(run.recovery, 2) if run.recovery is not None else None
        # The same figures without the requests that finished within 10 s of the crash.
        calm = [
            ms
            for at, ms in record.finished
            if not record.crash_at <= at <= record.crash_at + RECOVERY_WINDOW_S
        ]
        result["p99_ms_outside_recovery"] = percentiles(calm)[2]
    given = ("think_ms", "workers", "threads", "prepared", "debug", "judging_order")
    given += ("one_request", "gold_rate", "qualified")
    result.update(
        requests=len(every),
        seconds=round(run.elapsed, 1),
        **{name: getattr(args, name) for name in given},
        gold_answers=checks["gold_answers"],
        label_count_mismatches=checks["label_count_mismatches"],
        progress_exact=bool(checks["progress_exact"]),
        policy=args.policy,
        **extra,
    )
    if args.media_server != "django":
        result["media_server"] = args.media_server
    if run.views is not None:
        views = run.views
        first_byte = percentiles(views.first_byte)
        log(
            f"viewers: {len(views.first_byte):,} ranges {dict(views.statuses)}, failed "
            f"{views.failures}; first byte p50/p95/p99 = {first_byte} ms; "
            f"{views.received * 8 / run.elapsed / 1e6:.0f} Mbit/s read"
        )
        result.update(
            viewers=args.viewers,
            media_server=args.media_server,
            unanswered=record.failures,
            media_ranges=len(views.first_byte),
            media_failures=views.failures,
            media_first_byte_p50_ms=first_byte[0],
            media_first_byte_p99_ms=first_byte[2],
            media_mbit_s=round(views.received * 8 / run.elapsed / 1e6, 1),
        )
    return result


def main() -> None:
    args = arguments()
    setup = set_up(args)
    run, freshness = serve_and_run(args, setup)
    log(f"load average after the run: {os.getloadavg()[0]:.2f}")
    checks = verify(setup.campaign_id, run.record.acknowledged + run.warm_acknowledged)
    log(f"jobs by second of the run: {job_timeline(time.time() - (time.monotonic() - run.began))}")
    refits = refit_jobs() if args.policy == "adaptive" else {}
    if not args.keep:
        drop_database(setup.database_url)
    diagnose(args, run)
    result = figures(args, run, setup.pairs, checks, {**refits, **freshness})
    log(
        f"targets: p99 <= {TARGET_P99_MS:.0f} ms, lost 0, duplicated 0, the campaign's figures "
        f"at most {TARGET_FIGURES_LAG_S:.0f} s behind its labels"
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
