"""Export a campaign's labels, streamed: csv, jsonl, TREC qrels, raw labels and FIRE JSON.

Every format is produced by a generator of text chunks that walks the pairs (or, for raw,
the judgements) in primary-key batches, so a campaign of any size exports with flat memory
to a file or an HTTP response. Only pairs with a final label or a disagreement are
exported as pairs; pending pairs have no final label yet.

- ``csv`` / ``jsonl``: one row per pair (see :mod:`retrieval.formats.labels`). When a proxy
  labelled some of the campaign's pairs (:mod:`annotation.ordering.proxy_queue`), every row also has
  an ``auto_label`` column naming the rule, empty for pairs humans labelled.
- ``qrels``: ``caption 0 video rel`` for resolved pairs, judged negatives kept as 0 so
  judged-fraction measures work, and each caption's own video as 1 (the benchmark's
  original positive, whatever annotators said). Disagreements are left out (unjudged).
- ``raw``: every live label with annotator, time and seconds spent (and seconds of video
  played, where known).
- ``fire-json``: the layout of the FIRE release (annotations and disagreements); an entry
  labelled by a proxy rule carries an extra ``auto_label`` field.
- Resolution: pairs are labelled by the policy's strict majority (``Pair.status``), or, with
  ``method="dawid-skene"`` (the default once the campaign was last resolved that way), by
  :func:`annotation.campaign_read.resolution.campaign_resolution`; then every csv / jsonl row and
  FIRE entry carries a ``confidence`` (probability of relevance) and the FIRE metadata
  names the ``method``.
- ``gold`` / ``gold-csv``: the campaign's gold pairs with every answer given on them
  (:mod:`annotation.gold.file`); never labels, and like every export for admins only.
- ``gold-template``: the decided pairs that are not gold yet, as a gold CSV file (keys, the
  caption to read, the settled label, how it was settled) to edit and import.
"""

import itertools
import operator
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Max, Min
from django.utils import timezone

from annotation.campaign_read import export_rows
from annotation.campaign_read.resolution import MAJORITY, METHODS, campaign_resolution
from annotation.campaigns.service import load_provenance
from annotation.gold import file as gold_file
from annotation.gold import service as gold
from annotation.judging import statements
from annotation.models import Campaign, Judgement, Pair
from config.errors import UserError
from retrieval.formats import fire_json, labels, trec
from retrieval.label_sets.status import CODES, names
from retrieval.models import Caption, LabelSet, Video

EXPORT_FORMATS = (
    "csv",
    "jsonl",
    "qrels",
    "raw",
    "fire-json",
    "gold",
    "gold-csv",
    "gold-template",
)
GOLD_FORMATS = ("gold", "gold-csv", "gold-template")
"""Exports of gold pairs and the answers on them, or of the decided pairs that could become
gold, not of labels (admins only)."""
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "qrels": "text/plain; charset=utf-8",
    "raw": "application/x-ndjson; charset=utf-8",
    "fire-json": "application/json; charset=utf-8",
    "gold": "application/x-ndjson; charset=utf-8",
    "gold-csv": "text/csv; charset=utf-8",
    "gold-template": "text/csv; charset=utf-8",
}
EXTENSIONS = {
    "csv": "csv",
    "jsonl": "jsonl",
    "qrels": "qrels",
    "raw": "raw.jsonl",
    "fire-json": "fire.json",
    "gold": "gold.jsonl",
    "gold-csv": "gold.csv",
    "gold-template": "gold-template.csv",
}

BATCH = 20_000
"""Pairs or judgements read per query."""
CHUNK_BYTES = 1 << 16
"""Text joined before it is handed on (one HTTP chunk or file write)."""


class ExportError(UserError):
    """A campaign cannot be exported as asked (an unknown format, a value that would not
    read back); nothing was written under the requested name."""


FINAL = (Pair.Status.RELEVANT, Pair.Status.IRRELEVANT, Pair.Status.DISAGREEMENT)


def filename(campaign: Campaign, fmt: str) -> str:
    """Download name, e.g. ``demo-campaign.fire.json``: spaces, control characters and path
    separators of the campaign name become ``_`` (a name with a line break broke the header)."""
    safe = "".join(
        "_" if ch.isspace() or ord(ch) < 32 or ord(ch) == 127 or ch in "/\\" else ch
        for ch in campaign.name
    )
    return f"{safe}.{EXTENSIONS[fmt]}"


def export_chunks(campaign: Campaign, fmt: str, method: str | None = None) -> Iterator[str]:
    """The export of ``campaign`` in ``fmt`` as text chunks of about 64 KiB.

    ``method`` resolves the pairs (None: the method of the campaign's last resolution,
    majority if it was never resolved).
    """
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
        rows = gold.gold_export_rows(campaign)
        lines = (
            gold_file.gold_jsonl_lines(rows) if fmt == "gold" else gold_file.gold_csv_lines(rows)
        )
        return _buffered(lines)
    method = method or last_method(campaign)
    override = None if method == MAJORITY else _resolved_by(campaign, method)
    # Campaigns that never used proxy auto-labels export exactly as before.
    auto = {"auto_label": True} if _has_auto_labels(campaign) else {}
    if fmt == "csv":
        lines = labels.csv_pair_lines(
            _label_lines(campaign, override),
            campaign.run_names(),
            **auto,
            **({} if override is None else {"confidence": True}),
        )
    elif fmt == "jsonl":
        lines = labels.jsonl_pair_lines(
            _label_lines(campaign, override), campaign.run_names(), **auto
        )
    elif fmt == "qrels":
        lines = trec.qrels_lines(_qrels_rows(campaign, override))
    elif fmt == "raw":
        lines = labels.raw_label_lines(_raw_labels(campaign))
    else:
        metadata = _fire_metadata(campaign)
        if override is not None:
            metadata["method"] = method
            statuses = [status for status, _ in override.values()]
            metadata["counts"].update(
                annotations=sum(status != Pair.Status.DISAGREEMENT for status in statuses),
                relevant=statuses.count(Pair.Status.RELEVANT),
                irrelevant=statuses.count(Pair.Status.IRRELEVANT),
                disagreements=statuses.count(Pair.Status.DISAGREEMENT),
            )
        # Chunks of about CHUNK_BYTES already.
        return fire_json.fire_json_row_chunks(
            metadata,
            _fire_entries(campaign, (Pair.Status.RELEVANT, Pair.Status.IRRELEVANT), override),
            _fire_entries(campaign, (Pair.Status.DISAGREEMENT,), override),
            campaign.run_names(),
            campaign.dataset.name,
        )
    return _buffered(lines)


def last_method(campaign: Campaign) -> str:
    """The method of the campaign's latest resolution into a label set; majority if none."""
    latest = (
        LabelSet.objects.filter(dataset_id=campaign.dataset_id, metadata__campaign_id=campaign.pk)
        .order_by("-created_at", "-pk")
        .values_list("metadata", flat=True)
        .first()
    )
    method = (latest or {}).get("method", MAJORITY)
    return method if method in METHODS else MAJORITY


Override = dict[int, tuple[str, float]]
"""Pair id to (status name, confidence) under a resolution other than the policy's majority."""


def _resolved_by(campaign: Campaign, method: str) -> Override:
    resolution = campaign_resolution(campaign, method)
    return dict(
        zip(
            resolution.pair_ids.tolist(),
            zip(names(resolution.status).tolist(), resolution.confidence.tolist(), strict=True),
            strict=True,
        )
    )


def _has_auto_labels(campaign: Campaign) -> bool:
    """Whether a proxy labelled any of the campaign's pairs (see :mod:`annotation.ordering.proxy_queue`)."""
    return Pair.objects.filter(campaign=campaign).exclude(auto_label="").exists()


def export_to_file(
    campaign: Campaign, fmt: str, path: Path | str, method: str | None = None
) -> int:
    """Write the export to ``path``; returns the number of characters written.

    The text goes to a temporary file beside ``path`` that replaces it only once complete,
    so a failure never leaves a partial export under the requested name.
    """
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
    """Write the export to the open text stream ``out``; returns the characters written.

    A label value the format could not read back (the writers raise ValueError) stops the
    export with an :class:`ExportError` that names the campaign.
    """
    written = 0
    try:
        for chunk in export_chunks(campaign, fmt, method):
            out.write(chunk)
            written += len(chunk)
    except ValueError as exc:
        raise ExportError(f"cannot export {campaign.name!r}: {exc}") from None
    return written


def _buffered(lines: Iterable[str]) -> Iterator[str]:
    """The lines joined into chunks of about ``CHUNK_BYTES`` (the first of ``FIRST_LINES``).

    Lines are taken by count (``islice``, in C), the count set from the lines seen so far:
    a Python step per line to add up lengths cost 0.27 s of a 6 s profiled jsonl export
    at FIRE's scale."""
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
    """Primary-key ranges ``[low, high)`` covering the campaign's pairs, ``BATCH`` ids each
    (the first ``FIRST_BATCH``).

    Pairs are written in bulk, so a campaign's ids are (nearly) contiguous. Reading by id
    range keeps every query on the primary key with no sort of the whole campaign per
    batch, whatever the database's planner would prefer for a campaign filter. With
    ``status`` (a rare one, such as disagreement), only windows holding such pairs.
    """
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


def _window_rows(campaign: Campaign, kind: str) -> Iterator[list[tuple]]:
    """The campaign's rows of :data:`annotation.campaign_read.export_rows.EXPORT_ROWS` (variant
    ``kind``), one list per id window (read ahead, :func:`~annotation.campaign_read.export_rows.export_windows`)."""
    return export_rows.export_windows(_windows(campaign), kind, campaign.pk)


class _WindowCaptions:
    """The captions each id window's pairs name, read one query per window as the window is
    sent: key and text by caption id, for the window's rows only.

    Holding every caption of the campaign for the whole export instead took 16.5 MiB at
    FIRE's 55,288 captions (tracemalloc). While the windows are read ahead (psycopg's
    pipeline mode, :func:`~annotation.campaign_read.export_rows.export_windows`), a query through
    Django would end the read-ahead, so the window's captions query (the ORM's SQL) goes into
    the pipeline on a psycopg cursor of the same connection, just before the window's rows
    (like the rows, it is not in ``connection.queries``); its result has arrived by the time
    those rows have. Otherwise it is an ordinary query.
    """

    def __init__(self, campaign: Campaign) -> None:
        self.campaign = campaign
        self.pending: deque = deque()  # per window sent and not yet written: rows or a cursor

    def windows(self, windows: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
        """``windows``, each window's captions query sent as the window is taken."""
        for low, high in windows:
            self.pending.append(self._read(low, high))
            yield low, high

    def _read(self, low: int, high: int) -> list[tuple] | object:
        """The window's captions: read now, or a cursor with the query sent in the pipeline."""
        in_window = Pair.objects.filter(campaign=self.campaign, pk__gte=low, pk__lt=high)
        captions = (
            Caption.objects.filter(pk__in=in_window.values("caption_id"))
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
        if isinstance(read, list):
            return {pk: (key, text) for pk, key, text in read}
        try:
            return {pk: (key, text) for pk, key, text in read.fetchall()}
        finally:
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
    """:func:`_window_rows` with each window's captions (:class:`_WindowCaptions`): only two
    windows' captions are held at a time, whatever the campaign's size."""
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
    """Each pool row's ranks (one per run) as a tuple, the same tuple object for equal ranks.

    The writers cache what they print per tuple of ranks; making one tuple per pair from
    the provenance array cost more than the lookup. Ranks are packed into one integer per
    pool row (when they fit 62 bits) held in an ``array``, so no Python object per pair is
    kept: memory stays that of the provenance itself.
    """

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
    """The campaign's pairs with one of ``statuses`` and their live labels, in id order, as
    the writers' plain rows: :data:`retrieval.formats.labels.PairLine` (csv, jsonl), or with
    ``fire`` :data:`retrieval.formats.fire_json.EntryLine`.

    With ``override`` a pair's status and confidence are the override's (pairs it does not
    name are left out: it covers every finished pair). Tuples built in one loop rather than
    an object per pair, and labels grouped in C (``groupby``): a dataclass and a record per
    pair and a row-by-row loop cost over a second at FIRE's 552,880 pairs.
    """
    wanted = set(statuses)
    ranks = _RankTuples(load_provenance(campaign))
    packed, tuples, rank_tuple = ranks.packed, ranks.tuples, ranks.__getitem__
    usernames = _usernames()
    videos = _video_keys(campaign)
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
            if row[annotator_at] is None:  # nobody labelled it yet
                people: tuple = ()
                said: tuple = ()
            else:
                people = tuple([usernames[r[annotator_at]] for r in labelled])
                said = tuple([codes[r[label_at]] for r in labelled])
            if fire:
                yield (
                    text,
                    video_key,
                    None if status == disagreement else codes[status],
                    people,
                    said,
                    tuple([r[uuid_at] for r in labelled]) if people else (),
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


def _caption_keys(campaign: Campaign) -> dict[int, str]:
    """Each of the campaign's captions' key by id."""
    return dict(
        Caption.objects.filter(pk__in=_pair_ids(campaign, "caption_id"))
        .order_by()
        .values_list("pk", "key")
    )


def _video_keys(campaign: Campaign) -> dict[int, str]:
    """Each of the campaign's videos' key by id."""
    return dict(
        Video.objects.filter(pk__in=_pair_ids(campaign, "video_id"))
        .order_by()
        .values_list("pk", "key")
    )


def _pair_ids(campaign: Campaign, column: str):
    return Pair.objects.filter(campaign=campaign).order_by().values(column)


def _usernames() -> dict[int, str]:
    """Every account's name: one small query, cheaper than finding the campaign's annotators."""
    return dict(get_user_model().objects.values_list("pk", "username"))


def _label_lines(campaign: Campaign, override: Override | None = None) -> Iterator[tuple]:
    """The csv / jsonl rows (:data:`retrieval.formats.labels.PairLine`) of the campaign."""
    return _pair_rows(campaign, FINAL, override)


def _qrels_rows(
    campaign: Campaign, override: Override | None = None
) -> Iterator[tuple[str, str, int]]:
    """Resolved pairs (originals forced to 1), then the originals no pair covered. Pairs are
    read without their labels (``pairs`` rows), which qrels never print."""
    originals = {
        pk: (key, video_key)
        for pk, key, video_key in Caption.objects.filter(pk__in=_pair_ids(campaign, "caption_id"))
        .order_by("pk")
        .values_list("pk", "key", "video__key")
    }
    videos = _video_keys(campaign)
    written: set[int] = set()
    resolved = {Pair.Status.RELEVANT, Pair.Status.IRRELEVANT}
    relevant = Pair.Status.RELEVANT
    for rows in _window_rows(campaign, "pairs"):
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
    """``datetime.isoformat()`` of aware UTC times given as microseconds since 1970, for a
    whole window at once (numpy formats them; a datetime per label cost 5.3 s at FIRE's
    679,000 labels): seconds, the fraction only where it is not zero, then ``+00:00``."""
    full = np.datetime_as_string(microseconds.astype("datetime64[us]"), unit="us").tolist()
    whole = (microseconds % 1_000_000 == 0).tolist()
    return [
        (text[:19] if plain else text) + "+00:00" for text, plain in zip(full, whole, strict=True)
    ]


def _raw_labels(campaign: Campaign) -> Iterator[tuple]:
    """Every live label (:data:`retrieval.formats.labels.RawLine`), pair by pair, each pair's
    labels in the order they were given; then the discounted ones."""
    usernames = _usernames()
    captions, videos = _caption_keys(campaign), _video_keys(campaign)
    codes = CODES
    for rows in _window_rows(campaign, "raw"):
        times = _iso_times(np.fromiter((row[6] for row in rows), np.int64, len(rows)))
        for (caption_id, video_id, annotator, label, seconds, played, _), created in zip(
            rows, times, strict=True
        ):
            yield (
                captions[caption_id],
                videos[video_id],
                usernames[annotator],
                codes[label],
                seconds,
                created,
                False,
                played,
            )
    # Labels an admin discounted: kept, marked, and listed after the ones that count.
    discounted = (
        Judgement.objects.filter(pair__campaign=campaign, discounted_at__isnull=False)
        .order_by("pair_id", "created_at", "pk")
        .values_list(
            "pair__caption__key",
            "pair__video__key",
            "annotator_id",
            "label",
            "seconds",
            "created_at",
            "seconds_played",
        )
    )
    for caption_key, video_key, annotator, label, seconds, created, played in discounted.iterator():
        yield (
            caption_key,
            video_key,
            usernames[annotator],
            codes[label],
            seconds,
            created.isoformat(),
            True,
            played,
        )


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
        "counts": {
            "annotations": counts.get(Pair.Status.RELEVANT, 0)
            + counts.get(Pair.Status.IRRELEVANT, 0),
            "relevant": counts.get(Pair.Status.RELEVANT, 0),
            "irrelevant": counts.get(Pair.Status.IRRELEVANT, 0),
            "disagreements": counts.get(Pair.Status.DISAGREEMENT, 0),
            "pending": counts.get(Pair.Status.PENDING, 0),
        },
    }


def _fire_entries(
    campaign: Campaign, statuses: tuple[str, ...], override: Override | None = None
) -> Iterator[tuple]:
    """The FIRE entries (:data:`retrieval.formats.fire_json.EntryLine`) of the pairs with
    one of ``statuses``."""
    return _pair_rows(campaign, statuses, override, fire=True)
