"""Export a campaign's labels, streamed: csv, jsonl, TREC qrels, raw labels and FIRE JSON.

Every format is produced by a generator of text chunks that walks the pairs (or, for raw,
the judgements) in primary-key batches, so a campaign of any size exports with flat memory
to a file or an HTTP response. Only pairs with a final label or a disagreement are
exported as pairs; pending pairs have no final label yet.

- ``csv`` / ``jsonl``: one row per pair (see :mod:`retrieval.formats.labels`). When a proxy
  labelled some of the campaign's pairs (:mod:`annotation.services.proxy_queue`), every row also has
  an ``auto_label`` column naming the rule, empty for pairs humans labelled.
- ``qrels``: ``caption 0 video rel`` for resolved pairs, judged negatives kept as 0 so
  judged-fraction measures work, and each caption's own video as 1 (the benchmark's
  original positive, whatever annotators said). Disagreements are left out (unjudged).
- ``raw``: every live label with annotator, time and seconds spent.
- ``fire-json``: the layout of the FIRE release (annotations and disagreements); an entry
  labelled by a proxy rule carries an extra ``auto_label`` field.
- Resolution: pairs are labelled by the policy's strict majority (``Pair.status``), or, with
  ``method="dawid-skene"`` (the default once the campaign was last resolved that way), by
  :func:`annotation.campaign_read.resolution.campaign_resolution`; then every csv / jsonl row and
  FIRE entry carries a ``confidence`` (probability of relevance) and the FIRE metadata
  names the ``method``.
- ``gold`` / ``gold-csv``: the campaign's gold pairs with every answer given on them
  (:mod:`annotation.gold_file`); never labels, and like every export for admins only.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from django.contrib.auth import get_user_model
from django.db.models import Count, Max, Min
from django.utils import timezone

from annotation import gold_file
from annotation.campaign_read.resolution import MAJORITY, METHODS, campaign_resolution
from annotation.judging import statements
from annotation.models import Campaign, Judgement, Pair
from annotation.services import gold
from annotation.services.campaigns import load_provenance
from config.errors import UserError
from retrieval.formats import fire_json, labels, trec
from retrieval.label_status import CODES, names
from retrieval.models import Caption, LabelSet

EXPORT_FORMATS = ("csv", "jsonl", "qrels", "raw", "fire-json", "gold", "gold-csv")
GOLD_FORMATS = ("gold", "gold-csv")
"""Exports of gold pairs and the answers on them, not of labels (admins only)."""
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "qrels": "text/plain; charset=utf-8",
    "raw": "application/x-ndjson; charset=utf-8",
    "fire-json": "application/json; charset=utf-8",
    "gold": "application/x-ndjson; charset=utf-8",
    "gold-csv": "text/csv; charset=utf-8",
}
EXTENSIONS = {
    "csv": "csv",
    "jsonl": "jsonl",
    "qrels": "qrels",
    "raw": "raw.jsonl",
    "fire-json": "fire.json",
    "gold": "gold.jsonl",
    "gold-csv": "gold.csv",
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
        lines = labels.csv_lines(
            _label_records(campaign, override),
            campaign.run_names(),
            **auto,
            **({} if override is None else {"confidence": True}),
        )
    elif fmt == "jsonl":
        lines = labels.jsonl_lines(_label_records(campaign, override), **auto)
    elif fmt == "qrels":
        lines = trec.qrels_lines(_qrels_rows(campaign, override))
    elif fmt == "raw":
        lines = labels.raw_lines(_raw_labels(campaign))
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
        lines = fire_json.fire_json_chunks(
            metadata,
            _fire_entries(campaign, (Pair.Status.RELEVANT, Pair.Status.IRRELEVANT), override),
            _fire_entries(campaign, (Pair.Status.DISAGREEMENT,), override),
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
    """Whether a proxy labelled any of the campaign's pairs (see :mod:`annotation.services.proxy_queue`)."""
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
    parts: list[str] = []
    size = 0
    for line in lines:
        parts.append(line)
        size += len(line)
        if size >= CHUNK_BYTES:
            yield "".join(parts)
            parts, size = [], 0
    if parts:
        yield "".join(parts)


@dataclass(frozen=True, slots=True)
class _PairRow:
    """One exported pair with everything every pair format needs."""

    pk: int
    caption_id: int
    caption_key: str
    caption: str
    video_key: str
    status: str
    adjudicated: bool
    annotators: list[str]
    annotator_labels: list[int]
    response_ids: list[str]
    runs: dict[str, int]
    auto_label: str
    confidence: float | None = None


def _windows(campaign: Campaign, status: str | None = None) -> Iterator[tuple[int, int]]:
    """Primary-key ranges ``[low, high)`` covering the campaign's pairs, ``BATCH`` ids each.

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
    for low in range(bounds["low"], bounds["high"] + 1, BATCH):
        yield low, low + BATCH


def _joined_rows(campaign: Campaign, status: str | None = None) -> Iterator[list[tuple]]:
    """The campaign's rows of :data:`annotation.judging.statements.EXPORT_ROWS`, one list per id
    window (other campaigns' rows dropped)."""
    campaign_of = statements.reader(statements.EXPORT_COLUMNS, "campaign_id")
    for low, high in _windows(campaign, status):
        yield [row for row in statements.export_rows(low, high) if campaign_of(row) == campaign.pk]


def _pair_rows(
    campaign: Campaign, statuses: Iterable[str] = FINAL, override: Override | None = None
) -> Iterator[_PairRow]:
    """The campaign's pairs with one of ``statuses`` and their live labels, in id order.

    With ``override`` a pair's status and confidence are the override's (pairs it does not
    name are left out: it covers every finished pair).
    """
    wanted = set(statuses)
    run_names = campaign.run_names()
    ranks = load_provenance(campaign)
    usernames = _usernames()
    rare = wanted == {Pair.Status.DISAGREEMENT} and override is None
    pair_and_label = statements.reader(
        statements.EXPORT_COLUMNS,
        *("pair_id", "status", "pool_row", "caption_id", "annotator_id", "label", "uuid"),
    )
    described = statements.reader(
        statements.EXPORT_COLUMNS,
        "caption_key",
        "caption_text",
        "video_key",
        "adjudicated",
        "auto_label",
    )
    for rows in _joined_rows(campaign, Pair.Status.DISAGREEMENT if rare else None):
        pair: _PairRow | None = None
        for row in rows:
            pk, status, pool_row, caption_id, annotator, label, uuid = pair_and_label(row)
            if pair is None or pair.pk != pk:
                if pair is not None:
                    yield pair
                confidence = None
                if override is not None:
                    status, confidence = override.get(pk, (Pair.Status.PENDING, None))
                if status not in wanted:
                    pair = None
                    continue
                caption_key, text, video_key, adjudicated, auto_label = described(row)
                pair = _PairRow(
                    pk=pk,
                    caption_id=caption_id,
                    caption_key=caption_key,
                    caption=text,
                    video_key=video_key,
                    status=status,
                    adjudicated=bool(adjudicated),
                    annotators=[],
                    annotator_labels=[],
                    response_ids=[],
                    runs=dict(_retrieved(run_names, ranks[pool_row].tolist())),
                    auto_label=auto_label or "",
                    confidence=confidence,
                )
            if annotator is not None:
                pair.annotators.append(usernames[annotator])
                pair.annotator_labels.append(CODES[label])
                pair.response_ids.append(statements.uuid_text(uuid))
        if pair is not None:
            yield pair


def _usernames() -> dict[int, str]:
    """Every account's name: one small query, cheaper than finding the campaign's annotators."""
    return dict(get_user_model().objects.values_list("pk", "username"))


def _label_records(
    campaign: Campaign, override: Override | None = None
) -> Iterator[labels.LabelRecord]:
    for row in _pair_rows(campaign, override=override):
        yield labels.LabelRecord(
            caption_key=row.caption_key,
            video_key=row.video_key,
            label=CODES[row.status],
            votes=len(row.annotator_labels),
            adjudicated=row.adjudicated,
            caption=row.caption,
            annotators=tuple(row.annotators),
            runs=row.runs,
            auto_label=row.auto_label,
            confidence=row.confidence,
        )


def _qrels_rows(
    campaign: Campaign, override: Override | None = None
) -> Iterator[tuple[str, str, int]]:
    """Resolved pairs (originals forced to 1), then the originals no pair covered."""
    pair_captions = Pair.objects.filter(campaign=campaign).values("caption_id")
    originals = {
        pk: (key, video_key)
        for pk, key, video_key in Caption.objects.filter(pk__in=pair_captions)
        .order_by("pk")
        .values_list("pk", "key", "video__key")
    }
    written: set[int] = set()
    for row in _pair_rows(campaign, (Pair.Status.RELEVANT, Pair.Status.IRRELEVANT), override):
        original = originals[row.caption_id][1] == row.video_key
        if original:
            written.add(row.caption_id)
        relevant = original or row.status == Pair.Status.RELEVANT
        yield row.caption_key, row.video_key, int(relevant)
    for pk, (key, video_key) in originals.items():
        if pk not in written:
            yield key, video_key, 1


def _raw_labels(campaign: Campaign) -> Iterator[labels.RawLabel]:
    """Every live label, pair by pair, each pair's labels in the order they were given."""
    usernames = _usernames()
    label_of = statements.reader(
        statements.EXPORT_COLUMNS,
        *("caption_key", "video_key", "annotator_id", "label", "seconds", "created_at"),
    )
    for rows in _joined_rows(campaign):
        for row in rows:
            caption_key, video_key, annotator, label, seconds, created = label_of(row)
            if annotator is None:
                continue  # a pair nobody labelled yet
            yield labels.RawLabel(
                caption_key=caption_key,
                video_key=video_key,
                annotator=usernames[annotator],
                label=CODES[label],
                seconds=seconds,
                created_at=statements.aware_time(created).isoformat(),
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
        )
    )
    for caption_key, video_key, annotator, label, seconds, created in discounted.iterator():
        yield labels.RawLabel(
            caption_key=caption_key,
            video_key=video_key,
            annotator=usernames[annotator],
            label=CODES[label],
            seconds=seconds,
            created_at=created.isoformat(),
            discounted=True,
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
) -> Iterator[fire_json.FireEntry]:
    dataset = campaign.dataset.name
    for row in _pair_rows(campaign, statuses, override):
        yield fire_json.FireEntry(
            query=row.caption,
            video_id=row.video_key,
            label=None if row.status == Pair.Status.DISAGREEMENT else CODES[row.status],
            annotator_ids=tuple(row.annotators),
            annotator_labels=tuple(row.annotator_labels),
            response_ids=tuple(row.response_ids),
            queue_ids=(str(row.pk),),
            models=tuple(row.runs),
            dataset=dataset,
            auto_label=row.auto_label,
            confidence=row.confidence,
        )


def _retrieved(run_names: list[str], ranks: list[int]) -> Iterator[tuple[str, int]]:
    """(run, rank) for the runs that retrieved a pair (rank 0: not retrieved)."""
    return ((name, rank) for name, rank in zip(run_names, ranks, strict=True) if rank)
