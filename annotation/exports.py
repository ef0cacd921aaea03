"""Export a campaign's labels, streamed: csv, jsonl, TREC qrels, raw labels and FIRE JSON.

Every format is produced by a generator of text chunks that walks the pairs (or, for raw,
the judgements) in primary-key batches, so a campaign of any size exports with flat memory
to a file or an HTTP response. Only pairs with a final label or a disagreement are
exported as pairs; pending pairs have no final label yet.

- ``csv`` / ``jsonl``: one row per pair (see :mod:`retrieval.formats.labels`).
- ``qrels``: ``caption 0 video rel`` for resolved pairs, judged negatives kept as 0 so
  judged-fraction measures work, and each caption's own video as 1 (the benchmark's
  original positive, whatever annotators said). Disagreements are left out (unjudged).
- ``raw``: every live label with annotator, time and seconds spent.
- ``fire-json``: the layout of the FIRE release (annotations and disagreements).
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import Count
from django.utils import timezone

from annotation.campaigns import load_provenance
from annotation.models import Campaign, Judgement, Pair
from retrieval import judged
from retrieval.formats import fire_json, labels, trec
from retrieval.models import Caption, Video

EXPORT_FORMATS = ("csv", "jsonl", "qrels", "raw", "fire-json")
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "qrels": "text/plain; charset=utf-8",
    "raw": "application/x-ndjson; charset=utf-8",
    "fire-json": "application/json; charset=utf-8",
}
EXTENSIONS = {
    "csv": "csv",
    "jsonl": "jsonl",
    "qrels": "qrels",
    "raw": "raw.jsonl",
    "fire-json": "fire.json",
}

BATCH = 20_000
"""Pairs or judgements read per query."""
CHUNK_BYTES = 1 << 16
"""Text joined before it is handed on (one HTTP chunk or file write)."""

FINAL = (Pair.Status.RELEVANT, Pair.Status.IRRELEVANT, Pair.Status.DISAGREEMENT)
STATUS_CODES = {
    Pair.Status.RELEVANT: judged.RELEVANT,
    Pair.Status.IRRELEVANT: judged.IRRELEVANT,
    Pair.Status.DISAGREEMENT: judged.DISAGREEMENT,
}


def filename(campaign: Campaign, fmt: str) -> str:
    """Download name, e.g. ``demo-campaign.fire.json``."""
    return f"{campaign.name.replace(' ', '_')}.{EXTENSIONS[fmt]}"


def export_chunks(campaign: Campaign, fmt: str) -> Iterator[str]:
    """The export of ``campaign`` in ``fmt`` as text chunks of about 64 KiB."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (choose from {', '.join(EXPORT_FORMATS)})")
    if fmt == "csv":
        lines = labels.csv_lines(_label_records(campaign), campaign.run_names())
    elif fmt == "jsonl":
        lines = labels.jsonl_lines(_label_records(campaign))
    elif fmt == "qrels":
        lines = trec.qrels_lines(_qrels_rows(campaign))
    elif fmt == "raw":
        lines = labels.raw_lines(_raw_labels(campaign))
    else:
        lines = fire_json.fire_json_chunks(
            _fire_metadata(campaign),
            _fire_entries(campaign, (Pair.Status.RELEVANT, Pair.Status.IRRELEVANT)),
            _fire_entries(campaign, (Pair.Status.DISAGREEMENT,)),
        )
    return _buffered(lines)


def export_to_file(campaign: Campaign, fmt: str, path: Path | str) -> int:
    """Write the export to ``path``; returns the number of characters written."""
    written = 0
    with open(path, "w", encoding="utf-8", newline="") as out:
        for chunk in export_chunks(campaign, fmt):
            out.write(chunk)
            written += len(chunk)
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


@dataclass(frozen=True)
class _PairRow:
    """One exported pair with everything every pair format needs."""

    pk: int
    caption_id: int
    caption_key: str
    caption: str
    video_key: str
    status: str
    adjudicated: bool
    annotators: tuple[str, ...]
    annotator_labels: tuple[int, ...]
    response_ids: tuple[str, ...]
    runs: dict[str, int]


def _pair_rows(campaign: Campaign, statuses: Iterable[str] = FINAL) -> Iterator[_PairRow]:
    """The campaign's pairs with one of ``statuses``, in primary-key batches."""
    run_names = campaign.run_names()
    ranks = load_provenance(campaign)
    usernames = _usernames(campaign)
    pairs = Pair.objects.filter(campaign=campaign, status__in=list(statuses)).order_by("pk")
    last = 0
    while True:
        batch = list(
            pairs.filter(pk__gt=last).values_list(
                "pk", "caption_id", "video_id", "position", "status", "adjudicated"
            )[:BATCH]
        )
        if not batch:
            return
        last = batch[-1][0]
        captions = _captions(row[1] for row in batch)
        videos = dict(
            Video.objects.filter(pk__in={row[2] for row in batch}).values_list("pk", "key")
        )
        votes = _votes(campaign, batch[0][0], last, usernames)
        positions = np.fromiter((row[3] for row in batch), np.int64, len(batch))
        batch_ranks = ranks[positions].tolist() if len(ranks) else [[]] * len(batch)
        for (pk, caption_id, video_id, _, status, adjudicated), row_ranks in zip(
            batch, batch_ranks, strict=True
        ):
            caption_key, text = captions[caption_id]
            names, values, uuids = votes.get(pk, ((), (), ()))
            yield _PairRow(
                pk=pk,
                caption_id=caption_id,
                caption_key=caption_key,
                caption=text,
                video_key=videos[video_id],
                status=status,
                adjudicated=bool(adjudicated),
                annotators=names,
                annotator_labels=values,
                response_ids=uuids,
                runs={
                    name: int(rank) for name, rank in zip(run_names, row_ranks, strict=True) if rank
                },
            )


def _usernames(campaign: Campaign) -> dict[int, str]:
    ids = Judgement.objects.filter(pair__campaign=campaign).values("annotator_id").distinct()
    return dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))


def _captions(ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    rows = Caption.objects.filter(pk__in=set(ids)).values_list("pk", "key", "text")
    return {pk: (key, text) for pk, key, text in rows}


def _votes(
    campaign: Campaign, first: int, last: int, usernames: dict[int, str]
) -> dict[int, tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...]]]:
    """Live labels of pairs ``first..last``: (annotators, labels 1/0, judgement uuids)."""
    grouped: dict[int, tuple[list[str], list[int], list[str]]] = {}
    rows = (
        Judgement.objects.filter(
            pair__campaign=campaign, pair_id__gte=first, pair_id__lte=last, undone_at__isnull=True
        )
        .order_by("pair_id", "created_at", "pk")
        .values_list("pair_id", "annotator_id", "label", "uuid")
    )
    for pair_id, annotator_id, label, uuid in rows:
        names, values, uuids = grouped.setdefault(pair_id, ([], [], []))
        names.append(usernames[annotator_id])
        values.append(1 if label == Judgement.Label.RELEVANT else 0)
        uuids.append(str(uuid))
    return {pk: (tuple(n), tuple(v), tuple(u)) for pk, (n, v, u) in grouped.items()}


def _label_records(campaign: Campaign) -> Iterator[labels.LabelRecord]:
    for row in _pair_rows(campaign):
        yield labels.LabelRecord(
            caption_key=row.caption_key,
            video_key=row.video_key,
            label=STATUS_CODES[row.status],
            votes=len(row.annotator_labels),
            adjudicated=row.adjudicated,
            caption=row.caption,
            annotators=row.annotators,
            runs=row.runs,
        )


def _qrels_rows(campaign: Campaign) -> Iterator[tuple[str, str, int]]:
    """Resolved pairs (originals forced to 1), then the originals no pair covered."""
    pair_captions = Pair.objects.filter(campaign=campaign).values("caption_id")
    originals = {
        pk: (key, video_key)
        for pk, key, video_key in Caption.objects.filter(pk__in=pair_captions)
        .order_by("pk")
        .values_list("pk", "key", "video__key")
    }
    written: set[int] = set()
    for row in _pair_rows(campaign, (Pair.Status.RELEVANT, Pair.Status.IRRELEVANT)):
        original = originals[row.caption_id][1] == row.video_key
        if original:
            written.add(row.caption_id)
        relevant = original or row.status == Pair.Status.RELEVANT
        yield row.caption_key, row.video_key, int(relevant)
    for pk, (key, video_key) in originals.items():
        if pk not in written:
            yield key, video_key, 1


def _raw_labels(campaign: Campaign) -> Iterator[labels.RawLabel]:
    usernames = _usernames(campaign)
    judgements = Judgement.objects.filter(pair__campaign=campaign, undone_at__isnull=True)
    last = 0
    while True:
        batch = list(
            judgements.filter(pk__gt=last)
            .order_by("pk")
            .values_list(
                "pk",
                "pair__caption__key",
                "pair__video__key",
                "annotator_id",
                "label",
                "seconds",
                "created_at",
            )[:BATCH]
        )
        if not batch:
            return
        last = batch[-1][0]
        for _, caption_key, video_key, annotator_id, label, seconds, created in batch:
            yield labels.RawLabel(
                caption_key=caption_key,
                video_key=video_key,
                annotator=usernames[annotator_id],
                label=1 if label == Judgement.Label.RELEVANT else 0,
                seconds=seconds,
                created_at=created.isoformat(),
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
            "annotations": counts.get("relevant", 0) + counts.get("irrelevant", 0),
            "relevant": counts.get("relevant", 0),
            "irrelevant": counts.get("irrelevant", 0),
            "disagreements": counts.get("disagreement", 0),
            "pending": counts.get("pending", 0),
        },
    }


def _fire_entries(campaign: Campaign, statuses: tuple[str, ...]) -> Iterator[fire_json.FireEntry]:
    dataset = campaign.dataset.name
    for row in _pair_rows(campaign, statuses):
        yield fire_json.FireEntry(
            query=row.caption,
            video_id=row.video_key,
            label=None if row.status == Pair.Status.DISAGREEMENT else STATUS_CODES[row.status],
            annotator_ids=row.annotators,
            annotator_labels=row.annotator_labels,
            response_ids=row.response_ids,
            queue_ids=(str(row.pk),),
            models=tuple(row.runs),
            dataset=dataset,
        )
