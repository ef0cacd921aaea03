"""Key press to next video playable on the judging page, in a real browser.

A throw-away demo campaign behind ``manage.py runserver``, judged in headless Chromium
(Playwright) by key press with ``--dwell`` ms on each pair; the page's ``firepool:shown``
event times the key to the next video playable. Then without preloading (``?nopreload``) and
with each submit held back ``--delays`` ms in the browser (target p95 <= 100 ms whatever the
delay). Anchor: Label Studio users still ask for preloading (HumanSignal/label-studio #9101)::

    .venv/bin/python bench/judge_latency.py [--pairs 60] [--cold-pairs 30] [--dwell 1200]
        [--delays 0,500] [--delayed-pairs 30]
"""

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
from harness import (
    free_port,
    machine,
    parser,
    percentiles,
    start_group,
    stop_groups,
    temporary_django,
    wait_until_up,
)

from tests.browser_support import CHROMIUM, RECORD_SHOWN, launch, login

TARGET = "p95 <= 100 ms (key press to next video playing), whatever the server's delay"
TARGET_MS = 100.0
USERNAME, PASSWORD = "bench-annotator", "pw-bench-annotator-1"


def build_world(n_videos: int, depth: int, roles: bool = True) -> int:
    """A demo world, a one-run campaign over its test split and an annotator; the campaign id."""
    from django.contrib.auth import get_user_model

    from config.roles import ANNOTATOR, ensure_groups
    from retrieval.datasets.demo.service import create_demo_dataset
    from tests.factories import random_run_campaign  # needs Django set up

    dataset = create_demo_dataset(name="latency", n_videos=n_videos, seed=7, workers=2)
    campaign = random_run_campaign(dataset, "latency", depth, seed=7)
    campaign.set_settings(replace(campaign.settings, show_roles=roles))
    user = get_user_model().objects.create_user(USERNAME, password=PASSWORD)
    user.groups.add(ensure_groups()[ANNOTATOR])
    return campaign.pk


@contextlib.contextmanager
def runserver(tmp: Path) -> Iterator[str]:
    """``manage.py runserver`` on a free local port, on the bench's database; yields its
    base URL, prints the end of its log if the block fails, and stops it afterwards."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = tmp / "runserver.log"
    command = ["manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    server = start_group(command, {"DJANGO_DEBUG": "1", "PYTHONUNBUFFERED": "1"}, log_path)
    try:
        wait_until_up(f"{base}/login/", [server], any_status=False)
        yield base
    except BaseException:
        print(log_path.read_text(errors="replace")[-4000:], file=sys.stderr)
        raise
    finally:
        stop_groups([server], timeout=10)


def judge_pairs(
    browser, base: str, campaign_id: int, n: int, dwell_ms: int, query: str, delay_ms: int = 0
):
    """Judge ``n`` pairs by key press, each answer held back ``delay_ms``; return the
    firepool:shown details of the advances and the submit/ round trips."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    if delay_ms:

        def slow_server(route):
            time.sleep(delay_ms / 1000)  # the page's clock runs on; only the answer waits
            route.continue_()

        page.route("**/submit/", slow_server)
    page.add_init_script(RECORD_SHOWN)
    login(page, base, USERNAME, PASSWORD, landing="/judge/")  # annotators land there
    page.goto(f"{base}/judge/{campaign_id}/{query}")
    page.wait_for_function("() => window.__shown.length >= 1", timeout=30000)
    for i in range(n):
        page.wait_for_timeout(dwell_ms)
        page.wait_for_function(  # R and N wait for the video's first frame
            "() => document.body.dataset.videoState === 'seen'"
            " || document.body.dataset.judgeState === 'finished'",
            timeout=30000,
        )
        page.keyboard.press("r" if i % 2 == 0 else "n")
        page.wait_for_function(
            "k => window.__shown.length >= k || document.body.dataset.judgeState === 'finished'",
            arg=i + 2,
            timeout=30000,
        )
        if page.evaluate("document.body.dataset.judgeState") == "finished":
            break
    shown = page.evaluate("window.__shown")
    submits = page.evaluate(
        "performance.getEntriesByType('resource')"
        ".filter((e) => e.name.endsWith('/submit/')).map((e) => e.duration)"
    )
    context.close()
    return [d for d in shown if d["cause"] == "submit"], submits


def summary(values) -> str:
    """The p50, p95 and max of ``values`` (ms), and their number."""
    if not values:
        return "no samples"
    p50, p95, most = percentiles(values, (50, 95, 100))
    return f"p50 {p50:6.1f} ms, p95 {p95:6.1f} ms, max {most:6.1f} ms (n={len(values)})"


def main() -> None:
    options = parser(__doc__)
    add = options.add_argument
    add("--pairs", type=int, default=60, help="advances measured with preloading")
    add("--cold-pairs", type=int, default=30, help="advances without preloading")
    add("--dwell", type=int, default=1200, help="ms spent on each pair (>= 1000: see above)")
    add("--delays", default="0,500", help="ms each answer is held back, comma-separated")
    add("--delayed-pairs", type=int, default=30, help="advances measured per delay above 0")
    add("--videos", type=int, default=200, help="clips in the demo world")
    add("--depth", type=int, default=5)
    add("--roles", choices=["on", "off"], default="on", help="caption role spans on the page")
    args = options.parse_args()
    delays = [int(value) for value in args.delays.split(",") if value.strip()]
    if not os.path.exists(CHROMIUM):
        sys.exit(f"{CHROMIUM} not found: install Debian's chromium to run this benchmark")

    with temporary_django() as tmp:
        campaign_id = build_world(args.videos, args.depth, args.roles == "on")
        print(f"semantic roles on the judging page: {args.roles}")
        from django.db import connections

        connections.close_all()
        with runserver(Path(tmp)) as base:
            from playwright.sync_api import sync_playwright

            with sync_playwright() as playwright:
                browser = launch(playwright)
                version = browser.version

                def judge(n: int, query: str = "", delay: int = 0):
                    return judge_pairs(browser, base, campaign_id, n, args.dwell, query, delay)

                warm, submits = judge(args.pairs)
                delayed = {
                    delay: judge(args.delayed_pairs, delay=delay) for delay in delays if delay
                }
                cold, _ = judge(args.cold_pairs, "?nopreload")
                browser.close()

        from annotation.models import Judgement

        stored = Judgement.objects.filter(undone_at__isnull=True).count()

    ms = [d["ms"] for d in warm]
    preloaded = sum(d["preloaded"] for d in warm)
    p95s = [float(np.percentile(ms, 95)) if ms else float("nan")]
    print(f"machine: {machine()}")
    print(
        f"browser: headless Chromium {version}; server: manage.py runserver + SQLite (WAL); "
        f"dwell {args.dwell} ms per pair; {stored} judgements stored"
    )
    print(
        f"key press -> next video playable, preloading on:  {summary(ms)}; "
        f"{preloaded}/{len(warm)} served from the preloaded player"
    )
    print(f"  submit/ round trip (Resource Timing), meanwhile: {summary(submits)}")
    for delay, (shown, trips) in delayed.items():
        times = [d["ms"] for d in shown]
        p95s.append(float(np.percentile(times, 95)) if times else float("nan"))
        early = sum(d["waiting"] > 0 for d in shown)
        print(
            f"key press -> next video playing, answers held {delay} ms: {summary(times)}; "
            f"{early}/{len(shown)} shown before the answer came"
        )
        print(f"  submit/ round trip (Resource Timing), meanwhile: {summary(trips)}")
    print(f"key press -> next video playable, preloading off: {summary([d['ms'] for d in cold])}")
    p95 = max(p95s)
    verdict = "met" if p95 <= TARGET_MS else "MISSED"
    print(f"target: {TARGET}: {verdict} (worst p95 {p95:.1f} ms)")
    print("anchor: Label Studio users still ask for preloading (HumanSignal/label-studio #9101)")


if __name__ == "__main__":
    main()
