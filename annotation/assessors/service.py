"""Machine assessors of a campaign: import their judgements from a file, and measure each
against the humans.

A machine assessor (a vision-language model run elsewhere) judges pooled pairs with a score
in [0, 1] and/or a label. Its judgements are stored apart (:class:`~annotation.models.Assessor`,
:class:`~annotation.models.MachineJudgement`) to become a feature of a relevance predictor:
they never enter a pair's counters or status, the tallies, the labels read model or an
export. Importing an assessor that is already stored REPLACES its judgements (a re-run of
the model with a fix is the common case): the file is the assessor's whole record.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.db import transaction
from django.db.models import OuterRef, Subquery

from annotation.assessors import agreement
from annotation.assessors import file as machine_file
from annotation.campaign_read.labels import load_campaign_labels
from annotation.judging.statements import queryset_array
from annotation.models import Assessor, Campaign, GoldPair, MachineJudgement, Pair
from config.errors import UserError
from retrieval.formats.records import FormatError
from retrieval.ids import PairKeys
from retrieval.label_sets.status import CODES, NAMES
from retrieval.search.runs_service import KeyIndex

BATCH = 1000


class AssessorError(UserError):
    """Machine judgements cannot be imported or read as asked; nothing was written."""


@dataclass(frozen=True)
class AssessmentImport:
    """What an import stored: the assessors it named (sorted), rows read, distinct pairs
    judged, and which assessors replaced ones already stored."""

    campaign: str
    file: str
    assessors: tuple[str, ...]
    rows: int
    pairs: int
    replaced: tuple[str, ...] = ()


@dataclass(frozen=True)
class AssessorRow:
    """One assessor of a campaign with its figures beside the humans'."""

    name: str
    family: str
    source_file: str
    figures: agreement.AssessorFigures


@dataclass(frozen=True)
class CampaignAssessors:
    """Every assessor of a campaign (by name), and the counts the figures rest on."""

    campaign: str
    gold_pairs: int
    resolved_pairs: int
    assessors: tuple[AssessorRow, ...]


def import_assessments(
    campaign: Campaign, path: Path | str, fmt: str | None = None, *, shown: str | None = None
) -> AssessmentImport:
    """Store the machine judgements of a CSV or JSONL file (:mod:`annotation.assessors.file`)
    as ``campaign``'s, all or nothing: the file is read and every caption and video key
    resolved to a pooled pair of the campaign (the dataset's keys and the campaign's pairs
    read once each, whatever the rows) before one write transaction; a key not in the
    dataset or a pair not pooled is a :class:`~retrieval.formats.records.FormatError`
    naming the file, line and field. An assessor already stored has its judgements
    replaced. ``shown`` names the file in errors (an upload's own name)."""
    path = Path(path)
    name = shown or path.name
    try:
        records = list(machine_file.read_machine_judgements(path, fmt))
    except FormatError as exc:
        if shown is None or Path(str(exc.path)) != path:
            raise
        raise FormatError(shown, exc.line, exc.field, exc.message, where=exc.where) from None
    pair_ids = _pooled_pairs(campaign, records, shown or path).tolist()
    families = {record.assessor: record.family for record in records}
    with transaction.atomic():
        existing = {
            assessor.name: assessor
            for assessor in Assessor.objects.filter(campaign=campaign, name__in=list(families))
        }
        MachineJudgement.objects.filter(assessor__in=list(existing.values())).delete()
        for assessor in existing.values():
            assessor.family, assessor.source_file = families[assessor.name], name[:255]
        Assessor.objects.bulk_update(list(existing.values()), ["family", "source_file"])
        created = Assessor.objects.bulk_create(
            [
                Assessor(campaign=campaign, name=who, family=family, source_file=name[:255])
                for who, family in families.items()
                if who not in existing
            ]
        )
        ids = {assessor.name: assessor.pk for assessor in [*existing.values(), *created]}
        MachineJudgement.objects.bulk_create(
            (
                MachineJudgement(
                    assessor_id=ids[record.assessor],
                    pair_id=pair,
                    score=record.score,
                    label="" if record.label is None else NAMES[record.label],
                )
                for record, pair in zip(records, pair_ids, strict=True)
            ),
            batch_size=BATCH,
        )
    return AssessmentImport(
        campaign=campaign.name,
        file=name,
        assessors=tuple(sorted(families)),
        rows=len(records),
        pairs=len(set(pair_ids)),
        replaced=tuple(sorted(existing)),
    )


POOLED = np.dtype([("caption_id", np.int64), ("video_id", np.int64), ("id", np.int64)])


def _pooled_pairs(
    campaign: Campaign, records: list[machine_file.MachineRecord], path: Path | str
) -> np.ndarray:
    """The id of the pooled pair each record names, looked up as arrays (the dataset's caption
    and video keys and the campaign's pairs, one query each, whatever the rows); the first record naming a key not in the dataset, or a pair not
    pooled in ``campaign``, is a FormatError naming its line and field."""
    dataset = campaign.dataset
    captions = KeyIndex.captions(dataset).by_key
    videos = KeyIndex.videos(dataset).by_key
    n = len(records)
    caption = np.fromiter((captions.get(r.caption_key, -1) for r in records), np.int64, n)
    video = np.fromiter((videos.get(r.video_key, -1) for r in records), np.int64, n)
    pooled = queryset_array(
        Pair.objects.filter(campaign=campaign).values_list("caption_id", "video_id", "id"),
        POOLED,
    )
    rows = max(int(caption.max(initial=0)), int(pooled["caption_id"].max(initial=0))) + 1
    keys = PairKeys.fit(rows, pooled["video_id"])
    pooled_keys = keys.encode(pooled["caption_id"], pooled["video_id"])
    order = np.argsort(pooled_keys)
    pooled_keys = pooled_keys[order]
    wanted = keys.encode(np.maximum(caption, 0), video)
    at = np.minimum(np.searchsorted(pooled_keys, wanted), max(len(pooled_keys) - 1, 0))
    found = (caption >= 0) & (wanted >= 0)
    found &= pooled_keys[at] == wanted if len(pooled_keys) else False
    if not found.all():
        record = records[int(np.argmin(found))]
        if record.caption_key not in captions:
            key, field = record.caption_key, "caption"
        elif record.video_key not in videos:
            key, field = record.video_key, "video"
        else:
            raise FormatError(
                path,
                record.line,
                "video",
                f"caption {record.caption_key!r} and video {record.video_key!r} are not a pair "
                f"pooled in campaign {campaign.name!r}",
            )
        message = f"no {field} with key {key!r} in dataset {dataset.name!r}"
        raise FormatError(path, record.line, field, message)
    return pooled["id"][order][at]


def campaign_assessors(campaign: Campaign) -> CampaignAssessors:
    """Each assessor of ``campaign`` beside the humans (:mod:`annotation.assessors.agreement`):
    against the gold labels and the humans' resolved labels (the one labels read model), in a
    fixed number of queries whatever the assessors or judgements; one query when there is
    no assessor."""
    assessors = list(
        Assessor.objects.filter(campaign=campaign)
        .order_by("name")
        .values_list("pk", "name", "family", "source_file")
    )
    if not assessors:  # the annotators page asks every time: no labels to load for none
        return CampaignAssessors(campaign.name, 0, 0, ())
    index = {pk: position for position, (pk, *_) in enumerate(assessors)}
    rows = list(
        MachineJudgement.objects.filter(assessor__campaign=campaign).values_list(
            "assessor_id", "pair_id", "score", "label"
        )
    )
    n = len(rows)
    who = np.fromiter((index[row[0]] for row in rows), np.int64, n)
    pairs = np.fromiter((row[1] for row in rows), np.int64, n)
    scores = np.fromiter((np.nan if row[2] is None else row[2] for row in rows), np.float64, n)
    labels = np.fromiter(
        (CODES[row[3]] if row[3] else agreement.NO_LABEL for row in rows), np.int64, n
    )
    labelled = load_campaign_labels(campaign)
    human = np.full(n, agreement.NO_LABEL, dtype=np.int64)
    if labelled.n_pairs and n:
        slot = pairs - labelled.first_pair_id
        inside = (slot >= 0) & (slot < labelled.n_pairs)
        human[inside] = labelled.resolved[slot[inside]]
    gold_rows = list(
        GoldPair.objects.filter(campaign=campaign)
        .annotate(
            pooled=Subquery(
                Pair.objects.filter(
                    campaign=campaign, caption=OuterRef("caption"), video=OuterRef("video")
                ).values("pk")[:1]
            )
        )
        .values_list("pooled", "label")
    )
    gold_by_pair = {pair: CODES[label] for pair, label in gold_rows if pair is not None}
    gold = np.fromiter(
        (gold_by_pair.get(pair, agreement.NO_LABEL) for pair in pairs.tolist()), np.int64, n
    )
    figures = agreement.assessor_figures(who, scores, labels, human, gold, len(assessors))
    return CampaignAssessors(
        campaign=campaign.name,
        gold_pairs=len(gold_rows),
        resolved_pairs=int((labelled.resolved >= 0).sum()),
        assessors=tuple(
            AssessorRow(name=name, family=family, source_file=source, figures=row)
            for (_, name, family, source), row in zip(assessors, figures, strict=True)
        ),
    )
