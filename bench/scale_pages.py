"""Time every page, JSON endpoint and label export of a FIRE-scale campaign on PostgreSQL.

Builds once in ``--db-name`` (reused later; ``--rebuild``) an MSVD-like campaign through the
services (~553,000 pairs, ~679,000 labels of 100 annotators, ties half adjudicated, a label
set, proxies cached), then requests each GET page ``--repeats`` times through the test client
as a superuser (``DJANGO_DEBUG=0``), each request in a child forked from one warm process:
the median time, first byte, peak RSS rise and status beside the targets, with a
``SELECT count(*)`` anchor. ``--figures``: stored figures computed by their jobs first
(``jobs``), dropped (``forget``) or kept (``keep``)::

    .venv/bin/python bench/scale_pages.py [--rebuild] [--only agreement] [--json rows.json]
    .venv/bin/python bench/scale_pages.py --db-name firepool_scale_small \\
        --queries 1500 --videos 100 --annotators 20    # a small build, to try it
"""

import contextlib
import gc
import json
import logging
import os
import pkgutil
import resource
import shutil
import signal
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlencode, urlsplit

import numpy as np
import world
from harness import (
    ROOT,
    anchor_count,
    create_database,
    database_url,
    log,
    machine,
    parser,
    postgres_server,
    setup_django,
)

FIRE_PAIRS, FIRE_LABELS = 552_880, 679_232  # FIRE's MSVD campaign: the labels scale by it
DATASET, CAMPAIGN, ADMIN = "msvd-scale", "fire-scale", "scale-admin"
BUILD_VERSION = 1  # bump when the build changes, so an older build is not reused
PAGE_SECONDS, PAGE_MB = 1.0, 300.0
EXPORT_SECONDS, EXPORT_FIRST_BYTE, EXPORT_MB = 4.0, 0.5, 50.0
CANDIDATES = 38  # videos a query's runs choose from besides its own (overlapping runs)
RUN_NOISE, RUN_BOOSTS = 2.0, (3.0, 2.6, 2.2)  # each run's own noise; the own video's boost
JOB_WAIT_SECONDS = 1800


def stored_build(url: str) -> dict | None:
    """What an earlier run recorded of its build in ``url``'s database (None: nothing)."""
    import psycopg

    try:
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT metadata FROM retrieval_dataset WHERE name = %s", [DATASET]
            ).fetchone()
    except psycopg.Error:
        return None
    return (row[0] or {}).get("scale_pages") if row else None


def prepare_database(server: str, name: str, rebuild: bool, params: dict) -> bool:
    """Create the database when missing (dropping it first with ``rebuild``, or when it
    holds no finished build); whether a finished build of ``params`` is there to reuse."""
    if not rebuild and create_database(server, name, drop=False):
        built = stored_build(database_url(server, name))
        if built and built.get("complete"):
            if built.get("params") != params:
                raise SystemExit(
                    f"database {name} holds a build of {built.get('params')}, not of "
                    f"{params}: pass the same sizes, --rebuild, or another --db-name"
                )
            return True
        log(f"database {name} holds no finished build: building it again")
    create_database(server, name)
    log(f"created database {name}")
    return False


def django_as_deployed(url: str, var: Path) -> None:
    """Django on ``url`` as a deployment runs it (``DJANGO_DEBUG=0``), migrated."""
    var.mkdir(parents=True, exist_ok=True)
    wordnet = ROOT / "var" / "nltk_data"  # what `make run` installed, for the syn proxy
    if wordnet.is_dir():
        os.environ.setdefault("FIREPOOL_NLTK_DATA", str(wordnet))
    took = setup_django(
        {
            "FIREPOOL_VAR_DIR": str(var),
            "DATABASE_URL": url,
            "DATABASE_CONN_MAX_AGE": "600",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "firepool-scale-pages-" + uuid.uuid4().hex,
            "DJANGO_SECURE_SSL_REDIRECT": "0",
        }
    )
    log(f"migrated ({took:.1f} s)")
    from django.core.management import call_command

    # Pages name their static files by the manifest a deployment's collectstatic writes.
    call_command("collectstatic", interactive=False, verbosity=0)
    # A failing request is listed with its exception, not logged with its traceback.
    logging.getLogger("django.request").setLevel(logging.CRITICAL)


def latest_job() -> int:
    from jobs.models import Job

    return Job.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def wait_for_jobs(after: int, quiet: bool = False) -> int:
    """Wait until the jobs created after job ``after`` have finished; how many there were."""
    from jobs.models import Job
    from jobs.runner import UNFINISHED

    began = time.monotonic()
    said = 0.0
    while True:
        started = Job.objects.filter(pk__gt=after)
        waiting = list(started.filter(status__in=UNFINISHED).values_list("kind", flat=True))
        if not waiting or time.monotonic() - began > JOB_WAIT_SECONDS:
            return started.count()
        if not quiet and time.monotonic() - said > 10:
            log(f"waiting for jobs: {', '.join(waiting)}")
            said = time.monotonic()
        time.sleep(0.5)


# -- the build ----------------------------------------------------------------------------


@dataclass
class World:
    """What the build made, as arrays in primary-key order."""

    media: world.Media
    own: np.ndarray  # video index of each caption
    candidates: np.ndarray  # [queries x CANDIDATES] video indices
    affinity: np.ndarray  # [queries x CANDIDATES]


def make_world(args, rng) -> World:
    """The dataset, its videos and captions, and each query's candidate videos."""
    from retrieval.models import Dataset

    dataset = Dataset.objects.create(
        name=DATASET,
        description="MSVD-like synthetic world of bench/scale_pages.py",
        source_format="synthetic",
    )
    action = rng.integers(0, len(world.ACTIONS), args.videos)
    subject = rng.integers(0, len(world.SUBJECTS), args.videos)
    duration = np.round(rng.uniform(4, 30, args.videos), 2)
    own = np.arange(args.queries) % args.videos  # ~41 captions per video, as MSVD's test split
    texts = world.caption_texts(own, action, subject, rng)
    media = world.media(
        dataset, args.videos, own, texts, "video{:05d}", "caption{:06d}", {"duration": duration}
    )
    # Candidates: videos other than the caption's own, those of the same action six times as
    # likely (Gumbel top-k), each with an affinity the runs share (so runs overlap partly).
    n_cand = min(max(CANDIDATES, 2 * args.depth), args.videos - 1)
    candidates = np.empty((args.queries, n_cand), dtype=np.int64)
    for low in range(0, args.queries, 2000):
        rows = np.arange(low, min(low + 2000, args.queries))
        same = action[None, :] == action[own[rows], None]
        keys = np.where(same, np.log(6.0), 0.0) + rng.gumbel(size=(len(rows), args.videos))
        keys[np.arange(len(rows)), own[rows]] = -np.inf
        candidates[rows] = np.argpartition(-keys, n_cand - 1, axis=1)[:, :n_cand]
    same_action = action[candidates] == action[own][:, None]
    same_subject = subject[candidates] == subject[own][:, None]
    affinity = 1.8 * same_action + 0.6 * same_subject + rng.normal(size=candidates.shape)
    log(f"dataset {DATASET}: {args.videos:,} videos, {args.queries:,} query captions")
    return World(media, own, candidates, affinity)


def make_runs(args, built: World, rng) -> list:
    """``--runs`` runs of top-``--depth`` lists, stored with the project's ``store_run``."""
    columns = np.concatenate([built.own[:, None], built.candidates], axis=1)
    base = np.concatenate([np.full((len(built.own), 1), 2.4), built.affinity], axis=1)
    items, scores, names = [], [], []
    for r in range(args.runs):
        noisy = base + rng.normal(scale=RUN_NOISE, size=base.shape)
        noisy[:, 0] += RUN_BOOSTS[r % len(RUN_BOOSTS)]
        order = np.argsort(-noisy, axis=1)[:, : args.depth]
        items.append(built.media.video_pks[np.take_along_axis(columns, order, axis=1)])
        scores.append(np.take_along_axis(noisy, order, axis=1))
        names.append(f"model-{chr(ord('a') + r)}" if r < 26 else f"model-{r}")
        recall = float((order[:, 0] == 0).mean())
        log(f"run {names[-1]}: top-{args.depth} of {len(built.own):,} queries (R@1 {recall:.2f})")
    return world.runs(built.media, items, scores, names)


def label_plan(args, truth: np.ndarray, double: np.ndarray, rng) -> world.LabelPlan:
    """FIRE's labels (:func:`world.label_plan`) of annotators who differ in care (a few
    sloppy, one or two near random), in workload and in pace."""
    n_ann = args.annotators
    error = rng.uniform(0.01, 0.04, n_ann)
    error[rng.permutation(n_ann)[: max(1, n_ann // 20)]] = 0.15
    error[rng.permutation(n_ann)[: max(1, n_ann // 50)]] = 0.45
    share = rng.lognormal(0.0, 0.8, n_ann)
    return world.label_plan(truth, double, args.labels, error, rng, share, pace_spread=0.3)


def build(args) -> dict:
    """Build the world, the campaign, its labels and label set; what was built."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from annotation.campaign_read.resolution import resolve_campaign
    from annotation.campaigns.service import CampaignSpec, create_campaign
    from annotation.judging import pair_state
    from annotation.models import Pair
    from retrieval.label_sets.status import IRRELEVANT, RELEVANT

    timings = {}
    rng = np.random.default_rng(args.seed)

    @contextlib.contextmanager
    def step(name: str) -> Iterator[list[str]]:
        """Time the block as ``name`` (or the name it puts in the yielded list)."""
        began, named = time.perf_counter(), [name]
        yield named
        timings[named[-1]] = round(time.perf_counter() - began, 1)
        log(f"{named[-1]}: {timings[named[-1]]} s")

    with step("dataset and people"):
        built = make_world(args, rng)
        # The superuser who browses and adjudicates, and the annotators (in the annotator role).
        admin = get_user_model().objects.create_superuser(ADMIN, "scale-admin@example.org", None)
        user_pks = world.annotators([f"scale-annotator{i:03d}" for i in range(args.annotators)])
        log(f"{args.annotators} annotators and the superuser {ADMIN}")
    with step("runs"):
        runs = make_runs(args, built, rng)
    with step("create_campaign (pool and write pairs)"):
        dataset = runs[0].dataset
        spec = CampaignSpec(name=CAMPAIGN, depth=args.depth)
        campaign = create_campaign(dataset, runs, spec, created_by=admin)
    pairs = np.array(
        Pair.objects.filter(campaign=campaign)
        .order_by("pk")
        .values_list("pk", "caption_id", "video_id", "double")
    )
    pair_pks, double = pairs[:, 0], pairs[:, 3].astype(bool)
    log(f"campaign {CAMPAIGN}: {len(pair_pks):,} pairs (FIRE: {FIRE_PAIRS:,})")

    # A pair's truth: its caption's candidate video's affinity (pooled pairs are candidates).
    query = np.searchsorted(built.media.caption_pks, pairs[:, 1])
    video = np.searchsorted(built.media.video_pks, pairs[:, 2])
    column = (built.candidates[query] == video[:, None]).argmax(axis=1)
    truth = built.affinity[query, column] > 1.9
    if args.labels is None:
        args.labels = round(len(pair_pks) * FIRE_LABELS / FIRE_PAIRS)
    with step("labels (COPY)"):
        plan = label_plan(args, truth, double, rng)
        written = world.judgements(plan, pair_pks, user_pks, rng)
    log(f"{len(plan.pair):,} live labels ({written:,} rows with the undone ones)")
    with step("pair counts (pair_state.recount_labels)"):
        # 1,000 pairs a call: recount_labels' bulk_update writes CASE statements whose cost
        # grows with the square of their length (5,000 a call took twice as long per pair).
        chunk = 1000
        for low in range(0, len(pair_pks), chunk):
            ids = pair_pks[low : low + chunk].tolist()
            with transaction.atomic():
                pair_state.lock_pairs(ids)
                pair_state.recount_labels(ids, campaign)
            done = min(low + chunk, len(pair_pks))
            if done % 20_000 == 0 or done == len(pair_pks):
                log(f"  pairs recounted: {done:,} of {len(pair_pks):,}")
    with step("adjudication") as named:
        truth_of = dict(zip(pair_pks.tolist(), truth.tolist(), strict=True))
        ties = list(
            Pair.objects.filter(campaign=campaign, status=Pair.Status.DISAGREEMENT).order_by("pk")
        )
        for pair in ties[: len(ties) // 2]:
            pair.campaign = campaign  # already loaded: not once per pair, with its provenance
            label = RELEVANT.label if truth_of[pair.pk] else IRRELEVANT.label
            with transaction.atomic():
                pair_state.lock_pairs([pair.pk])
                pair_state.adjudicate(pair, admin, label)
        named.append(f"adjudication ({len(ties) // 2} of {len(ties)} disagreements)")
    with step("resolve_campaign"):
        jobs_before = latest_job()
        label_set = resolve_campaign(campaign)
        wait_for_jobs(jobs_before)
    log(
        f"label set {label_set.name}: {label_set.pair_count:,} pairs, "
        f"{label_set.relevant_count:,} relevant, {label_set.disagreement_count:,} disagreements"
    )
    with step("semantic proxies"):
        make_proxies(args, dataset)
    return {
        "pairs": len(pair_pks),
        "labels": len(plan.pair),
        "judgement_rows": written,
        "relevant_pairs": int(truth.sum()),
        "seconds": timings,
    }


def make_proxies(args, dataset) -> None:
    """Cache the semantic-proxy matrices the agreement and report pages read."""
    from retrieval.proxies import PROXIES
    from retrieval.proxies.service import ProxyOptions, proxy_relevance

    if args.proxies == "none":
        return
    wanted = PROXIES if args.proxies == "all" else [p for p in args.proxies.split(",") if p]
    for proxy in wanted:
        began = time.perf_counter()
        try:
            proxy_relevance(dataset, ProxyOptions(proxy, split="test"), workers=args.workers)
        except Exception as exc:  # a proxy that cannot be computed here: the page says so
            log(f"  proxy {proxy}: not cached ({type(exc).__name__}: {exc})")
            continue
        log(f"  proxy {proxy}: {time.perf_counter() - began:.1f} s")


# -- the pages ----------------------------------------------------------------------------


@dataclass
class Row:
    """A URL to time (a page, an endpoint or an export) and, once timed, its figures."""

    page: str
    url: str
    export: bool
    statuses: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    first_byte: list[float] = field(default_factory=list)
    bytes: int = 0
    mb: float = 0.0
    jobs: int = 0
    crashes: int = 0
    error: str = ""
    median_s: float | None = None
    first_byte_s: float | None = None
    target: str = ""
    met: str = ""


def page(name: str, view: str, *args, query: dict | None = None, export: bool = False) -> Row:
    """The page ``name``: the URL of ``view`` with ``args``, and ``query`` when given."""
    from django.urls import reverse

    return Row(name, reverse(view, args=args) + ("?" + urlencode(query) if query else ""), export)


def pages() -> list[Row]:
    """Every GET page and endpoint naming the campaign, its dataset, label set, runs, people
    or jobs, a few list pages, the API and the admin's lists and change pages."""
    from django.db.models import Count

    from annotation.campaign_read.exports import EXPORT_FORMATS
    from annotation.models import Campaign, Judgement
    from jobs.models import Job
    from retrieval.models import Dataset, LabelSet
    from retrieval.scoring.views import LEADERBOARD_EXPORTS

    campaign = Campaign.objects.defer("provenance").get(name=CAMPAIGN)
    dataset = Dataset.objects.get(name=DATASET)
    label_set = LabelSet.objects.defer("arrays").filter(dataset=dataset).order_by("pk").first()
    runs = list(dataset.runs.defer("arrays").select_related("model").order_by("name"))
    busiest = (
        Judgement.objects.filter(pair__campaign=campaign)
        .values("annotator_id")
        .annotate(n=Count("pk"))
        .order_by("-n")
        .values_list("annotator_id", flat=True)
        .first()
    )
    judgement = Judgement.objects.filter(pair__campaign=campaign).order_by("pk").first()
    pair = campaign.pairs.order_by("pk").first()
    job = Job.objects.order_by("-pk").first()
    c, d = campaign.pk, dataset.name
    ls = {"labels": label_set.name} if label_set else {}
    listed = [
        page("anchor: tokens page (tiny)", "account-tokens"),
        page("home", "home"),
        page("judging list", "judge-campaigns"),
        page("judging page", "judge", c),
        page("campaigns", "campaigns"),
        page("campaign", "campaign", c),
        page("campaign edit", "campaign-edit", c),
        page("campaign close (confirm)", "campaign-status", c, query={"action": "close"}),
        page("agreement", "campaign-agreement", c),
        page("annotators", "campaign-annotators", c),
        page("adjudication", "campaign-adjudicate", c),
        page("resolve (confirm)", "campaign-resolve", c),
        page("promote decided to gold (count)", "campaign-gold-promote", c),
        page("new campaign form", "campaign-new", query={"dataset": d}),
    ]
    if busiest is not None:
        listed.append(
            page("discount an annotator (preview)", "campaign-annotator-discount", c, busiest)
        )
    listed += [
        page(f"label export {fmt}", "campaign-export", c, fmt, export=True)
        for fmt in EXPORT_FORMATS
    ]
    if runs and label_set:
        query = {"run": runs[0].name, **ls}
        listed.append(page("judge what is missing", "campaign-missing", d, query=query))
    listed += [  # the dataset's pages (its leaderboard, models, label sets, reports), the jobs'
        page("datasets", "datasets"),
        page("dataset", "dataset", d),
        page("leaderboard", "leaderboard", d),
        *(page(f"leaderboard {fmt}", "leaderboard-export", d, fmt) for fmt in LEADERBOARD_EXPORTS),
        page("add model form", "add-model", d),
        *(page(f"model {run.model.name}", "dataset-model", d, run.model.name) for run in runs[:1]),
        page("label sets", "label-sets"),
        page("reports", "reports"),
        page("report", "report", d),
        page("report data", "report-data", d),
        page("judging orders", "judging-orders", d, query=ls),
        page("jobs", "jobs"),
    ]
    if job is not None:
        listed += [page("job", "job-detail", job.pk), page("job status", "job-status", job.pk)]
    listed += [
        page("api root", "api-root"),
        page("api campaigns", "campaign-list"),
        page("api campaign", "campaign-detail", c),
        page("api progress", "campaign-progress", c),
        page("annotator-scores api", "campaign-annotator-scores", c),
        page("api schema", "schema"),
        page("api docs", "api-docs"),
    ]
    return listed + admin_pages(campaign, dataset, label_set, pair, judgement, job)


def admin_pages(campaign, dataset, label_set, pair, judgement, job) -> list[Row]:
    """The admin's lists, and the change pages of the campaign's objects."""
    from django.contrib import admin
    from django.contrib.auth import get_user_model

    def admin_page(what: str, opts, view: str, *args) -> Row:
        name = f"{opts.app_label}.{opts.model_name}"
        return page(f"admin {what} {name}", f"admin:{name.replace('.', '_')}_{view}", *args)

    listed = [page("admin index", "admin:index")]
    listed += [admin_page("list", model._meta, "changelist") for model in admin.site._registry]
    annotator = get_user_model().objects.filter(username__startswith="scale-annotator").first()
    listed += [
        admin_page("change", obj._meta, "change", obj.pk)
        for obj in (campaign, dataset, label_set, pair, judgement, annotator, job)
        if obj is not None and type(obj) in admin.site._registry
    ]
    return listed


def not_timed(timed: list[Row]) -> list[str]:
    """Names in the URL map (outside the admin) that no timed URL reaches: POST-only views
    and those needing an object the build does not make."""
    from django.urls import URLPattern, URLResolver, get_resolver, resolve

    def names(patterns, namespace: str = ""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.namespace != "admin":
                    yield from names(pattern.url_patterns, pattern.namespace or namespace)
            elif isinstance(pattern, URLPattern) and pattern.name:
                yield pattern.name

    reached = {resolve(urlsplit(row.url).path).url_name for row in timed}
    return sorted(set(names(get_resolver().url_patterns)) - reached)


def warm_process() -> None:
    """Import what the views import lazily and compile the project's templates, as a
    worker that has served these pages once has: a child pays only for its request."""
    from django.template import TemplateDoesNotExist
    from django.template.loader import get_template

    skipped = (
        ".migrations",
        ".management",
        "retrieval.encoders",
        "retrieval.search.index",
        "retrieval.datasets.demo",
    )
    for package in ("config", "jobs", "annotation", "retrieval"):
        module = __import__(package)
        for info in pkgutil.walk_packages(module.__path__, package + "."):
            if any(part in info.name for part in skipped):
                continue
            try:
                __import__(info.name)
            except Exception as exc:  # a module that cannot load here is not a page's
                log(f"  not imported: {info.name} ({type(exc).__name__})")
    for path in (ROOT / "templates").rglob("*.html"):
        try:
            get_template(path.relative_to(ROOT / "templates").as_posix())
        except TemplateDoesNotExist:
            pass
        except Exception as exc:
            log(f"  template not compiled: {path.name} ({type(exc).__name__})")


def release_free_memory() -> None:
    """Give the C heap's free memory back to the system (glibc), so that a child's request
    cannot grow into memory this process freed without its peak RSS rising."""
    import ctypes
    import ctypes.util

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0)


class RequestTimeout(BaseException):
    """Raised in a child whose request ran past ``--request-timeout`` (not an Exception, so
    Django's handler does not turn it into a 500)."""


def _alarm(signum, frame):
    raise RequestTimeout


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def request_once(client, url: str, timeout: int) -> dict:
    """In the child: one GET, read to its last byte; times, size, status, memory rise."""
    before_jobs = latest_job()  # also opens the child's connection, kept as a worker keeps it
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    start_mb = peak_mb()
    began = time.perf_counter()
    response = client.get(url)
    first, size = None, 0
    if response.streaming:
        for chunk in response.streaming_content:
            if first is None:
                first = time.perf_counter() - began
            size += len(chunk)
        response.close()
    else:
        size = len(response.content)
    last = time.perf_counter() - began
    first = last if first is None else first
    signal.alarm(0)
    result = {
        "status": response.status_code,
        "seconds": last,
        "first_byte": first,
        "bytes": size,
        "mb": peak_mb() - start_mb,
    }
    exc_info = getattr(response, "exc_info", None)
    if exc_info:
        result["error"] = f"{exc_info[0].__name__}: {str(exc_info[1])[:300]}{where(exc_info[2])}"
    elif response.status_code >= 300 and response.status_code != 304:
        target = response.get("Location", "")
        result["error"] = f"HTTP {response.status_code}" + (f" to {target}" if target else "")
    result["jobs"] = wait_for_jobs(before_jobs, quiet=True)
    return result


def where(trace) -> str:
    """`` at file:line`` of the innermost frame of the project's own code in ``trace``."""
    import traceback

    for frame in reversed(traceback.extract_tb(trace)):
        if frame.filename.startswith(str(ROOT)) and "/.venv/" not in frame.filename:
            return f" (at {Path(frame.filename).relative_to(ROOT)}:{frame.lineno})"
    return ""


def in_child(fill: Callable[[dict], None]) -> tuple[dict | None, int]:
    """Run ``fill`` on a dict in a forked child (no connection shared with this process);
    the dict as it was when ``fill`` ended or raised (None if the child died), and the
    child's wait status."""
    from django.db import connections

    connections.close_all()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        result: dict = {}
        try:
            fill(result)
        finally:
            with os.fdopen(write_end, "w") as pipe:
                pipe.write(json.dumps(result))
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        text = pipe.read()
    _, status = os.waitpid(pid, 0)
    return (json.loads(text) if text else None), status


def measure(client, url: str, timeout: int) -> dict:
    """One request in a forked child; its figures."""

    def fill(result: dict) -> None:
        try:
            result.update(request_once(client, url, timeout))
        except RequestTimeout:
            result["crash"] = f"no answer within {timeout} s"
        except BaseException as exc:
            result["crash"] = f"{type(exc).__name__}: {str(exc)[:300]}"

    result, status = in_child(fill)
    if result is None:
        return {"crash": f"the child died (wait status {status}; out of memory?)"}
    return result


def judge_row(row: Row) -> None:
    """Median, target and whether it is met."""
    limit, most_mb = (EXPORT_SECONDS, EXPORT_MB) if row.export else (PAGE_SECONDS, PAGE_MB)
    first_byte = f"first byte ≤ {EXPORT_FIRST_BYTE:g} s, " if row.export else ""
    row.target = f"≤ {limit:g} s, {first_byte}≤ +{most_mb:g} MB"
    bad = sorted({s for s in row.statuses if s != 200})
    misses = []
    if row.crashes:
        misses.append(f"{row.crashes} request{'s' if row.crashes > 1 else ''} failed")
    if bad:
        misses.append("HTTP " + "/".join(map(str, bad)))
    if row.seconds:
        row.median_s = statistics.median(row.seconds)
        row.first_byte_s = statistics.median(row.first_byte)
        if row.median_s > limit:
            misses.append(f"{row.median_s:.2f} s")
        if row.export and row.first_byte_s > EXPORT_FIRST_BYTE:
            misses.append(f"first byte {row.first_byte_s:.2f} s")
        if row.mb > most_mb:
            misses.append(f"+{row.mb:.0f} MB")
    row.met = "yes" if not misses else "no: " + ", ".join(misses)


def prepare_figures(how: str) -> dict[str, float]:
    """Drop the stored figures unless ``how`` is "keep"; with "jobs", run the jobs that
    compute them in a forked child (as a worker would) and return each job's seconds."""
    from jobs.models import StoredFigure

    if how == "keep":
        return {}
    deleted, _ = StoredFigure.objects.all().delete()
    log(f"dropped {deleted} stored figures")
    if how == "forget":
        return {}

    def run_jobs(took: dict) -> None:
        from annotation.models import Campaign
        from jobs.registry import get_kind
        from jobs.runner import check_arguments
        from retrieval.models import LabelSet

        quiet = SimpleNamespace(step=lambda *args, **kwargs: None)  # the progress goes nowhere
        work = [
            ("label-set-figures", {"dataset": s.dataset.name, "labels": s.name})
            for s in LabelSet.objects.select_related("dataset").defer("arrays")
        ]
        work += [("campaign-figures", {"campaign": c.name}) for c in Campaign.objects.all()]
        for kind_name, data in work:
            kind = get_kind(kind_name)
            began = time.perf_counter()
            kind.run(quiet, **check_arguments(kind, data))
            took[f"{kind_name} {'/'.join(data.values())}"] = time.perf_counter() - began

    took = in_child(run_jobs)[0] or {}
    for name, seconds in took.items():
        log(f"  job {name}: {seconds:.1f} s")
    return took


def time_pages(args) -> list[Row]:
    from django.contrib.auth import get_user_model
    from django.db import connections
    from django.test import Client
    from django.urls import reverse

    rows = pages()
    skipped = not_timed(rows)
    if args.only:
        wanted = args.only.lower()
        rows = [r for r in rows if wanted in r.page.lower() or wanted in r.url.lower()]
    client = Client(raise_request_exception=False)
    client.force_login(get_user_model().objects.get(username=ADMIN))
    log("importing the views' modules and compiling templates")
    warm_process()
    # One tiny request builds the middleware chain (WhiteNoise's index of static files) and
    # the URL resolver's caches, once, as in a worker that has served a request.
    client.get(reverse("account-tokens"))
    connections.close_all()
    gc.collect()
    gc.freeze()  # the children's collections skip what they inherit (no copy-on-write)
    release_free_memory()
    log(f"timing {len(rows)} URLs, {args.repeats} requests each, each in a forked child")
    for row in rows:
        for _ in range(args.repeats):
            result = measure(client, row.url, args.request_timeout)
            if "crash" in result:
                row.error = result["crash"]
                row.crashes += 1
                continue
            row.statuses.append(result["status"])
            row.seconds.append(round(result["seconds"], 4))
            row.first_byte.append(round(result["first_byte"], 4))
            row.bytes = result["bytes"]
            row.mb = max(row.mb, round(result["mb"], 1))
            row.jobs = max(row.jobs, result["jobs"])
            row.error = result.get("error", row.error)
        judge_row(row)
        median = "-" if row.median_s is None else f"{row.median_s:.3f} s"
        log(f"  {row.page}: {median}, {row.bytes:,} bytes, +{row.mb:.0f} MB, {row.met}")
    if skipped:
        log("URL names not timed (POST-only, or no such object here): " + ", ".join(skipped))
    return rows


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| page | URL | median s | first byte s | bytes | +MB | target | met |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        median, first = ("-" if s is None else f"{s:.3f}" for s in (r.median_s, r.first_byte_s))
        lines.append(
            f"| {r.page} | `{r.url.replace('|', '%7C')}` | {median} | {first} | {r.bytes:,} "
            f"| {r.mb:.0f} | {r.target} | {r.met} |"
        )
    return "\n".join(lines)


def arguments():
    options = parser(__doc__, seed=True)
    options.add_argument("--database-url", help="a PostgreSQL server (default: DATABASE_URL)")
    options.add_argument("--db-name", default="firepool_scale", help="the dedicated database")
    options.add_argument("--var", type=Path, help="var dir (default /tmp/firepool-scale-var/DB)")
    options.add_argument("--rebuild", action="store_true", help="drop the database, build again")
    options.add_argument("--queries", type=int, default=27_763)
    options.add_argument("--videos", type=int, default=670)
    options.add_argument("--runs", type=int, default=3)
    options.add_argument("--depth", type=int, default=10)
    options.add_argument("--annotators", type=int, default=100)
    options.add_argument(
        "--labels",
        type=int,
        help=f"live labels in all (default: pairs x {FIRE_LABELS:,}/{FIRE_PAIRS:,})",
    )
    options.add_argument(
        "--proxies", default="all", help="proxies to cache: all, none or a list (bow,pos,syn,met)"
    )
    options.add_argument("--workers", type=int, default=0, help="METEOR processes (0: per core)")
    options.add_argument("--repeats", type=int, default=3, help="requests per URL (median)")
    options.add_argument("--only", help="time only URLs whose name or path contains this")
    options.add_argument("--request-timeout", type=int, default=900, help="seconds per request")
    options.add_argument("--json", type=Path, help="write the rows here")
    options.add_argument(
        "--figures",
        choices=["jobs", "forget", "keep"],
        default="jobs",
        help="stored figures before timing: computed by their jobs, dropped, or kept",
    )
    args = options.parse_args()
    if args.videos < 2 or args.annotators < world.MAX_LABELS:
        raise SystemExit(f"need at least 2 videos and {world.MAX_LABELS} annotators")
    return args


def build_or_reuse(args) -> dict:
    """The build recorded in the database: reused (its proxies cached again if need be), or
    made now, after which the script runs again in a fresh process (this one's freed memory
    would hide what requests allocate) and does not return."""
    sizes = ("queries", "videos", "runs", "depth", "annotators", "labels", "seed", "proxies")
    params = {"version": BUILD_VERSION, **{name: getattr(args, name) for name in sizes}}
    server = postgres_server(args.database_url)
    var = args.var or Path("/tmp/firepool-scale-var") / args.db_name
    reuse = prepare_database(server, args.db_name, args.rebuild, params)
    if not reuse:
        shutil.rmtree(var, ignore_errors=True)
    django_as_deployed(database_url(server, args.db_name), var)
    from retrieval.models import Dataset

    if reuse:
        dataset = Dataset.objects.get(name=DATASET)
        built = dataset.metadata["scale_pages"]
        log(f"reusing the build in {args.db_name} ({built['built_at']})")
        make_proxies(args, dataset)  # from the var dir's cache, or again if it was removed
        return built
    log(f"building in {args.db_name} (var {var})")
    began = time.perf_counter()
    built = {"params": params, **build(args)}
    built.update(complete=True, built_at=time.strftime("%Y-%m-%d %H:%M:%S"))
    built["seconds"]["total"] = round(time.perf_counter() - began, 1)
    dataset = Dataset.objects.get(name=DATASET)
    dataset.metadata = {**dataset.metadata, "scale_pages": built}
    dataset.save(update_fields=["metadata"])
    log(f"built in {built['seconds']['total']} s")
    again = [a for a in sys.argv if a != "--rebuild"]
    log("timing in a fresh process: " + " ".join(again))
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, *again])


def report(args, built: dict, rows: list[Row], anchor_s: float, figure_jobs: dict) -> None:
    """The table and its notes on stdout; the rows in ``--json``."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        on = f"{machine()}, PostgreSQL {cursor.fetchone()[0].split()[0]}"
    p = built["params"]
    print(f"\nmachine: {on}")
    print(
        f"world: {built['pairs']:,} pairs, {built['labels']:,} live labels "
        f"({built['judgement_rows']:,} rows), {p['annotators']} annotators, "
        f"{p['queries']:,} queries x {p['videos']:,} videos, {p['runs']} runs at depth "
        f"{p['depth']} (database {args.db_name}, built {built['built_at']})"
    )
    print(f"anchor: SELECT count(*) over the campaign's pairs, median {anchor_s * 1000:.1f} ms")
    print(
        f"{args.repeats} requests per URL, server-side in-process, DJANGO_DEBUG=0; "
        "median s to the last byte, +MB the largest rise of peak RSS"
    )
    print("\n" + table(rows))
    jobs = "; ".join(f"{name} {seconds:.1f} s" for name, seconds in figure_jobs.items())
    started = ", ".join(f"{r.page} ({r.jobs})" for r in rows if r.jobs)
    failed = [f"- {r.page} `{r.url}`: {r.error}" for r in rows if r.error]
    if jobs:
        print(f"\nStored figures computed by their jobs before timing: {jobs}")
    if started:
        print(f"\nRequests that started jobs (run to their end, untimed): {started}")
    if failed:
        print("\nErrors and answers other than 200:", *failed, sep="\n")
    if args.json:
        rows_json = [asdict(r) for r in rows]
        found = {"machine": on, "anchor_count_seconds": anchor_s, "build": built, "rows": rows_json}
        args.json.write_text(json.dumps(found, indent=2))


def main() -> None:
    args = arguments()
    built = build_or_reuse(args)
    figure_jobs = prepare_figures(args.figures)
    rows = time_pages(args)
    from django.db import connections

    from annotation.models import Campaign, Pair

    campaign = Campaign.objects.only("pk").get(name=CAMPAIGN)
    anchor_s = anchor_count(Pair, args.repeats, campaign=campaign.pk)
    connections.close_all()
    report(args, built, rows, anchor_s, figure_jobs)


if __name__ == "__main__":
    sys.exit(main())
