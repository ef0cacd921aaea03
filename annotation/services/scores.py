"""How far each annotator of a campaign can be trusted: the ORM side of :mod:`annotation.quality`.

Per annotator (:class:`annotation.quality.AnnotatorScore`): gold accuracy with its Wilson
95% interval, sensitivity and specificity on gold, agreement with co-annotators and with
the resolved label, judgements per hour and the median seconds per judgement with breaks
(gaps over 5 minutes) left out, and the rolling gold accuracy over the last 50 gold
answers, so drift shows.

Campaign labels and gold answers are kept apart, as everywhere: agreement figures use the
campaign's live labels only (each gold answer is its own item, with no co-annotators and
no resolved label), gold figures use gold answers only. Time figures use both, since a gold
pair is judged like any other; ``labels`` counts campaign labels only. By default only
gold answers given in the queue count (qualification answers are training).
"""

from dataclasses import dataclass, replace

import numpy as np
from django.contrib.auth import get_user_model

from annotation import quality
from annotation.models import Campaign, GoldJudgement, Judgement, Pair
from retrieval.json_data import JsonData
from retrieval.label_status import CODES

LABEL_CODES = {Judgement.Label.RELEVANT.value: 1, Judgement.Label.IRRELEVANT.value: 0}


@dataclass(frozen=True)
class CampaignScores(JsonData):
    """Every annotator's scores in one campaign, in username order."""

    campaign: str
    gold_pairs: int
    gold_answers: int
    annotators: tuple[quality.AnnotatorScore, ...]


def campaign_scores(
    campaign: Campaign,
    *,
    include_qualification: bool = False,
    window: int = quality.ROLLING_GOLD,
) -> CampaignScores:
    """The scores of everyone who labelled a pair or answered a gold pair of ``campaign``."""
    labels = list(
        Judgement.objects.filter(pair__campaign=campaign, undone_at__isnull=True)
        .order_by()
        .values_list("pair_id", "annotator_id", "label", "seconds", "created_at")
    )
    answers = GoldJudgement.objects.filter(gold_pair__campaign=campaign)
    if not include_qualification:
        answers = answers.filter(purpose=GoldJudgement.Purpose.QUEUE)
    gold = list(
        answers.order_by().values_list(
            "gold_pair__label", "annotator_id", "label", "seconds", "created_at"
        )
    )
    statuses = list(Pair.objects.filter(campaign=campaign).values_list("pk", "status"))
    first = min((pk for pk, _ in statuses), default=0)
    n_pairs = (max(pk for pk, _ in statuses) - first + 1) if statuses else 0
    resolved = np.full(n_pairs + len(gold), -1, dtype=np.int64)
    for pk, status in statuses:
        code = CODES[status]
        resolved[pk - first] = code if code >= 0 else -1
    known = np.full(n_pairs + len(gold), quality.UNKNOWN, dtype=np.int64)
    known[n_pairs:] = [LABEL_CODES[row[0]] for row in gold]

    rows = labels + gold
    User = get_user_model()
    ids = sorted({row[1] for row in rows})
    names = dict(User.objects.filter(pk__in=ids).values_list("pk", User.USERNAME_FIELD))
    order = sorted(ids, key=lambda pk: str(names.get(pk, pk)))
    index = {pk: i for i, pk in enumerate(order)}
    n = len(rows)
    items = np.concatenate(
        [
            np.fromiter((row[0] - first for row in labels), np.int64, len(labels)),
            np.arange(n_pairs, n_pairs + len(gold), dtype=np.int64),
        ]
    )
    annotator_index = np.fromiter((index[row[1]] for row in rows), np.int64, n)
    values = np.fromiter((LABEL_CODES[row[2]] for row in rows), np.int64, n)
    seconds = np.fromiter((np.nan if row[3] is None else row[3] for row in rows), np.float64, n)
    times = np.fromiter((row[4].timestamp() for row in rows), np.float64, n)
    scores = quality.annotator_scores(
        items,
        annotator_index,
        values,
        [str(names.get(pk, pk)) for pk in order],
        n_pairs + len(gold),
        known=known,
        resolved=resolved,
        times=times,
        seconds=seconds,
        window=window,
    )
    own_labels = np.bincount(annotator_index[: len(labels)], minlength=len(order))
    return CampaignScores(
        campaign=campaign.name,
        gold_pairs=campaign.gold_pairs.count(),
        gold_answers=len(gold),
        annotators=tuple(
            replace(score, labels=int(own_labels[a])) for a, score in enumerate(scores)
        ),
    )
