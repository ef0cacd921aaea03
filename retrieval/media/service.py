"""Browser copies, segment clips (a span plus a margin) and posters of a dataset's videos.

Each derived file is a :class:`DerivedMedia` row keyed by the source's fingerprint, the
settings and the span, so videos of one file share it; ``media`` jobs claim rows with a
conditional update (several workers side by side, stale claims taken over). A file that plays
as it is gets its first-frame poster under ``derived/posters/``, named in its ``probe``.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from config.batches import id_filters, rows_in
from config.errors import UserError
from jobs import runner
from jobs.models import Job
from retrieval.media.delivery import DERIVED_DIR
from retrieval.media.probe import SPAN_SLACK, CopySettings, Probe, clock, fingerprint, needs_copy
from retrieval.media.transcode import TranscodeError, make_copy, make_poster
from retrieval.models import AS_IS_POSTER_DIR, Dataset, DerivedMedia, Video, poster_name

MEDIA_JOB = "media"
STALE_CLAIM = timedelta(minutes=2)
"""A running row whose claim is older than this (no progress heard) is claimed again."""
WORKER = f"{socket.gethostname()}:{os.getpid()}"
FAILURES_SHOWN = 20
POSTER_BATCH = 200
"""Posters of files that play as they are are recorded this many videos at a time."""

Say = Callable[[str], object]
FROM_STATUS = {
    DerivedMedia.Status.READY: Video.MediaState.READY,
    DerivedMedia.Status.FAILED: Video.MediaState.FAILED,
}
"""What a video serves while its derived file has a status (finished ones)."""


class MediaError(UserError):
    """Browser files cannot be made as asked; the message says why."""


def copy_settings() -> CopySettings:
    """The deployment's copy settings (``FIREPOOL_MEDIA`` overrides the defaults)."""
    try:
        return CopySettings(**getattr(settings, "FIREPOOL_MEDIA", {}))
    except TypeError as exc:
        raise MediaError(f"FIREPOOL_MEDIA: {exc}") from None


def derivation(video: Video, copy: CopySettings) -> DerivedMedia | None:
    """The unsaved derived file a video with a probed file needs (None: its file as it is): a
    clip of its segment widened by ``copy.margin``, or a copy of a file not every browser plays.
    """
    probed = Probe.from_json(video.probe)
    duration = probed.duration
    first = video.start or 0.0
    last = video.end if video.end is not None else duration
    if first > SPAN_SLACK or last < duration - SPAN_SLACK:
        span = round(max(0.0, first - copy.margin), 3), round(min(duration, last + copy.margin), 3)
        kind = DerivedMedia.Kind.CLIP
    elif needs_copy(probed, copy):
        span, kind = (None, None), DerivedMedia.Kind.COPY
    else:
        return None
    parts = [kind, probed.fingerprint, copy.key(), *(f"{at:.3f}" for at in span if at is not None)]
    key = hashlib.sha256("|".join(parts).encode()).hexdigest()
    return DerivedMedia(
        key=key,
        kind=kind,
        source=video.media.name,
        fingerprint=probed.fingerprint,
        start=span[0],
        end=span[1],
        copy_settings=copy.__dict__,
        name=derived_name(key),
        source_seconds=duration if span[0] is None else span[1] - span[0],
    )


def derived_name(key: str) -> str:
    """Where a derived file lives under the media root."""
    return f"{DERIVED_DIR}/{key[:2]}/{key}.mp4"


def attach_derived(videos: list[Video], copy: CopySettings | None = None) -> int:
    """Give each unsaved video with a probed file the derived file it needs (rows made in
    bulk, shared by key with any existing ones); returns how many videos need one."""
    copy = copy or copy_settings()
    wanted: dict[str, DerivedMedia] = {}  # the first video's of each key
    needs: list[tuple[Video, str]] = []
    for video in videos:
        if not video.probe or not video.media:
            continue
        plan = derivation(video, copy)
        if plan is None:
            video.media_state = Video.MediaState.AS_IS
            continue
        wanted.setdefault(plan.key, plan)
        needs.append((video, plan.key))
        video.browser_start = plan.start
    if not needs:
        return 0
    DerivedMedia.objects.bulk_create(wanted.values(), ignore_conflicts=True, batch_size=1000)
    found = DerivedMedia.objects.values_list("key", "pk", "status", "name")
    rows = {key: row for key, *row in rows_in(found, "key", wanted, 500)}
    for video, key in needs:
        pk, status, name = rows[key]
        video.derived_id = pk
        # A failed row was made for another dataset, and failed.
        video.media_state = FROM_STATUS.get(status, Video.MediaState.PENDING)
        if status == DerivedMedia.Status.READY:
            video.browser_media = name
    return len(needs)


def queue_media(dataset: Dataset, user=None) -> None:
    """On commit, queue ``FIREPOOL_MEDIA_JOBS`` ``media`` jobs for the dataset (at most one per
    pending file; one if only posters are missing)."""

    def submit() -> None:
        wanted = max(1, int(getattr(settings, "FIREPOOL_MEDIA_JOBS", 1)))
        count = len(pending(dataset).values_list("pk", flat=True)[:wanted])
        for _ in range(count or int(missing_posters(dataset).exists())):
            runner.submit(MEDIA_JOB, {"dataset": dataset.name}, user)

    transaction.on_commit(submit)


def _files(dataset: Dataset, *where: Q, **fields):
    """The dataset's derived files that match, each once however many videos share it."""
    return DerivedMedia.objects.filter(*where, videos__dataset=dataset, **fields).distinct()


def pending(dataset: Dataset):
    """The dataset's derived files not made yet (pending, or running under a stale claim)."""
    stale = timezone.now() - STALE_CLAIM
    return _files(
        dataset,
        Q(status=DerivedMedia.Status.PENDING)
        | Q(status=DerivedMedia.Status.RUNNING, claimed_at__lt=stale),
    ).order_by("pk")


def retry_failed(dataset: Dataset) -> int:
    """Make the dataset's failed derived files pending again; how many."""
    ids = list(_files(dataset, status=DerivedMedia.Status.FAILED).values_list("pk", flat=True))
    with transaction.atomic():
        for where in id_filters("pk", ids):
            DerivedMedia.objects.filter(**where).update(
                status=DerivedMedia.Status.PENDING, error=""
            )
        for where in id_filters("derived_id", ids):
            Video.objects.filter(**where).update(media_state=Video.MediaState.PENDING)
    return len(ids)


def _claim(dataset: Dataset) -> DerivedMedia | None:
    """Claim the dataset's next derived file to make (None when none is left)."""
    stale = timezone.now() - STALE_CLAIM
    for pk, status in pending(dataset).values_list("pk", "status")[:50]:
        condition = Q(pk=pk, status=status)
        if status == DerivedMedia.Status.RUNNING:
            condition &= Q(claimed_at__lt=stale)
        claimed = DerivedMedia.objects.filter(condition).update(
            status=DerivedMedia.Status.RUNNING, worker=WORKER, claimed_at=timezone.now()
        )
        if claimed:
            return DerivedMedia.objects.get(pk=pk)
    return None


def missing_posters(dataset: Dataset):
    """The dataset's videos that play as they are and have no poster yet (none tried)."""
    return (
        Video.objects.filter(dataset=dataset, media_state=Video.MediaState.AS_IS)
        .exclude(media="")
        .filter(probe__has_key="fingerprint")
        .exclude(probe__has_key="poster")
    )


def as_is_poster_name(fingerprint: str) -> str:
    """Where the poster of a file that plays as it is lives under the media root."""
    return f"{AS_IS_POSTER_DIR}/{fingerprint[:2]}/{fingerprint}.jpg"


def make_as_is_posters(dataset: Dataset, say: Say = lambda text: None) -> int:
    """Make the first-frame poster of each file of the dataset that plays as it is and has none
    (once per file) and name it in the ``probe`` ("" if none could be made) every
    :data:`POSTER_BATCH` videos; how many posters were written."""
    root = Path(settings.MEDIA_ROOT)
    names: dict[str, str] = {}
    written = 0
    while batch := list(missing_posters(dataset).only("pk", "media", "probe")[:POSTER_BATCH]):
        for video in batch:
            key = video.probe["fingerprint"]
            if key not in names:
                name = as_is_poster_name(key)
                if not (root / name).is_file():
                    made = _write_poster(root, video.media.name, root / name, 0.0, say)
                    written += made
                    name = name if made else ""
                names[key] = name
            video.probe = {**video.probe, "poster": names[key]}
        Video.objects.bulk_update(batch, ["probe"])
    return written


def _write_poster(root: Path, name: str, target: Path, at: float, say: Say) -> bool:
    """Write the poster of media file ``name``, its frame at ``at`` seconds, through a
    temporary name, so browsers never find half a JPEG; False (and why said) if it cannot."""
    partial = target.with_name(f"{target.stem}.{os.getpid()}.partial.jpg")
    try:
        try:
            make_poster(root / name, partial, at=at)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    except (TranscodeError, OSError) as exc:  # the clean-up's own error too: a file goes on
        say(f"no poster for {name}: {exc}")
        return False
    return True


@dataclass(frozen=True)
class MadeSummary:
    """What :func:`make_missing` did."""

    made: int
    reused: int
    failed: int
    source_seconds: float
    encode_seconds: float
    posters: int = 0
    """Posters made for files that play as they are."""


def make_missing(
    dataset: Dataset,
    *,
    say: Say = lambda text: None,
    advance: Callable[[int], object] = lambda count: None,
) -> MadeSummary:
    """Make every derived file the dataset's videos wait for, one claim at a time (reusing one
    already on disk; a source that does not decode fails alone), then the as-is posters."""
    root = Path(settings.MEDIA_ROOT)
    made = reused = failed = 0
    source_seconds = encode_seconds = 0.0
    while (row := _claim(dataset)) is not None:
        target = root / row.name
        try:
            outcome = None if target.is_file() else _make(root, row)
        except (TranscodeError, OSError) as exc:
            failed += 1
            _finish(row, DerivedMedia.Status.FAILED, error=str(exc)[:2000])
            say(f"failed: {row.source} ({row.kind}): {exc}")
        else:
            _poster(root, row, say)
            if outcome is None:
                reused += 1
            else:
                made += 1
                source_seconds += outcome.source_seconds
                encode_seconds += outcome.seconds
            _finish(
                row,
                DerivedMedia.Status.READY,
                bytes=target.stat().st_size,
                encode_seconds=outcome.seconds if outcome else row.encode_seconds,
            )
            span = "" if row.start is None else f" {row.start:g}-{row.end:g} s"
            took = f" in {outcome.seconds:.1f} s" if outcome else " (already on disk)"
            say(f"{row.kind}: {row.source}{span} -> {row.name}{took}")
        advance(1)
    posters = make_as_is_posters(dataset, say)
    return MadeSummary(
        made, reused, failed, round(source_seconds, 3), round(encode_seconds, 3), posters
    )


def _make(root: Path, row: DerivedMedia):
    """Encode one claimed row's file, refreshing the claim as the encoding goes."""
    source = root / row.source
    copy = CopySettings(**row.copy_settings)

    def beat(_seconds: float) -> None:
        DerivedMedia.objects.filter(pk=row.pk, worker=WORKER).update(claimed_at=timezone.now())

    if not source.is_file():
        raise TranscodeError(f"{row.source}: the original is gone")
    if fingerprint(source) != row.fingerprint:
        raise TranscodeError(f"{row.source} changed since it was imported; import it again")
    return make_copy(source, root / row.name, copy, start=row.start, end=row.end, progress=beat)


def _poster(root: Path, row: DerivedMedia, say: Say) -> None:
    """Write the poster beside a made file, its frame at the segment's start (if it can)."""
    target = root / poster_name(row.name)
    if target.is_file():
        return
    at = 0.0
    if row.kind == DerivedMedia.Kind.CLIP:
        segment_start = Video.objects.filter(derived=row).values_list("start", flat=True).first()
        at = max(0.0, (segment_start or row.start or 0.0) - (row.start or 0.0))
    _write_poster(root, row.name, target, at, say)


def _finish(row: DerivedMedia, status: str, **fields) -> None:
    """Record a row's outcome and what its videos serve now, in one transaction."""
    state = FROM_STATUS[status]
    with transaction.atomic():
        DerivedMedia.objects.filter(pk=row.pk).update(
            status=status, finished_at=timezone.now(), **fields
        )
        Video.objects.filter(derived=row).update(
            media_state=state, browser_media=row.name if state == Video.MediaState.READY else ""
        )


def segment_label(video: Video) -> str:
    """Where a segment sits in its recording, e.g. ``0:21-0:26 of P01_01, 1:00:00`` ("" for a
    whole video)."""
    if not video.probe or (video.start is None and video.end is None):
        return ""
    duration = float(video.probe.get("duration") or 0.0)
    start = video.start or 0.0
    end = video.end if video.end is not None else duration
    recording = Path(video.media.name).stem if video.media else video.key
    text = f"{clock(start)}-{clock(end)} of {recording}, {clock(duration)}"
    margin = copy_settings().margin
    if margin and video.media_state == Video.MediaState.READY:  # played from its own clip
        text += f" (the clip adds up to {margin:g} s before and after)"
    return text


@dataclass(frozen=True)
class MediaTable:
    """A dataset's files per media state, the broken ones, and what the rest will cost."""

    as_is: int
    pending: int
    ready: int
    failed: int
    broken: tuple[dict, ...]
    pending_seconds: float
    ready_seconds: float
    estimate_seconds: float | None
    running_jobs: int
    failures: tuple[tuple[str, str], ...] = ()
    ready_bytes: int = 0

    @property
    def total(self) -> int:
        return self.as_is + self.pending + self.ready + self.failed


def media_table(dataset: Dataset, states: dict[str, int] | None = None) -> MediaTable:
    """The media table of ``dataset`` (``states``: the counts per media state, if known); the
    derived files are only asked about when there are some."""
    if states is None:
        states = dict(
            Video.objects.filter(dataset=dataset)
            .exclude(media="")
            .values_list("media_state")
            .annotate(n=Count("pk"))
            .values_list("media_state", "n")
        )
    imports = dataset.metadata.get("imports", [])
    broken = tuple(file for entry in imports for file in entry.get("broken", []))
    sums: dict[str, dict] = {}  # per status: the files' seconds of source and encoding, bytes
    failures: tuple = ()
    running = 0
    if any(states.get(state) for state in ("pending", "ready", "failed")):
        # Each derived file once, however many videos share it; no ordering, which would
        # join the grouping (one row per file).
        files = DerivedMedia.objects.filter(
            pk__in=Video.objects.filter(dataset=dataset).values("derived_id")
        )
        per_status = files.order_by().values("status")
        totals = per_status.annotate(
            seconds=Sum("source_seconds"), took=Sum("encode_seconds"), size=Sum("bytes")
        )
        sums = {row["status"]: row for row in totals}
        running = Job.objects.filter(
            kind=MEDIA_JOB, arguments__dataset=dataset.name, status__in=["queued", "running"]
        ).count()
        if states.get("failed"):
            failures = tuple(
                _files(dataset, status=DerivedMedia.Status.FAILED)
                .order_by("pk")
                .values_list("source", "error")[:FAILURES_SHOWN]
            )
    ready = sums.get(DerivedMedia.Status.READY, {})
    ready_seconds, ready_took = ready.get("seconds") or 0.0, ready.get("took") or 0.0
    waiting = sum(
        sums.get(status, {}).get("seconds") or 0.0
        for status in (DerivedMedia.Status.PENDING, DerivedMedia.Status.RUNNING)
    )
    estimate = waiting * ready_took / ready_seconds if ready_seconds and ready_took else None
    return MediaTable(
        **{state: states.get(state, 0) for state in Video.MediaState.values},  # as_is, pending, ...
        broken=broken,
        pending_seconds=round(waiting, 1),
        ready_seconds=round(ready_seconds, 1),
        estimate_seconds=None if estimate is None else round(estimate, 1),
        running_jobs=running,
        failures=failures,
        ready_bytes=ready.get("size") or 0,
    )
