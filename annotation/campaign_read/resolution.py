"""Turn a campaign's finished pairs into a retrieval label set (FIRE §3.1-3.2), by FIRE's
strict majority or by Dawid & Skene (1979) confusion matrices fitted by EM over every live
label and gold answer; an adjudicated label always wins, and each pair carries its
probability of relevance.
"""

from dataclasses import dataclass, replace

import numpy as np
from django.contrib.auth import get_user_model

from annotation.active import stages as active_stages
from annotation.campaign_read.labels import finished_pairs, load_campaign_labels
from annotation.models import Assessor, Campaign, GoldJudgement, GoldPair, Pair
from annotation.ordering import samples
from annotation.people import quality
from annotation.policy import label_models
from retrieval.datasets.names import derived_name
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import (
    LabelSetError,
    extend_label_set,
    store_label_set,
    version_name,
)
from retrieval.label_sets.status import CODES, LabelStatus
from retrieval.models import LabelSet
from retrieval.scoring.circularity import (
    ASSESSOR_FAMILIES,
    normalised_families,
    recorded_families,
)
from retrieval.scoring.score_intervals import ACTIVE_METADATA

METHODS = quality.METHODS
MAJORITY, DAWID_SKENE = quality.MAJORITY, quality.DAWID_SKENE


@dataclass(frozen=True)
class Resolution:
    """A campaign's finished pairs resolved by ``method``, as arrays in pair id order:
    ``status`` codes, ``confidence`` (probability of relevance), live ``labels`` per pair,
    and for Dawid-Skene the ``fit``'s summary."""

    method: str
    pair_ids: np.ndarray
    caption_ids: np.ndarray
    video_ids: np.ndarray
    status: np.ndarray
    confidence: np.ndarray
    labels: np.ndarray
    adjudicated: np.ndarray
    fit: dict

    def judged(self) -> Judged:
        return Judged.build(
            self.caption_ids,
            self.video_ids,
            self.status,
            self.labels,
            self.adjudicated,
            self.confidence,
        )


@dataclass(frozen=True)
class Overturns:
    """How a model's resolution differs from the majority's: majority labels it flipped
    (``pairs``), disagreements it ``settled``, and per annotator the labels it overturned."""

    pairs: int
    settled: int
    by_annotator: np.ndarray


def overturned(
    majority: np.ndarray,
    model: np.ndarray,
    judgement_pairs: np.ndarray,
    judgement_annotators: np.ndarray,
    judgement_labels: np.ndarray,
    n_annotators: int,
) -> Overturns:
    """Compare two resolutions of the same pairs and count whose labels the model overturned
    (``judgement_pairs`` are pair positions, -1 for no resolved pair)."""
    majority, model = np.asarray(majority), np.asarray(model)
    decided = (majority == LabelStatus.RELEVANT) | (majority == LabelStatus.IRRELEVANT)
    labelled = (model == LabelStatus.RELEVANT) | (model == LabelStatus.IRRELEVANT)
    flipped = decided & labelled & (model != majority)
    settled = (majority == LabelStatus.DISAGREEMENT) & labelled
    at = np.asarray(judgement_pairs, dtype=np.int64)
    known = at >= 0
    at, who = at[known], np.asarray(judgement_annotators, dtype=np.int64)[known]
    said = np.asarray(judgement_labels)[known]
    lost = flipped[at] & (said != model[at])
    return Overturns(
        pairs=int(flipped.sum()),
        settled=int(settled.sum()),
        by_annotator=np.bincount(who[lost], minlength=n_annotators)[:n_annotators],
    )


def campaign_resolution(campaign: Campaign, method: str = MAJORITY) -> Resolution:
    """The campaign's finished pairs (not pending) resolved by ``method``."""
    if method not in METHODS:
        raise LabelSetError(
            f"unknown resolution method {method!r} (choose from {', '.join(METHODS)})"
        )
    pair_ids, captions, videos, status, labels, adjudicated, pool_rows = finished_pairs(campaign)
    n = len(pair_ids)
    # A majority-resolved pair's probability of relevance: 1, 0, or 0.5 for a disagreement.
    relevant, irrelevant = status == LabelStatus.RELEVANT, status == LabelStatus.IRRELEVANT
    confidence = np.select([relevant, irrelevant], [1.0, 0.0], 0.5)
    resolution = Resolution(
        method, pair_ids, captions, videos, status, confidence, labels, adjudicated, fit={}
    )
    if method == MAJORITY and n and campaign.settings.label_policy.adaptive:
        # The adaptive policy's own resolution: each pair keeps its posterior, so a re-score
        # from the label set alone says how sure each score is (an admin's label is sure).
        rows_at = list(zip(pair_ids.tolist(), pool_rows.tolist(), strict=True))
        posterior = label_models.snapshot(campaign, rows_at).posterior
        confidence = np.where(adjudicated, resolution.confidence, posterior)
        return replace(resolution, confidence=confidence)
    if method == MAJORITY or not n:
        return resolution
    return _dawid_skene(campaign, resolution)


def _dawid_skene(campaign: Campaign, majority: Resolution) -> Resolution:
    """Re-resolve ``majority``'s pairs by Dawid-Skene over every live judgement and gold
    answer (items: the dense pairs, then the gold pairs); a pair the model cannot place
    (a proxy labelled it) keeps its policy status."""
    data = load_campaign_labels(campaign)
    first, n_pairs = data.first_pair_id, data.n_pairs
    index = {name: i for i, name in enumerate(data.annotators)}
    known, gold = _known(campaign, first, n_pairs)
    gold_item = {pk: n_pairs + i for i, (pk, *_) in enumerate(gold)}

    usernames = dict(get_user_model().objects.values_list("pk", "username"))
    answers = GoldJudgement.objects.filter(gold_pair__campaign=campaign)
    gold_answers = [  # (item, annotator, label); annotators who gave live labels come first
        (gold_item[pair], index.setdefault(usernames.get(who, str(who)), len(index)), CODES[label])
        for pair, who, label in answers.values_list("gold_pair_id", "annotator_id", "label")
    ]
    names = list(index)
    gold_items, gold_annotators, gold_labels = np.array(gold_answers, np.int64).reshape(-1, 3).T
    items = np.concatenate([data.pair_index, gold_items])
    annotators = np.concatenate([data.annotator_index, gold_annotators])
    labels = np.concatenate([data.labels, gold_labels])
    fit = quality.dawid_skene(items, annotators, labels, n_pairs + len(gold), len(names), known)

    at = majority.pair_ids - first
    placed = fit.status[at] != LabelStatus.PENDING
    status = np.where(placed, fit.status[at], majority.status)
    confidence = np.where(placed, fit.confidence[at], majority.confidence)
    # Live judgements' pair positions in ``majority`` (-1: a pair not resolved, e.g. pending).
    slot = np.full(n_pairs, -1, dtype=np.int64)
    slot[at] = np.arange(len(at))
    turned = overturned(
        majority.status,
        status,
        slot[data.pair_index],
        data.annotator_index,
        data.labels,
        len(names),
    )
    return replace(
        majority,
        method=DAWID_SKENE,
        status=status.astype(np.int64),
        confidence=confidence,
        fit=_fit_summary(fit, names, len(gold), len(gold_answers), turned),
    )


def _known(campaign: Campaign, first: int, n_pairs: int) -> tuple[np.ndarray, list[tuple]]:
    """The labels Dawid-Skene takes as known per item (adjudicated pairs, pairs that are gold,
    gold pairs), and the gold pairs (pk, caption, video, label) in item order."""
    known = np.full(n_pairs, quality.UNKNOWN, dtype=np.int64)
    adjudicated = Pair.objects.filter(campaign=campaign).exclude(adjudicated="")
    for pk, verdict in adjudicated.values_list("pk", "adjudicated"):
        known[pk - first] = CODES[verdict]
    gold = list(
        GoldPair.objects.filter(campaign=campaign)
        .order_by("pk")
        .values_list("pk", "caption_id", "video_id", "label")
    )
    known = np.concatenate([known, [CODES[row[3]] for row in gold]]).astype(np.int64)
    pair_of = {
        (caption, video): pk
        for pk, caption, video in Pair.objects.filter(campaign=campaign)
        .filter(caption_id__in=GoldPair.objects.filter(campaign=campaign).values("caption_id"))
        .values_list("pk", "caption_id", "video_id")
    }
    for _, caption, video, label in gold:
        pk = pair_of.get((caption, video))
        if pk is not None and known[pk - first] == quality.UNKNOWN:
            known[pk - first] = CODES[label]
    return known, gold


def _fit_summary(fit, names: list[str], gold_pairs: int, gold_answers: int, turned) -> dict:
    """What the label set records of the fit, and the majority labels it overturned."""
    return {
        "prior": fit.prior,
        "iterations": fit.iterations,
        "converged": fit.converged,
        "gold_pairs": gold_pairs,
        "gold_answers": gold_answers,
        # Per annotator: P(says relevant | relevant) and P(says irrelevant | irrelevant).
        "annotators": {
            name: {
                "sensitivity": round(float(fit.confusion[a, 1, 1]), 6),
                "specificity": round(float(fit.confusion[a, 0, 0]), 6),
            }
            for a, name in enumerate(names)
        },
        "overturned": {
            "pairs": turned.pairs,
            "settled_disagreements": turned.settled,
            "annotators": {
                names[a]: int(turned.by_annotator[a])
                for a in np.argsort(-turned.by_annotator, kind="stable")
                if turned.by_annotator[a]
            },
        },
    }


def resolve_campaign(
    campaign: Campaign, name: str | None = None, method: str = MAJORITY
) -> LabelSet:
    """Store the campaign's resolved pairs as the label set :func:`resolution_target` names."""
    base = extended_label_set(campaign)
    name, _ = resolution_target(campaign, name, base)
    resolution = campaign_resolution(campaign, method)
    pending = Pair.objects.filter(campaign=campaign, status=Pair.Status.PENDING).count()
    by = "" if method == MAJORITY else f" by {method}"
    description = f"Resolved from campaign {campaign.name!r}{by}"
    metadata = {
        "method": method,
        **({"dawid_skene": resolution.fit} if resolution.fit else {}),
        "campaign": campaign.name,
        "campaign_id": campaign.pk,
        "pending": pending,
        ASSESSOR_FAMILIES: assessor_families(campaign, base),
    }
    if base is not None:
        # A version: the base's pairs plus this campaign's. When the base records its pooled
        # runs, the version's are those plus this campaign's, each judged at least to the
        # shallower of the two depths (what leave-one-run-out then assumes); else unknown.
        pooled, depth = base.metadata.get("pooled_runs"), base.metadata.get("pool_depth")
        if isinstance(pooled, list) and isinstance(depth, int):
            names = [*pooled, *(n for n in campaign.run_names() if n not in pooled)]
            metadata.update(pooled_runs=names, pool_depth=min(depth, campaign.depth))
        return extend_label_set(
            base,
            resolution.judged(),
            name,
            source=LabelSet.Source.CAMPAIGN,
            description=f"{description}, added to {base.name!r}",
            metadata=metadata,
            replace=True,
        )
    active = active_stages.export_estimates(campaign)  # once an active stage is finished
    return store_label_set(
        campaign.dataset,
        name,
        resolution.judged(),
        source=LabelSet.Source.CAMPAIGN,
        description=description,
        metadata={
            **metadata,
            # What leave-one-run-out needs: which runs were pooled, and how deep.
            "pooled_runs": campaign.run_names(),
            "pool_depth": campaign.depth,
            **({} if active is None else {ACTIVE_METADATA: active}),
        },
        replace=True,
        pool_state=samples.pool_state(campaign),
    )


def assessor_families(campaign: Campaign, base: LabelSet | None = None) -> list[str]:
    """The model families of the campaign's machine assessors, with those ``base`` (the set
    a version extends) records: what a leaderboard under the new set warns of when a run
    shares one (:mod:`retrieval.scoring.circularity`); sorted, empty when none."""
    families = Assessor.objects.filter(campaign=campaign).values_list("family", flat=True)
    inherited = recorded_families(base.metadata) if base is not None else []
    return normalised_families([*families, *inherited])


def resolution_target(
    campaign: Campaign, name: str | None = None, base: LabelSet | None = None
) -> tuple[str, LabelSet | None]:
    """The label set name :func:`resolve_campaign` writes to (without ``name``, that of the
    campaign's last resolution, else the campaign's) and the set it replaces (None: new);
    a set of that name from elsewhere is refused (:class:`LabelSetError`)."""
    if not name:
        base = base if base is not None else extended_label_set(campaign)
        previous = _latest(campaign, "name")
        name = derived_name(
            previous or (version_name(base, campaign.name) if base else campaign.name)
        )
    clash = LabelSet.objects.filter(dataset=campaign.dataset, name=name).first()
    if clash is not None and clash.metadata.get("campaign_id") != campaign.pk:
        raise LabelSetError(
            f"dataset {campaign.dataset.name!r} already has a label set named {name!r} that "
            f"does not come from campaign {campaign.name!r}; choose another name"
        )
    return name, clash


def last_method(campaign: Campaign) -> str:
    """The method of the campaign's latest resolution into a label set; majority if none."""
    method = (_latest(campaign, "metadata") or {}).get("method", MAJORITY)
    return method if method in METHODS else MAJORITY


def _latest(campaign: Campaign, field: str):
    """``field`` of the label set the campaign was last resolved into (None: never)."""
    resolved = LabelSet.objects.filter(dataset_id=campaign.dataset_id)
    resolved = resolved.filter(metadata__campaign_id=campaign.pk)
    return resolved.order_by("-created_at", "-pk").values_list(field, flat=True).first()


def extended_label_set(campaign: Campaign) -> LabelSet | None:
    """The label set a campaign completes (``CampaignSpec.extends``), or None."""
    base_id = campaign.settings.extends
    if base_id is None:
        return None
    return LabelSet.objects.filter(pk=base_id, dataset=campaign.dataset).first()
