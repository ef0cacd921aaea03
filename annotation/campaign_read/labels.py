"""A campaign's live labels as plain arrays, each pair resolved under its policy (FIRE §3.1),
read in one raw query straight into numpy (the ORM would dominate at FIRE's 660,000 labels);
a pair's dense index is its id minus the campaign's first pair id.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import Case, Max, Min, Q, Value, When

from annotation.campaign_read import agreement
from annotation.judging.statements import array, queryset_array, statement
from annotation.models import Campaign, Judgement, Pair
from annotation.policy import label_models
from annotation.policy import rules as policy
from retrieval.label_sets import status as label_status
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.status import CODES

# Building a Python object per row is most of the label loader's cost, so each row carries
# as few values as it can.

ANNOTATOR_SPAN = 2**32
"""Annotator ids below this are packed with the pair and label into one integer per row."""


class PackedKey(NamedTuple):
    key: int
    seconds: float


class JudgementKey(NamedTuple):
    key: int
    annotator: int
    seconds: float


def _judgement_keys_text(packed: bool, contiguous: bool) -> str:
    """A campaign's live judgements: ``key`` is ``(pair_id - first) * 2 + relevant``, times
    :data:`ANNOTATOR_SPAN` plus the annotator when ``packed``, and ``seconds`` (-1 when
    missing); ``contiguous`` pair ids are selected by range, without a join."""
    key = (
        "(j.{judgement.pair} - %(first)s) * 2 "
        "+ CASE WHEN j.{judgement.label} = %(relevant)s THEN 1 ELSE 0 END"
    )
    columns = (
        f"({key}) * {ANNOTATOR_SPAN} + j.{{judgement.annotator}} AS key"
        if packed
        else f"{key} AS key, j.{{judgement.annotator}} AS annotator"
    )
    where = (
        "WHERE j.{judgement.pair} BETWEEN %(first)s AND %(last)s"
        if contiguous
        else "JOIN {pair} p ON p.{pair.id} = j.{judgement.pair} WHERE p.{pair.campaign} = %(campaign)s"
    )
    return (
        f"SELECT {columns}, COALESCE(j.{{judgement.seconds}}, -1.0) AS seconds "
        f"FROM {{judgement}} j {where} AND j.{{judgement.undone_at}} IS NULL"
    )


JUDGEMENT_KEYS = statement(
    "judgement_keys",
    _judgement_keys_text,
    lambda packed, contiguous: PackedKey if packed else JudgementKey,
    [{"packed": p, "contiguous": c} for p in (True, False) for c in (True, False)],
)


def judgement_keys(
    campaign_id: int, first_pair: int, last_pair: int, contiguous: bool, packed: bool
) -> np.ndarray:
    """The rows of :data:`JUDGEMENT_KEYS` as an array (``key``, [``annotator``,] ``seconds``)."""
    names = ["key", "seconds"] if packed else ["key", "annotator", "seconds"]
    dtype = np.dtype([(name, np.float64 if name == "seconds" else np.int64) for name in names])
    params = {
        "first": first_pair,
        "last": last_pair,
        "campaign": campaign_id,
        "relevant": Judgement.Label.RELEVANT.value,
    }
    return array(JUDGEMENT_KEYS, params, dtype, packed=packed, contiguous=contiguous)


@dataclass
class CampaignLabels:
    """A campaign's live labels as arrays, one entry per label, and each pair's resolution
    over ``n_pairs`` dense slots (``in_campaign`` marks the campaign's pairs; ``resolved``:
    1/0, or -1 when not resolved; ``status``: LabelStatus codes)."""

    pair_index: np.ndarray
    annotator_index: np.ndarray
    labels: np.ndarray
    seconds: np.ndarray
    annotators: list[str]
    n_pairs: int
    resolved: np.ndarray
    status: np.ndarray
    in_campaign: np.ndarray
    pool_pairs: int
    first_pair_id: int = 0
    posterior: np.ndarray | None = None
    """Under the adaptive policy, each slot's posterior probability of relevance from its live
    labels (the prior where it has none); None under FIRE's policy."""


def load_campaign_labels(campaign: Campaign) -> CampaignLabels:
    """The campaign's live judgements as arrays, each pair resolved as the live writer does:
    :func:`policy.resolve` (FIRE §3.1; an adjudicated label always wins) or, under the
    adaptive policy, :func:`annotation.policy.label_models.adaptive_state`."""
    pairs = Pair.objects.filter(campaign=campaign)
    pool_pairs = pairs.count()
    if not pool_pairs:
        empty = np.zeros(0, dtype=np.int64)
        status, in_campaign = np.zeros(0, dtype=np.int8), np.zeros(0, dtype=bool)
        return CampaignLabels(
            empty, empty, empty, np.zeros(0), [], 0, empty, status, in_campaign, 0
        )
    # Apart, not in one aggregate: SQLite answers a lone MIN or MAX with one index seek.
    first = pairs.aggregate(first=Min("id"))["first"]
    last = pairs.aggregate(last=Max("id"))["last"]
    n_pairs = last - first + 1
    contiguous = n_pairs == pool_pairs
    in_campaign = np.full(n_pairs, contiguous)
    if not contiguous:
        ids = queryset_array(pairs.values_list("id"), np.dtype([("id", np.int64)]))["id"]
        in_campaign[ids - first] = True

    User = get_user_model()
    top_user = User.objects.aggregate(top=Max("pk"))["top"] or 0
    # Packing needs (2 * n_pairs) * ANNOTATOR_SPAN to fit in 63 bits.
    packed = n_pairs < 2**30 and 0 <= top_user < ANNOTATOR_SPAN
    # Dense pair index, annotator id, label (1 relevant), seconds (NaN where missing).
    rows = judgement_keys(campaign.pk, first, last, contiguous, packed)
    key, annotator_ids = (
        np.divmod(rows["key"], ANNOTATOR_SPAN) if packed else (rows["key"], rows["annotator"])
    )
    pair_index, labels = key >> 1, key & 1
    seconds = np.where(rows["seconds"] < 0, np.nan, rows["seconds"])
    annotators, annotator_index = _annotators(annotator_ids, User)

    # Only the few pairs whose flags matter: second-label ones and adjudicated ones.
    flagged = queryset_array(
        pairs.filter(Q(double=True) | ~Q(adjudicated=""))
        .annotate(
            verdict=Case(
                When(adjudicated=Pair.Status.RELEVANT, then=Value(1)),
                When(adjudicated=Pair.Status.IRRELEVANT, then=Value(0)),
                default=Value(policy.NOT_ADJUDICATED),
            )
        )
        .values_list("id", "double", "verdict"),
        np.dtype([("id", np.int64), ("double", np.bool_), ("verdict", np.int64)]),
    )
    double = np.zeros(n_pairs, dtype=bool)
    double[flagged["id"] - first] = flagged["double"]
    adjudicated = np.full(n_pairs, policy.NOT_ADJUDICATED, dtype=np.int64)
    adjudicated[flagged["id"] - first] = flagged["verdict"]

    counts = agreement.value_counts(pair_index, labels, n_pairs)
    total = counts[:, 0] + counts[:, 1]
    posterior = None
    if campaign.settings.label_policy.adaptive:
        posterior = label_models.campaign_posteriors(
            campaign, first, n_pairs, pair_index, annotator_ids, labels
        )
        _, status = label_models.adaptive_state(campaign, total, posterior, adjudicated)
    else:
        status = policy.resolve(counts[:, 1], total, double, campaign.max_labels, adjudicated)
    return CampaignLabels(
        pair_index=pair_index,
        annotator_index=annotator_index,
        labels=labels,
        seconds=seconds,
        annotators=annotators,
        n_pairs=n_pairs,
        # Each pair's final label (1, 0), or DISAGREEMENT (-1) for pending and disagreeing
        # pairs and slots outside the campaign.
        resolved=np.where(
            in_campaign & (status >= 0), status.astype(np.int64), label_status.DISAGREEMENT
        ),
        status=status,
        in_campaign=in_campaign,
        pool_pairs=pool_pairs,
        first_pair_id=first,
        posterior=posterior,
    )


def _annotators(annotator_ids: np.ndarray, User) -> tuple[list[str], np.ndarray]:
    """Usernames in alphabetical order, and each label's index into them."""
    if annotator_ids.size and annotator_ids.min() >= 0 and annotator_ids.max() < 1 << 24:
        seen = np.bincount(annotator_ids) > 0  # small ids: a lookup table beats sorting
        present, dense = np.flatnonzero(seen), (np.cumsum(seen) - 1)[annotator_ids]
    else:
        present, dense = np.unique(annotator_ids, return_inverse=True)
    names = dict(
        User.objects.filter(pk__in=present.tolist()).values_list("pk", User.USERNAME_FIELD)
    )
    labels = [str(names.get(pk, pk)) for pk in present.tolist()]
    order = sorted(range(len(present)), key=lambda i: labels[i])
    rank = np.empty(len(present), dtype=np.int64)
    rank[order] = np.arange(len(present))
    return [labels[i] for i in order], rank[dense]


def finished_pairs(campaign: Campaign, *, humans_only: bool = False) -> list[np.ndarray]:
    """The campaign's finished (not pending) pairs in id order as arrays: id, caption, video,
    status code, labels, adjudicated (bool) and pool row; ``humans_only`` leaves out the pairs
    a proxy labelled."""
    pairs = Pair.objects.filter(campaign=campaign).exclude(status=Pair.Status.PENDING)
    if humans_only:
        pairs = pairs.filter(auto_label="")
    fields = ("pk", "caption_id", "video_id", "status", "label_count", "adjudicated", "pool_row")
    columns = list(zip(*pairs.order_by("pk").values_list(*fields), strict=True)) or [()] * 7
    columns[3] = [CODES[status] for status in columns[3]]
    columns[5] = [bool(verdict) for verdict in columns[5]]
    return [np.array(column, bool if i == 5 else np.int64) for i, column in enumerate(columns)]


def campaign_judged(campaign: Campaign, *, humans_only: bool = False) -> Judged:
    """The campaign's finished pairs as arrays; ``humans_only`` leaves out proxy-labelled ones."""
    _, *columns, _ = finished_pairs(campaign, humans_only=humans_only)
    return Judged.build(*columns)
