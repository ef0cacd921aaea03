"""Machine assessors of a campaign: import their judgements from a file, and measure each
against the humans.

A machine assessor (a vision-language model run elsewhere) judges pooled pairs, and the
campaign's gold pairs (for its accuracy on gold), with a score in [0, 1] and/or a label.
Its judgements are stored apart (:class:`~annotation.models.Assessor`,
:class:`~annotation.models.MachineJudgement`) to become a feature of a relevance predictor:
they never enter a pair's counters or status, the tallies, the labels read model, an
export, gold answers, annotator scores or qualification. Importing an assessor that is
already stored REPLACES its judgements (a re-run of the model with a fix is the common
case): the file is the assessor's whole record.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.db import transaction
from django.db.models import FloatField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from annotation.assessors import agreement
from annotation.assessors import file as machine_file
from annotation.campaign_read.labels import load_campaign_labels
from annotation.judging.statements import queryset_array
from annotation.models import Assessor, Campaign, CampaignRun, GoldPair, MachineJudgement, Pair
from annotation.policy import label_models
from retrieval.formats.records import FormatError
from retrieval.ids import PairKeys, positions_of
from retrieval.label_sets.status import CODES, NAMES
from retrieval.scoring.circularity import shared_families
from retrieval.search.runs_service import KeyIndex

BATCH = 1000


@dataclass(frozen=True)
class AssessmentImport:
    """What an import stored: the assessors it named (sorted), rows read, distinct pooled
    pairs and distinct (unpooled) gold pairs judged, and which assessors replaced ones
    already stored."""

    campaign: str
    file: str
    assessors: tuple[str, ...]
    rows: int
    pairs: int
    replaced: tuple[str, ...] = ()
    gold: int = 0


@dataclass(frozen=True)
class AssessorRow:
    """One assessor of a campaign with its figures beside the humans'."""

    name: str
    family: str
    source_file: str
    figures: agreement.AssessorFigures
    same_family_runs: tuple[str, ...] = ()
    """The campaign's runs of the assessor's model family: judged partly by their own kind."""


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
    as ``campaign``'s, all or nothing: every record is resolved to a pooled or gold pair
    (:func:`_resolve_pairs`) before one write transaction, which replaces the judgements of an
    assessor already stored. ``shown`` names the file in errors (an upload's own name)."""
    path = Path(path)
    name = shown or path.name
    try:
        records = list(machine_file.read_machine_judgements(path, fmt))
    except FormatError as exc:
        if shown is None or Path(str(exc.path)) != path:
            raise
        raise FormatError(shown, exc.line, exc.field, exc.message, where=exc.where) from None
    pair_ids, gold_ids = _resolve_pairs(campaign, records, shown or path)
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
                    pair_id=pair if pair >= 0 else None,
                    gold_pair_id=gold if gold >= 0 else None,
                    score=record.score,
                    label="" if record.label is None else NAMES[record.label],
                )
                for record, pair, gold in zip(
                    records, pair_ids.tolist(), gold_ids.tolist(), strict=True
                )
            ),
            batch_size=BATCH,
        )
    return AssessmentImport(
        campaign=campaign.name,
        file=name,
        assessors=tuple(sorted(families)),
        rows=len(records),
        pairs=len(np.unique(pair_ids[pair_ids >= 0])),
        gold=len(np.unique(gold_ids[gold_ids >= 0])),
        replaced=tuple(sorted(existing)),
    )


KEYED = np.dtype([("caption_id", np.int64), ("video_id", np.int64), ("id", np.int64)])


def _resolve_pairs(
    campaign: Campaign, records: list[machine_file.MachineRecord], path: Path | str
) -> tuple[np.ndarray, np.ndarray]:
    """The pooled pair id and the gold pair id each record names (-1 for the other): a
    (caption, video) pooled in ``campaign`` is its pooled pair (even when also gold, so a
    judgement a predictor may use is never set aside), else one of its gold pairs. Looked up
    as arrays (the dataset's caption and video keys, the campaign's pairs and its gold
    pairs, one query each, whatever the rows); the first record naming a key not in the
    dataset, or a pair neither pooled nor gold, is a FormatError naming its line and field."""
    dataset = campaign.dataset
    captions = KeyIndex.captions(dataset).by_key
    videos = KeyIndex.videos(dataset).by_key
    n = len(records)
    caption = np.fromiter((captions.get(r.caption_key, -1) for r in records), np.int64, n)
    video = np.fromiter((videos.get(r.video_key, -1) for r in records), np.int64, n)
    pooled = queryset_array(
        Pair.objects.filter(campaign=campaign).values_list("caption_id", "video_id", "id"), KEYED
    )
    gold = queryset_array(
        GoldPair.objects.filter(campaign=campaign).values_list("caption_id", "video_id", "id"),
        KEYED,
    )
    tables = np.concatenate([pooled, gold])
    rows = max(int(caption.max(initial=0)), int(tables["caption_id"].max(initial=0))) + 1
    keys = PairKeys.fit(rows, tables["video_id"])
    wanted = np.where(caption >= 0, keys.encode(np.maximum(caption, 0), video), -1)
    pair_id, gold_id = (
        # positions_of is -1 where absent: the appended -1 is then the id.
        np.append(table["id"], -1)[
            positions_of(keys.encode(table["caption_id"], table["video_id"]), wanted)
        ]
        for table in (pooled, gold)
    )
    gold_id[pair_id >= 0] = -1
    found = (pair_id >= 0) | (gold_id >= 0)
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
                f"caption {record.caption_key!r} and video {record.video_key!r} are neither a "
                f"pair pooled in campaign {campaign.name!r} nor one of its gold pairs",
            )
        message = f"no {field} with key {key!r} in dataset {dataset.name!r}"
        raise FormatError(path, record.line, field, message)
    return pair_id, gold_id


_MACHINE_ROW = np.dtype(
    [
        ("assessor_id", np.int64),
        ("pooled_id", np.int64),
        ("gold_id", np.int64),
        ("given", np.float64),
        ("said", np.int64),
    ]
)


def machine_judgements(campaign: Campaign) -> np.ndarray:
    """Every machine judgement of the campaign's assessors, one query: its assessor, pooled
    and gold pair (-1: none), score ``given`` (NaN: none) and label ``said`` (1, 0 or
    :data:`~annotation.assessors.agreement.NO_LABEL`)."""
    rows = queryset_array(
        MachineJudgement.objects.filter(assessor__campaign=campaign)
        .order_by()
        .annotate(
            pooled_id=Coalesce("pair_id", Value(-1)),
            gold_id=Coalesce("gold_pair_id", Value(-1)),
            given=Coalesce("score", Value(-1.0), output_field=FloatField()),
            said=label_models.verdict("label"),
        )
        .values_list(*_MACHINE_ROW.names),
        _MACHINE_ROW,
    )
    rows["given"][rows["given"] < 0] = np.nan  # scores lie in [0, 1]: -1 is none
    return rows


def campaign_assessors(campaign: Campaign) -> CampaignAssessors:
    """Each assessor of ``campaign`` beside the humans (:mod:`annotation.assessors.agreement`):
    against the gold labels (its judgements of pooled pairs that are gold, and of gold pairs
    not pooled) and the humans' resolved labels (the one labels read model), with the
    campaign's runs of its model family (:mod:`retrieval.scoring.circularity`), in a fixed
    number of queries whatever the assessors, judgements or runs; one query when there is
    no assessor."""
    assessors = list(
        Assessor.objects.filter(campaign=campaign)
        .order_by("name")
        .values_list("pk", "name", "family", "source_file")
    )
    if not assessors:  # the annotators page asks every time: no labels to load for none
        return CampaignAssessors(campaign.name, 0, 0, ())
    rows = machine_judgements(campaign)
    pairs, golds, scores = rows["pooled_id"], rows["gold_id"], rows["given"]
    n = len(rows)
    who = positions_of(np.array([pk for pk, *_ in assessors], np.int64), rows["assessor_id"])
    labelled = load_campaign_labels(campaign)
    human = np.full(n, agreement.NO_LABEL, dtype=np.int64)
    if labelled.n_pairs and n:
        slot = pairs - labelled.first_pair_id
        inside = (pairs >= 0) & (slot >= 0) & (slot < labelled.n_pairs)
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
        .values_list("pk", "pooled", "label")
    )
    gold = _gold_labels(gold_rows, pairs, golds)
    figures = agreement.assessor_figures(who, scores, rows["said"], human, gold, len(assessors))
    runs = list(  # in provenance order: (run, its model's encoder, model name)
        CampaignRun.objects.filter(campaign=campaign)
        .order_by("position")
        .values_list("run__name", "run__model__encoder", "run__model__name")
    )
    return CampaignAssessors(
        campaign=campaign.name,
        gold_pairs=len(gold_rows),
        resolved_pairs=int((labelled.resolved >= 0).sum()),
        assessors=tuple(
            AssessorRow(
                name=name,
                family=family,
                source_file=source,
                figures=row,
                same_family_runs=tuple(
                    run for run, encoder, model in runs if shared_families([family], encoder, model)
                ),
            )
            for (_, name, family, source), row in zip(assessors, figures, strict=True)
        ),
    )


def _gold_labels(
    gold_rows: list[tuple[int, int | None, str]], pairs: np.ndarray, golds: np.ndarray
) -> np.ndarray:
    """Each judgement's gold label code (:data:`~annotation.assessors.agreement.NO_LABEL` where
    none): a judgement of a pooled pair reads the gold pair of the same caption and video, one
    of a gold pair its own; ``gold_rows`` are (gold pair id, pooled pair id or None, label)."""
    g = len(gold_rows)
    gold_id = np.fromiter((row[0] for row in gold_rows), np.int64, g)
    pooled_id = np.fromiter((-1 if row[1] is None else row[1] for row in gold_rows), np.int64, g)
    code = np.fromiter((CODES[row[2]] for row in gold_rows), np.int64, g)
    pooled = pooled_id >= 0
    # positions_of is -1 where absent: the appended NO_LABEL is then the label.
    by_pair = np.append(code[pooled], agreement.NO_LABEL)[positions_of(pooled_id[pooled], pairs)]
    by_gold = np.append(code, agreement.NO_LABEL)[positions_of(gold_id, golds)]
    return np.where(pairs >= 0, by_pair, by_gold)
