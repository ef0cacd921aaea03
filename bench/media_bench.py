"""Browser copies per second of source video, in-process with PyAV, beside the ffmpeg command line.

``--copies``: the browser copy of an MSVD-like AVI and an EPIC-like 1080p MP4 by
:func:`retrieval.media.transcode.make_copy` against the ``ffmpeg`` command line with the same
settings, best of ``--repeat`` (target: PyAV within 1.3x; needs ``ffmpeg``).
``--first-frame``: clips of each source format imported and served by ``manage.py
runserver``, timed in headless Chromium from a task shown to its first frame, cold and warm,
beside a bare ``<video>`` element (the anchor), with the bytes fetched per task and the cost
of MSVD and an hour of EPIC-KITCHENS at the measured rates::

    .venv/bin/python bench/media_bench.py --copies [--seconds 4] [--repeat 3]
    .venv/bin/python bench/media_bench.py --first-frame [--tasks 6] [--dwell 1200]
"""

import json
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import harness
import numpy as np
import world

from retrieval.media.probe import CODEC_NAMES, CopySettings, Probe, clock, probe
from retrieval.media.transcode import make_copy, output_rate, output_size
from tests.media_support import BLUE, RED, SPECS, make_clip


@dataclass(frozen=True)
class Format:
    """One source format: how make_clip writes it."""

    kind: str
    size: tuple[int, int]
    fps: int
    segments: bool = False


SOURCES = {
    "msvd-avi": Format("avi", (320, 240), 25),
    "epic-1080p50": Format("mp4_moov_end", (1920, 1080), 50),
}
"""The sources of ``--copies``."""


def ffmpeg_command(source: Path, target: Path, settings: CopySettings) -> list[str]:
    """The command line that makes the same copy as :func:`make_copy`."""
    facts = probe(source)
    width, height = output_size(facts.width, facts.height, facts.rotation, settings.max_height)
    rate = output_rate(facts.fps, settings.max_fps)
    command = [
        "ffmpeg", "-nostdin", "-y", "-v", "error", "-i", str(source),
        "-vf", f"scale={width}:{height}:out_range=tv,"
               f"fps={rate.numerator}/{rate.denominator},format=yuv420p",
        "-c:v", "libx264", "-crf", str(settings.crf), "-preset", settings.preset,
    ]  # fmt: skip
    if facts.audio_codec:
        command += ["-c:a", "aac", "-b:a", str(settings.audio_bitrate), "-ar", "48000", "-ac", "2"]
    return [*command, "-movflags", "+faststart", str(target)]


def describe(facts: Probe) -> str:
    """``AVI, MPEG-4 Part 2 320x240 25 fps + mp3, 0:12``: a copy in one line."""
    audio = f" + {facts.audio_codec}" if facts.audio_codec else ""
    codec = CODEC_NAMES.get(facts.video_codec, facts.video_codec)
    return (
        f"{facts.container.upper()}, {codec} {facts.width}x{facts.height} "
        f"{facts.fps:g} fps{audio}, {clock(facts.duration)}"
    )


def copies(seconds: float, repeat: int) -> None:
    if shutil.which("ffmpeg") is None:
        raise SystemExit("the anchor needs ffmpeg on the PATH: apt-get install -y ffmpeg")
    settings = CopySettings()
    version = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout
    print(f"ffmpeg: {version.splitlines()[0]}")
    import av

    print(f"PyAV {av.__version__}, FFmpeg {av.ffmpeg_version_info}")
    with tempfile.TemporaryDirectory(prefix="media-bench-") as tmp:
        folder = Path(tmp)
        print(f"{'source':<14} {'video s':>8} {'pyav s':>8} {'ffmpeg s':>9} {'pyav x':>7} "
              f"{'ffmpeg x':>9} {'ratio':>6}")  # fmt: skip
        for name, spec in SOURCES.items():
            source = make_clip(
                folder / f"{name}{SPECS[spec.kind].suffix}", spec.kind, seconds=seconds,
                fps=spec.fps, size=spec.size,
            )  # fmt: skip
            length = probe(source).duration
            ours, anchor = [], []
            for _ in range(repeat):
                ours.append(harness.once(make_copy, source, folder / "ours.mp4", settings)[0])
                command = ffmpeg_command(source, folder / "theirs.mp4", settings)
                anchor.append(harness.once(subprocess.run, command, check=True)[0])
            mine, theirs = min(ours), min(anchor)
            print(
                f"{name:<14} {length:>8.2f} {mine:>8.2f} {theirs:>9.2f} {length / mine:>7.2f} "
                f"{length / theirs:>9.2f} {mine / theirs:>6.2f}"
            )
            a, b = probe(folder / "ours.mp4"), probe(folder / "theirs.mp4")
            print(
                f"  copies: ours {describe(a)}, {a.size:,} B; ffmpeg's {describe(b)}, {b.size:,} B"
            )


FORMATS = {
    "msvd-avi": Format("avi", (480, 360), 25),
    "msrvtt-mp4": Format("mp4", (320, 240), 30),
    "epic-segment": Format("mp4_moov_end", (1920, 1080), 50, segments=True),
    "youtube-webm": Format("webm", (640, 360), 30),
    "youtube-mkv": Format("mkv", (640, 360), 30),
    "phone-hevc": Format("hevc", (1920, 1080), 30),
    "prores-mov": Format("prores", (1280, 720), 25),
    "mjpeg-mov": Format("mjpeg", (640, 480), 30),
}
SEGMENT_SECONDS = 5.0
SEGMENT_GAP = 1.0
USERNAME, PASSWORD = "bench-viewer", "pw-bench-viewer-1"
MSVD_CLIPS, MSVD_MEAN_SECONDS = 1970, 10.0
EPIC_SEGMENTS, EPIC_MARGIN = 100, 0.5
FIRST_FRAME_MS = {"cold": 300.0, "warm": 50.0}
SEGMENT_BYTES = 3_000_000

# Turns the page's test hooks on and records, per task shown, the time from the page showing
# it (body[data-pair] changes) to its first frame (body[data-video-state] turns "seen", set
# from requestVideoFrameCallback), with the active player's source.
RECORD_FIRST_FRAME = """
window.FIREPOOL_TEST = true;
window.__shown = [];
window.__ff = [];
document.addEventListener("firepool:shown", (e) => window.__shown.push(e.detail));
(() => {
  let pair = null, since = null;
  new MutationObserver(() => {
    const body = document.body;
    if (!body) { return; }
    const now = performance.now();
    if (body.dataset.pair && body.dataset.pair !== pair) { pair = body.dataset.pair; since = now; }
    const state = body.dataset.videoState;
    if (since !== null && (state === "seen" || state === "broken")) {
      const video = [...document.querySelectorAll("video.judge-video")]
        .find((v) => v.classList.contains("is-active"));
      window.__ff.push({pair, state, ms: now - since, src: video ? video.currentSrc : ""});
      since = null;
    }
  }).observe(document,
             {attributes: true, subtree: true, attributeFilter: ["data-pair", "data-video-state"]});
})();
"""

BARE_VIDEO = """async (src) => {
  const video = document.createElement("video");
  video.muted = true; video.preload = "auto"; video.width = 320;
  document.body.appendChild(video);
  const began = performance.now();
  const result = await new Promise((done) => {
    video.requestVideoFrameCallback(() => done({ms: performance.now() - began}));
    video.addEventListener("error", () => done({error: String(video.error && video.error.code)}));
    setTimeout(() => done({error: "timeout"}), 20000);
    video.src = src;
    video.play().catch(() => {});
  });
  video.pause(); video.removeAttribute("src"); video.load(); video.remove();
  return result;
}"""


def make_sources(folder: Path, tasks: int, seconds: float) -> tuple[list[dict], Path]:
    """Write ``tasks`` clips per format (``tasks`` 5 s segments of one recording for EPIC) and
    their caption records; returns the records and the recording's path."""
    records: list[dict] = []
    recording = None
    for name, spec in FORMATS.items():
        suffix = SPECS[spec.kind].suffix
        if spec.segments:
            length = tasks * (SEGMENT_SECONDS + SEGMENT_GAP) + SEGMENT_GAP
            recording = make_clip(
                folder / f"{name}-P01_01{suffix}", spec.kind, seconds=length, fps=spec.fps,
                size=spec.size, texture=0,
            )  # fmt: skip
        for i in range(tasks):
            record = {"video_id": f"{name}-{i}", "caption_id": f"{name}-c{i}", "caption": name}
            if spec.segments:
                start = SEGMENT_GAP + i * (SEGMENT_SECONDS + SEGMENT_GAP)
                record.update(video_path=recording.name, start=start, end=start + SEGMENT_SECONDS)
            else:
                colours = (RED, BLUE) if i % 2 else (BLUE, RED)
                record["video_path"] = make_clip(
                    folder / f"{name}-{i}{suffix}", spec.kind, seconds=seconds, fps=spec.fps,
                    size=spec.size, first=colours[0], second=colours[1], texture=i,
                ).name  # fmt: skip
            records.append(record)
    return records, recording


def own_video_campaign(dataset) -> int:
    """A campaign over the dataset where each query pools exactly one video, each video
    once (so every task shows another file, and no video comes from the browser's cache),
    and every pair takes two labels: one from the cold pass's annotator, one from the warm
    pass's."""
    from annotation.campaigns.service import CampaignSpec, create_campaign
    from retrieval.models import Caption, Video

    video_pks = world.pks(Video.objects.filter(dataset=dataset))
    rows = Caption.objects.filter(dataset=dataset, is_query=True).order_by("video_id")
    queries = np.array(rows.values_list("pk", flat=True))
    # Query i ranks video i + 1 first: its own video is ground truth, never pooled.
    items = video_pks[(np.arange(len(queries)) + 1) % len(video_pks), None]
    media = world.Media(dataset, video_pks, queries)
    (run,) = world.runs(media, [items], [np.ones(items.shape)], ["own"])
    spec = CampaignSpec(name="first-frame", depth=1, second_label_rate=1.0, max_labels=2)
    return create_campaign(dataset, [run], spec).pk


def count_bytes(context, page) -> dict[str, int]:
    """Encoded bytes Chromium fetches per URL (fragment and query left off), kept up to date
    from CDP's network events while the page runs."""
    session = context.new_cdp_session(page)
    session.send("Network.enable")
    urls: dict[str, str] = {}
    received, finished, totals = Counter(), Counter(), Counter()

    def settle(request: str) -> None:
        url = urls.get(request)
        if url is not None:
            key = url.split("#")[0].split("?")[0]
            totals[key] += max(finished.pop(request, 0), received.pop(request, 0))

    def sent(event) -> None:
        urls[event["requestId"]] = event["request"]["url"]

    def data(event) -> None:
        received[event["requestId"]] += int(event.get("encodedDataLength", 0))

    def done(event) -> None:
        finished[event["requestId"]] = int(event.get("encodedDataLength", 0))
        settle(event["requestId"])

    session.on("Network.requestWillBeSent", sent)
    session.on("Network.dataReceived", data)
    session.on("Network.loadingFinished", done)
    session.on("Network.loadingFailed", lambda event: settle(event["requestId"]))
    return totals


def signed_in(browser, base: str, mode: str, script: str | None = None):
    """A fresh context and page (``script`` run on every page of it) signed in as the
    ``mode`` pass's annotator."""
    from tests.browser_support import login

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    if script:
        page.add_init_script(script)
    login(page, base, f"{USERNAME}-{mode}", PASSWORD, landing="/judge/")
    return context, page


def judge_all(browser, base: str, campaign: int, dwell_ms: int, cold: bool):
    """Judge every task of ``campaign`` by key press, waiting ``dwell_ms`` after each first
    frame; the first-frame records (the first task, shown by the page load, left out) and
    the bytes fetched per URL."""
    context, page = signed_in(browser, base, "cold" if cold else "warm", RECORD_FIRST_FRAME)
    fetched = count_bytes(context, page)
    page.goto(f"{base}/judge/{campaign}/{'?nopreload' if cold else ''}")
    done = "['finished', 'waiting'].includes(document.body.dataset.judgeState)"  # none left
    while True:
        page.wait_for_function(
            f"() => ['seen', 'broken'].includes(document.body.dataset.videoState) || {done}",
            timeout=60000,
        )
        if page.evaluate(f"() => {done}"):
            break
        page.wait_for_timeout(dwell_ms)
        state = page.evaluate("document.body.dataset.videoState")
        counted = page.evaluate("window.__ff.length")  # before the key: the next may be quick
        page.keyboard.press("b" if state == "broken" else "r")
        page.wait_for_function(f"k => window.__ff.length > k || {done}", arg=counted, timeout=60000)
    records = page.evaluate("window.__ff")[1:]
    shown = page.evaluate("window.__shown")
    page.wait_for_timeout(300)  # the last responses' events
    context.close()
    return records, shown, dict(fetched)


def bare_video(browser, base: str, sources: list[str]) -> list[dict]:
    """A bare <video> given each served file (with its fragment) on a page of the same
    origin, in a fresh context: the time from src to its first frame."""
    context, page = signed_in(browser, base, "cold")
    page.goto(f"{base}/media-bench-blank/")  # any page of the origin: its 404 will do
    results = [page.evaluate(BARE_VIDEO, f"{base}{src}") for src in sources]
    context.close()
    return results


def percentiles(values: list[float]) -> str:
    """p50 and p95 of ``values``, for the table."""
    if not values:
        return "no samples"
    p50, p95 = harness.percentiles(values, (50, 95), digits=6)
    return f"{p50:7.1f} {p95:7.1f}"


def first_frame(tasks: int, seconds: float, dwell: int, sources: str | None) -> None:
    """The ``--first-frame`` measurement (see the module's docstring)."""
    from tests.browser_support import CHROMIUM

    if not os.path.exists(CHROMIUM):
        raise SystemExit(f"{CHROMIUM} not found: install Debian's chromium")
    with harness.temporary_django() as tmp:
        campaign, videos, recording = first_frame_world(tmp, tasks, seconds, sources)
        version, anchor, cold, warm, shown, fetched = in_browser(tmp, campaign, videos, dwell)
        rows = by_format(videos, anchor, cold, warm, fetched)
        import av

        print(f"machine: {harness.machine()}; load average {os.getloadavg()[0]:.2f} (1 min) "
              f"at the end; headless Chromium {version}, PyAV {av.__version__}; "
              f"runserver + SQLite; {tasks} tasks per format, dwell {dwell} ms")  # fmt: skip
        first_frame_table(rows, shown)
        segment = rows["epic-segment"]["bytes"]
        whole = recording.stat().st_size
        length = probe(recording).duration
        print(f"5 s segment of the 1080p50 recording: {np.mean(segment) / 1e6:.2f} MB mean, "
              f"{max(segment) / 1e6:.2f} MB max fetched per task (n={len(segment)}); the whole "
              f"recording ({length:.0f} s) is {whole / 1e6:.1f} MB, "
              f"{whole / length * 180 / 1e6:.0f} MB per 3 minutes at its rate; target <= 3 MB: "
              f"{'met' if segment and max(segment) <= SEGMENT_BYTES else 'MISSED'}")  # fmt: skip
        copy_cost()


def first_frame_world(tmp: Path, tasks: int, seconds: float, sources: str | None):
    """The sources (made, or an earlier run's), imported and their copies made, a campaign
    of each video with its own caption and its two annotators: (campaign, videos,
    the 1080p50 recording)."""
    from django.core.management import call_command

    from retrieval.models import Dataset, Video
    from tests.media_support import import_records

    folder = Path(sources) if sources else tmp / "source"
    listing = folder / "records.json"
    if listing.is_file():
        saved = json.loads(listing.read_text())
        records, recording = saved["records"], folder / saved["recording"]
        print(f"sources from {folder} (made by an earlier run)")
    else:
        took, (records, recording) = harness.once(make_sources, folder, tasks, seconds)
        listing.write_text(json.dumps({"records": records, "recording": recording.name}))
        print(f"sources made with PyAV in {took:.0f} s")
    took, summary = harness.once(
        import_records, records, folder, "firstframe", tmp / "captions.jsonl"
    )
    print(f"import_dataset --videos (its media jobs included where they run at once): "
          f"{took:.1f} s; {json.dumps(summary)[:300]}")  # fmt: skip
    out = tmp / "media.log"
    with open(out, "w") as log:
        took = harness.once(call_command, "media", dataset="firstframe", stdout=log)[0]
    print(f"manage.py media: {took:.1f} s; {out.read_text().strip().splitlines()[-7]}")
    dataset = Dataset.objects.get(name="firstframe")
    campaign = own_video_campaign(dataset)
    world.annotators([f"{USERNAME}-cold", f"{USERNAME}-warm"], PASSWORD)
    videos = list(Video.objects.filter(dataset=dataset).select_related("derived"))
    return campaign, videos, recording


def in_browser(tmp: Path, campaign, videos, dwell: int):
    """The bare-video anchor, then every task judged cold and warm, in headless Chromium
    against runserver: (its version, anchor, cold, warm, shown, bytes fetched)."""
    from django.db import connections
    from judge_latency import runserver

    from tests.browser_support import launch

    connections.close_all()
    with runserver(tmp) as base:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = launch(playwright)
            version = browser.version
            anchor = bare_video(browser, base, [v.source_url + v.media_fragment for v in videos])
            cold, _, fetched = judge_all(browser, base, campaign, dwell, cold=True)
            warm, shown, _ = judge_all(browser, base, campaign, dwell, cold=False)
            browser.close()

    return version, anchor, cold, warm, shown, fetched


def by_format(videos, anchor, cold, warm, fetched) -> dict[str, dict]:
    """First-frame times (anchor, cold, warm), bytes per task, broken tasks and what the
    files are served as (their copy's kind, or "as is"), per format."""
    format_of = {v.key: v.key.rsplit("-", 1)[0] for v in videos}
    served = {video.source_url: video.key for video in videos}
    owner = {video.poster_url: video.key for video in videos if video.poster_url} | served

    def path_of(url: str) -> str:
        return "/" + url.split("#")[0].split("/", 3)[-1]

    rows = {name: {"anchor": [], "cold": [], "warm": [], "bytes": [], "broken": 0,
                   "served": set()} for name in FORMATS}  # fmt: skip
    for video, result in zip(videos, anchor, strict=True):
        rows[format_of[video.key]]["served"].add(video.derived.kind if video.derived else "as is")
        if "ms" in result:
            rows[format_of[video.key]]["anchor"].append(result["ms"])
        else:
            print(f"  anchor: {video.key} gave {result['error']}")
    for mode, found in (("cold", cold), ("warm", warm)):
        for record in found:
            name = format_of.get(served.get(path_of(record["src"]), "?"))
            if name is None:
                print(f"  {mode}: a task of unknown source {record['src']}")
            elif record["state"] == "broken":
                rows[name]["broken"] += 1
            else:
                rows[name][mode].append(record["ms"])
    per_task = Counter()  # a task's video and its poster
    for url, size in fetched.items():
        if path_of(url) in owner:
            per_task[owner[path_of(url)]] += size
    for key, size in per_task.items():
        rows[format_of[key]]["bytes"].append(size)
    return rows


def first_frame_table(rows: dict[str, dict], shown) -> None:
    """The table of first frames per format, against the targets."""
    preloaded = sum(bool(d.get("preloaded")) for d in shown[1:])

    print(
        "first frame, ms (p50 p95); cold: ?nopreload in a fresh context; warm: the page's "
        f"preloading ({preloaded}/{max(0, len(shown) - 1)} warm tasks from the preloaded "
        "player); anchor: a bare <video> on the same served file"
    )
    print(f"{'format':<14} {'served as':<10} {'anchor':>15} {'cold':>15} {'warm':>15} "
          f"{'KB/task':>8} {'broken':>6}")  # fmt: skip
    every = {"cold": [], "warm": [], "anchor": []}
    for name, row in rows.items():
        for mode in every:
            every[mode] += row[mode]
        kilobytes = np.mean(row["bytes"]) / 1000 if row["bytes"] else float("nan")
        print(f"{name:<14} {'/'.join(sorted(row['served'])):<10} "
              f"{percentiles(row['anchor']):>15} {percentiles(row['cold']):>15} "
              f"{percentiles(row['warm']):>15} {kilobytes:>8.0f} {row['broken']:>6}")  # fmt: skip
    print(f"{'all':<14} {'':<10} {percentiles(every['anchor']):>15} "
          f"{percentiles(every['cold']):>15} {percentiles(every['warm']):>15}")  # fmt: skip
    playable = [d["ms"] for d in shown[1:]]
    print(f"warm, key press to playable (the page's firepool:shown, readyState >= 3): "
          f"p50 p95 {percentiles(playable)} (n={len(playable)})")  # fmt: skip
    for mode, limit in FIRST_FRAME_MS.items():
        worst = max(float(np.percentile(row[mode], 95)) for row in rows.values() if row[mode])
        verdict = "met" if worst <= limit else "MISSED"
        print(f"target {mode}: p95 <= {limit:g} ms per format: {verdict} (worst {worst:.1f})")


def copy_cost() -> None:
    """What each format's copies cost (``manage.py media``), and MSVD's and EPIC's at it."""
    from retrieval.models import DerivedMedia

    print(
        "copy cost per format (manage.py media above; source s per wall s on this machine, "
        "bytes per source s)"
    )
    cost = {}
    for name in FORMATS:
        made = DerivedMedia.objects.filter(videos__key__startswith=f"{name}-").distinct()
        totals = [(r.source_seconds, r.encode_seconds, r.bytes) for r in made]
        if not totals:
            print(f"  {name:<14} plays as it is: no copy")
            continue
        source_s, wall_s, size = (sum(column) for column in zip(*totals, strict=True))
        cost[name] = (source_s / wall_s, size / source_s)
        print(
            f"  {name:<14} {len(totals)} files, {source_s:.1f} s of video in {wall_s:.1f} s:"
            f" {source_s / wall_s:.2f} s/s, {size / source_s / 1e3:.0f} KB per source s"
        )
    if "msvd-avi" in cost:
        rate, per_second = cost["msvd-avi"]
        video_s = MSVD_CLIPS * MSVD_MEAN_SECONDS
        print(f"MSVD: {MSVD_CLIPS} clips x {MSVD_MEAN_SECONDS:g} s (assumed mean) = "
              f"{video_s / 3600:.1f} h of video: {video_s / rate / 60:.0f} min of wall time on "
              f"one worker, {video_s * per_second / 1e9:.2f} GB of copies")  # fmt: skip
    if "epic-segment" in cost:
        rate, per_second = cost["epic-segment"]
        video_s = EPIC_SEGMENTS * (SEGMENT_SECONDS + 2 * EPIC_MARGIN)
        print(f"EPIC-KITCHENS hour, {EPIC_SEGMENTS} segments x ({SEGMENT_SECONDS:g} s + 2 x "
              f"{EPIC_MARGIN:g} s margin) = {video_s:.0f} s of 1080p50 to cut: "
              f"{video_s / rate / 60:.1f} min of wall time on one worker, "
              f"{video_s * per_second / 1e6:.0f} MB of clips")  # fmt: skip


def main() -> None:
    options = harness.parser(__doc__)
    options.add_argument("--copies", action="store_true", help="browser copies vs ffmpeg")
    options.add_argument(
        "--first-frame", action="store_true", help="first frame in Chromium per format, bytes, cost"
    )
    options.add_argument("--seconds", type=float, default=4.0, help="seconds per source")
    options.add_argument("--repeat", type=int, default=3)
    options.add_argument("--tasks", type=int, default=6, help="--first-frame: tasks per format")
    options.add_argument("--dwell", type=int, default=1200, help="--first-frame: ms per task")
    options.add_argument(
        "--sources", help="--first-frame: a folder to keep the sources in and reuse them from"
    )
    args = options.parse_args()
    if args.copies:
        copies(args.seconds, args.repeat)
    if args.first_frame:
        first_frame(args.tasks, min(args.seconds, 3.0), args.dwell, args.sources)
    if not (args.copies or args.first_frame):
        options.error("choose a part: --copies and/or --first-frame")


if __name__ == "__main__":
    main()
