"""Export a campaign's labels (csv, jsonl, TREC qrels, raw, FIRE JSON) or gold pairs, streamed
in primary-key windows with flat memory; pairs resolve by majority or, with
``method="dawid-skene"``, by :func:`~annotation.campaign_read.resolution.campaign_resolution`.
"""

import itertools
import operator
import re
from array import array
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TextIO

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Max, Min, Subquery
from django.utils import timezone

from annotation.campaign_read import export_rows
from annotation.campaign_read.resolution import (
    MAJORITY,
    METHODS,
    campaign_resolution,
    last_method,
)
from annotation.campaigns.service import load_provenance
from annotation.gold import file as gold_file
from annotation.gold import service as gold
from annotation.judging import statements
from annotation.models import Campaign, Judgement, Pair
from config.errors import UserError
from retrieval.formats import fire_json, labels, trec
from retrieval.label_sets.status import CODES, names
from retrieval.models import Caption, Video

_FORMATS = {
    "csv": ("text/csv", "csv"),
    "jsonl": ("application/x-ndjson", "jsonl"),
    "qrels": ("text/plain", "qrels"),
    "raw": ("application/x-ndjson", "raw.jsonl"),
    "fire-json": ("application/json", "fire.json"),
    "gold": ("application/x-ndjson", "gold.jsonl"),
    "gold-csv": ("text/csv", "gold.csv"),
    "gold-template": ("text/csv", "gold-template.csv"),
}
"""Each format's media type and file extension."""
EXPORT_FORMATS = tuple(_FORMATS)
GOLD_FORMATS = ("gold", "gold-csv", "gold-template")
"""Exports of gold pairs and their answers, or of decided pairs that could become gold."""
CONTENT_TYPES = {fmt: f"{mime}; charset=utf-8" for fmt, (mime, _) in _FORMATS.items()}
EXTENSIONS = {fmt: extension for fmt, (_, extension) in _FORMATS.items()}

BATCH = 5_000
"""Pairs or judgements read per query. A window read ahead is held beside the one being
written: at 20,000 the FIRE JSON export of FIRE's scale rose by 63 MB (target 50), at 5,000 by
41 MB, every export still within 2.3 s (``bench/scale_pages.py``, ``bench/RESULTS.md``)."""
CHUNK_BYTES = 1 << 16
"""Text joined before it is handed on (one HTTP chunk or file write)."""


class ExportError(UserError):
    """A campaign cannot be exported as asked; nothing was written under the requested name."""


FINAL = (Pair.Status.RELEVANT, Pair.Status.IRRELEVANT, Pair.Status.DISAGREEMENT)


def filename(campaign: Campaign, fmt: str) -> str:
    """Download name, e.g. ``demo-campaign.fire.json``: spaces, control characters and path
    separators of the campaign name become ``_`` (a name with a line break broke the header)."""
    safe = re.sub(r"[\s\x00-\x1f\x7f/\\]", "_", campaign.name)
    return f"{safe}.{EXTENSIONS[fmt]}"


def export_chunks(campaign: Campaign, fmt: str, method: str | None = None) -> Iterator[str]:
    """The export of ``campaign`` in ``fmt`` as text chunks of about 64 KiB; ``method``
    resolves the pairs (None: that of the campaign's last resolution, else majority)."""
    if fmt not in EXPORT_FORMATS:
        raise ExportError(
            f"unknown export format {fmt!r} (choose from {', '.join(EXPORT_FORMATS)})"
        )
    if method is not None and method not in METHODS:
        raise ExportError(
            f"unknown resolution method {method!r} (choose from {', '.join(METHODS)})"
        )
    if fmt == "gold-template":
        return _buffered(gold_file.gold_template_lines(gold.gold_template_rows(campaign)))
    if fmt in GOLD_FORMATS:
        write = gold_file.gold_jsonl_lines if fmt == "gold" else gold_file.gold_csv_lines
        return _buffered(write(gold.gold_export_rows(campaign)))
    method = method or last_method(campaign)
    override = None if method == MAJORITY else _resolved_by(campaign, method)
    # Campaigns that never used proxy auto-labels export exactly as before.
    auto_labelled = Pair.objects.filter(campaign=campaign).exclude(auto_label="").exists()
    auto = {"auto_label": True} if auto_labelled else {}
    if fmt in ("csv", "jsonl"):
        write = labels.csv_pair_lines if fmt == "csv" else labels.jsonl_pair_lines
        if fmt == "csv" and override is not None:
            auto["confidence"] = True
        lines = write(_pair_rows(campaign, FINAL, override), campaign.run_names(), **auto)
    elif fmt == "qrels":
        lines = trec.qrels_lines(_qrels_rows(campaign, override))
    elif fmt == "raw":
        lines = labels.raw_label_lines(_raw_labels(campaign))
    else:
        metadata = _fire_metadata(campaign)
        if override is not None:
            metadata["method"] = method
            metadata["counts"].update(_counts(Counter(status for status, _ in override.values())))
        # Chunks of about CHUNK_BYTES already.
        return fire_json.fire_json_row_chunks(
            metadata,
            _pair_rows(campaign, FINAL[:2], override, fire=True),
            _pair_rows(campaign, (Pair.Status.DISAGREEMENT,), override, fire=True),
            campaign.run_names(),
            campaign.dataset.name,
        )
    return _buffered(lines)


Override = dict[int, tuple[str, float]]
"""Pair id to (status name, confidence) under a resolution other than the policy's majority."""


def _resolved_by(campaign: Campaign, method: str) -> Override:
    found = campaign_resolution(campaign, method)
    resolved = zip(names(found.status).tolist(), found.confidence.tolist(), strict=True)
    return dict(zip(found.pair_ids.tolist(), resolved, strict=True))


def export_to_file(
    campaign: Campaign, fmt: str, path: Path | str, method: str | None = None
) -> int:
    """Write the export to ``path`` through a temporary file that replaces it only once
    complete (a failure leaves no partial export); returns the characters written."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    try:
        with open(partial, "w", encoding="utf-8", newline="") as out:
            written = write_export(campaign, fmt, out, method)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return written


def write_export(campaign: Campaign, fmt: str, out: TextIO, method: str | None = None) -> int:
    """Write the export to the text stream ``out``; returns the characters written. A value
    the format could not read back (ValueError) raises an :class:`ExportError`."""
    written = 0
    try:
        for chunk in export_chunks(campaign, fmt, method):
            out.write(chunk)
            written += len(chunk)
    except ValueError as exc:
        raise ExportError(f"cannot export {campaign.name!r}: {exc}") from None
    return written


def _buffered(lines: Iterable[str]) -> Iterator[str]:
    """The lines joined into chunks of about ``CHUNK_BYTES`` (the first of ``FIRST_LINES``),
    taken by count (``islice``): adding up lengths per line cost 0.27 s of a 6 s export."""
    lines = iter(lines)
    count = FIRST_LINES
    while parts := list(itertools.islice(lines, count)):
        chunk = "".join(parts)
        yield chunk
        count = max(FIRST_LINES, CHUNK_BYTES * len(parts) // max(len(chunk), 1))


FIRST_LINES = 64
"""Lines in the first chunk (and the fewest in any)."""
FIRST_BATCH = 2_000
"""Pairs read by the first query: a small first window sends the first bytes sooner."""


def _windows(campaign: Campaign, status: str | None = None) -> Iterator[tuple[int, int]]:
    """Primary-key ranges ``[low, high)`` of ``BATCH`` ids (the first ``FIRST_BATCH``) covering
    the campaign's pairs (with a rare ``status``, only those), so queries stay on the key."""
    if status is not None:
        ids = Pair.objects.filter(campaign=campaign, status=status).order_by("pk")
        high = None
        for pk in list(ids.values_list("pk", flat=True)):
            if high is None or pk >= high:
                high = pk + BATCH
                yield pk, high
        return
    bounds = Pair.objects.filter(campaign=campaign).aggregate(low=Min("pk"), high=Max("pk"))
    if bounds["low"] is None:
        return
    low, size = bounds["low"], FIRST_BATCH
    while low <= bounds["high"]:
        yield low, low + size
        low, size = low + size, BATCH


class _WindowCaptions:
    """The captions (key and text by id) each id window's pairs name, one query per window
    as it is sent: holding every caption took 16.5 MiB at FIRE's scale. While windows are
    read ahead (psycopg pipeline), the query goes into the pipeline on a psycopg cursor of
    the same connection, since a query through Django would end the read-ahead. Bounding the
    ids by the window's least and greatest caption spares PostgreSQL a scan of every caption
    each window (13-15 ms a window at FIRE's scale, 4 ms bounded)."""

    def __init__(self, campaign: Campaign) -> None:
        self.campaign = campaign
        self.pending: deque = deque()  # rows or a cursor, per window sent and not yet written

    def windows(self, windows: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
        """``windows``, each window's captions query sent as the window is taken."""
        for low, high in windows:
            self.pending.append(self._read(low, high))
            yield low, high

    def _read(self, low: int, high: int) -> list[tuple] | object:
        in_window = Pair.objects.filter(campaign=self.campaign, pk__gte=low, pk__lt=high)
        ids = in_window.order_by().values("campaign")
        ends = [Subquery(ids.annotate(end=end("caption_id")).values("end")) for end in (Min, Max)]
        captions = (
            Caption.objects.filter(pk__in=in_window.values("caption_id"), pk__range=ends)
            .order_by()
            .values_list("pk", "key", "text")
        )
        raw = connection.connection
        if not getattr(getattr(raw, "pgconn", None), "pipeline_status", 0):
            return list(captions)
        cursor = raw.cursor()
        cursor.execute(*captions.query.sql_with_params())
        return cursor

    def next(self) -> dict[int, tuple[str, str]]:
        """The captions of the window whose rows come next: (key, text) by id."""
        read = self.pending.popleft()
        try:
            rows = read if isinstance(read, list) else read.fetchall()
            return {pk: (key, text) for pk, key, text in rows}
        finally:
            if not isinstance(read, list):
                read.close()

    def close(self) -> None:
        """Close the cursors of windows never written (an export abandoned half-way)."""
        while self.pending:
            read = self.pending.popleft()
            if not isinstance(read, list):
                read.close()


def _windows_with_captions(
    campaign: Campaign, kind: str, status: str | None = None
) -> Iterator[tuple[list[tuple], dict[int, tuple[str, str]]]]:
    """Each id window's rows read ahead (``export_rows.export_windows``), with its captions."""
    captions = _WindowCaptions(campaign)
    windows = export_rows.export_windows(
        captions.windows(_windows(campaign, status)), kind, campaign.pk
    )
    try:
        for rows in windows:
            yield rows, captions.next()
    finally:
        windows.close()  # leaves pipeline mode, collecting what is in flight
        captions.close()


class _RankTuples:
    """Each pool row's ranks (one per run) as a tuple, the same object for equal ranks (the
    writers cache output per tuple), packed into one integer per row (when they fit 62 bits)
    in an ``array`` so that no Python object per pair is kept."""

    def __init__(self, ranks: np.ndarray) -> None:
        self.ranks = ranks
        self.base = int(ranks.max(initial=0)) + 1
        runs = ranks.shape[1]
        self.packed: array | None = None
        if ranks.size and ranks.min() >= 0 and self.base**runs < 2**62:
            weights = self.base ** np.arange(runs, dtype=np.int64)
            self.packed = array("q", (ranks.astype(np.int64) @ weights).astype("<i8").tobytes())
        self.tuples: dict[int, tuple] = {}

    def __getitem__(self, pool_row: int) -> tuple:
        if self.packed is None:
            return tuple(self.ranks[pool_row].tolist())
        code = self.packed[pool_row]
        found = self.tuples.get(code)
        if found is None:
            found = self.tuples[code] = tuple(self.ranks[pool_row].tolist())
        return found


_LABEL_COLUMNS = export_rows.EXPORT_ROW_TYPES["labels"]._fields
_RESPONSE_COLUMNS = export_rows.EXPORT_ROW_TYPES["responses"]._fields


def _pair_rows(
    campaign: Campaign,
    statuses: Iterable[str] = FINAL,
    override: Override | None = None,
    fire: bool = False,
) -> Iterator[tuple]:
    """The pairs with one of ``statuses`` (under ``override`` if given) and their live
    labels in id order, as :data:`retrieval.formats.labels.PairLine` or, with ``fire``,
    :data:`retrieval.formats.fire_json.EntryLine` tuples. Plain tuples and ``groupby``: an
    object per pair cost over a second at FIRE's 552,880 pairs."""
    wanted = set(statuses)
    ranks = _RankTuples(load_provenance(campaign))
    packed, tuples, rank_tuple = ranks.packed, ranks.tuples, ranks.__getitem__
    usernames = _usernames()
    videos = _keys(Video, campaign, "video_id")
    rare = wanted == {Pair.Status.DISAGREEMENT} and override is None
    kind = "responses" if fire else "labels"
    columns = _RESPONSE_COLUMNS if fire else _LABEL_COLUMNS
    described = statements.reader(
        columns, *("status", "adjudicated", "caption_id", "video_id", "auto_label")
    )
    pool_row_at = columns.index("pool_row")
    annotator_at, label_at = columns.index("annotator_id"), columns.index("label")
    uuid_at = columns.index("uuid") if fire else 0
    pending, disagreement = Pair.Status.PENDING, Pair.Status.DISAGREEMENT
    codes = CODES
    first = operator.itemgetter(0)
    windows = _windows_with_captions(campaign, kind, Pair.Status.DISAGREEMENT if rare else None)
    for rows, captions in windows:
        for pk, group in itertools.groupby(rows, first):
            labelled = list(group)
            row = labelled[0]
            status, adjudicated, caption_id, video_id, auto_label = described(row)
            confidence = None
            if override is not None:
                status, confidence = override.get(pk, (pending, None))
            if status not in wanted:
                continue
            caption_key, text = captions[caption_id]
            video_key = videos[video_id]
            pool_row = row[pool_row_at]
            retrieved = tuples.get(packed[pool_row]) if packed is not None else None
            if retrieved is None:
                retrieved = rank_tuple(pool_row)
            people: tuple = ()
            said: tuple = ()
            uuids: tuple = ()
            if row[annotator_at] is None:  # nobody labelled it
                pass
            elif len(labelled) == 1:  # most pairs: no lists (a tenth of the loop's time)
                people, said = (usernames[row[annotator_at]],), (codes[row[label_at]],)
                if fire:
                    uuids = (row[uuid_at],)
            else:
                people = tuple([usernames[r[annotator_at]] for r in labelled])
                said = tuple([codes[r[label_at]] for r in labelled])
                if fire:
                    uuids = tuple([r[uuid_at] for r in labelled])
            if fire:
                yield (
                    text,
                    video_key,
                    None if status == disagreement else codes[status],
                    people,
                    said,
                    uuids,
                    str(pk),
                    retrieved,
                    auto_label or "",
                    confidence,
                )
            else:
                yield (
                    caption_key,
                    video_key,
                    text,
                    codes[status],
                    len(said),
                    bool(adjudicated),
                    people,
                    retrieved,
                    auto_label or "",
                    confidence,
                )


def _keys(model: type[Caption | Video], campaign: Campaign, column: str) -> dict[int, str]:
    """The key by id of each caption or video (``column``) the campaign's pairs name."""
    return dict(
        model.objects.filter(pk__in=_pair_ids(campaign, column)).order_by().values_list("pk", "key")
    )


def _pair_ids(campaign: Campaign, column: str):
    return Pair.objects.filter(campaign=campaign).order_by().values(column)


def _usernames() -> dict[int, str]:
    """Every account's name: one small query, cheaper than finding the campaign's annotators."""
    return dict(get_user_model().objects.values_list("pk", "username"))


def _qrels_rows(
    campaign: Campaign, override: Override | None = None
) -> Iterator[tuple[str, str, int]]:
    """Resolved pairs (originals forced to 1), then the originals no pair covered."""
    originals = {
        pk: (key, video_key)
        for pk, key, video_key in Caption.objects.filter(pk__in=_pair_ids(campaign, "caption_id"))
        .order_by("pk")
        .values_list("pk", "key", "video__key")
    }
    videos = _keys(Video, campaign, "video_id")
    written: set[int] = set()
    resolved = {Pair.Status.RELEVANT, Pair.Status.IRRELEVANT}
    relevant = Pair.Status.RELEVANT
    for rows in export_rows.export_windows(_windows(campaign), "pairs", campaign.pk):
        for pk, status, caption_id, video_id in rows:
            if override is not None:
                status = override.get(pk, (Pair.Status.PENDING, None))[0]
            if status not in resolved:
                continue
            caption_key, original_video = originals[caption_id]
            video_key = videos[video_id]
            original = original_video == video_key
            if original:
                written.add(caption_id)
            yield caption_key, video_key, int(original or status == relevant)
    for pk, (key, video_key) in originals.items():
        if pk not in written:
            yield key, video_key, 1


def _iso_times(microseconds: np.ndarray) -> list[str]:
    """``datetime.isoformat()`` of UTC times given as microseconds since 1970, formatted by
    numpy (a datetime per label cost 5.3 s at FIRE's 679,000 labels)."""
    full = np.datetime_as_string(microseconds.astype("datetime64[us]"), unit="us").tolist()
    whole = (microseconds % 1_000_000 == 0).tolist()
    return [
        (text[:19] if plain else text) + "+00:00" for text, plain in zip(full, whole, strict=True)
    ]


def _raw_labels(campaign: Campaign) -> Iterator[tuple]:
    """Every live label (:data:`retrieval.formats.labels.RawLine`) pair by pair in the order
    given; then the discounted ones."""
    usernames = _usernames()
    captions, videos = _keys(Caption, campaign, "caption_id"), _keys(Video, campaign, "video_id")
    codes = CODES

    def lines(rows_and_times: Iterable[tuple], discounted: bool) -> Iterator[tuple]:
        for row, created in rows_and_times:
            caption_id, video_id, annotator, label, seconds, played, _ = row
            yield (
                captions[caption_id],
                videos[video_id],
                usernames[annotator],
                codes[label],
                seconds,
                created,
                discounted,
                played,
            )

    for rows in export_rows.export_windows(_windows(campaign), "raw", campaign.pk):
        times = _iso_times(np.fromiter((row[6] for row in rows), np.int64, len(rows)))
        yield from lines(zip(rows, times, strict=True), False)
    # Labels an admin discounted: kept, marked, and listed after the ones that count.
    columns = ("pair__caption_id", "pair__video_id", "annotator_id", "label", "seconds")
    discounted = (
        Judgement.objects.filter(pair__campaign=campaign, discounted_at__isnull=False)
        .order_by("pair_id", "created_at", "pk")
        .values_list(*columns, "seconds_played", "created_at")
    )
    yield from lines(((row, row[6].isoformat()) for row in discounted.iterator()), True)


def _counts(by_status: Mapping[str, int]) -> dict[str, int]:
    """FIRE metadata's counts of finished pairs by status."""
    relevant, irrelevant = (by_status.get(status, 0) for status in FINAL[:2])
    return {
        "annotations": relevant + irrelevant,
        "relevant": relevant,
        "irrelevant": irrelevant,
        "disagreements": by_status.get(Pair.Status.DISAGREEMENT, 0),
    }


def _fire_metadata(campaign: Campaign) -> dict:
    counts = dict(
        Pair.objects.filter(campaign=campaign)
        .values_list("status")
        .order_by()
        .annotate(n=Count("pk"))
    )
    return {
        "format": "fire-json",
        "format_version": 1,
        "dataset": campaign.dataset.name,
        "campaign": campaign.name,
        "created": timezone.now().isoformat(),
        "guidelines": campaign.guidelines,
        "models": campaign.run_names(),
        "counts": {**_counts(counts), "pending": counts.get(Pair.Status.PENDING, 0)},
    }
