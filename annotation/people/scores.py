"""How far each annotator of a campaign can be trusted: the ORM side of :mod:`annotation.people.quality`.

Agreement figures use the campaign's live labels only, gold figures gold answers only (by
default those given in the queue), time figures both; ``labels`` counts campaign labels.
"""

from dataclasses import dataclass, replace

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import FloatField, Func, IntegerField, Value, When
from django.db.models.expressions import Case
from django.db.models.functions import Coalesce

from annotation.judging.statements import queryset_array
from annotation.models import Campaign, GoldJudgement, Judgement, Pair
from annotation.people import quality
from retrieval.json_data import JsonData
from retrieval.label_sets.status import CODES

LABEL_ROWS = np.dtype(
    [
        ("pair_id", np.int64),
        ("annotator_id", np.int64),
        ("relevant", np.int64),
        ("spent", np.float64),
        ("created", np.float64),
    ]
)


class EpochSeconds(Func):
    """A time column as seconds since 1970 (UTC), computed by the database: a datetime per row
    cost 1.5 µs, a second at FIRE's 660,000 labels."""

    output_field = FloatField()
    arity = 1

    def as_postgresql(self, compiler, connection, **extra):
        template = "EXTRACT(EPOCH FROM %(expressions)s)::double precision"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler, connection, **extra):
        # SQLite keeps UTC as "YYYY-MM-DD HH:MM:SS[.ffffff]" (naive, USE_TZ): the whole
        # seconds through julianday (rounded, so exact), then the fraction as written.
        template = (
            "(ROUND((julianday(substr(%(expressions)s, 1, 19)) - 2440587.5) * 86400.0) "
            "+ COALESCE(CAST(NULLIF(substr(%(expressions)s, 20), '') AS REAL), 0.0))"
        )
        return self.as_sql(compiler, connection, template=template, **extra)


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
    pairs = Pair.objects.filter(campaign=campaign)
    statuses = queryset_array(
        pairs.order_by().values_list("id", "status"),
        np.dtype([("id", np.int64), ("status", object)]),
    )
    first = int(statuses["id"].min()) if len(statuses) else 0
    last = int(statuses["id"].max()) if len(statuses) else -1
    n_pairs = last - first + 1
    live = Judgement.objects.filter(undone_at__isnull=True)
    # A campaign's pairs are written in bulk: with contiguous ids a range selects its
    # judgements on the pair index, without a join.
    if n_pairs == len(statuses):
        live = live.filter(pair_id__gte=first, pair_id__lte=last)
    else:
        live = live.filter(pair__campaign=campaign)
    labels = queryset_array(
        live.order_by()
        .annotate(
            relevant=Case(
                When(label=Judgement.Label.RELEVANT, then=Value(1)),
                default=Value(0),
                output_field=IntegerField(),
            ),
            spent=Coalesce("seconds", Value(-1.0), output_field=FloatField()),
            created=EpochSeconds("created_at"),
        )
        .values_list("pair_id", "annotator_id", "relevant", "spent", "created"),
        LABEL_ROWS,
    )
    answers = GoldJudgement.objects.filter(gold_pair__campaign=campaign)
    if not include_qualification:
        answers = answers.filter(purpose=GoldJudgement.Purpose.QUEUE)
    gold = list(
        answers.order_by("pk").values_list(
            "gold_pair__label", "annotator_id", "label", "seconds", "created_at"
        )
    )
    # One tuple per column of the gold answers: truth, annotator, answer, seconds, time.
    truth, who, answer, spent, at = zip(*gold, strict=True) if gold else ((),) * 5
    n_items = n_pairs + len(truth)
    resolved = np.full(n_items, -1, dtype=np.int64)
    codes = np.array([CODES[status] for status in statuses["status"].tolist()], dtype=np.int64)
    resolved[statuses["id"] - first] = np.where(codes >= 0, codes, -1)
    known = np.full(n_items, quality.UNKNOWN, dtype=np.int64)
    known[n_pairs:] = [CODES[label] for label in truth]

    User = get_user_model()
    ids = sorted(set(np.unique(labels["annotator_id"]).tolist()) | set(who))
    names = dict(User.objects.filter(pk__in=ids).values_list("pk", User.USERNAME_FIELD))
    order = sorted(ids, key=lambda pk: str(names.get(pk, pk)))
    lookup = np.full(max(ids, default=0) + 1, -1, dtype=np.int64)
    lookup[order] = np.arange(len(order))
    items = np.concatenate([labels["pair_id"] - first, np.arange(n_pairs, n_items, dtype=np.int64)])
    annotator_index = lookup[np.concatenate([labels["annotator_id"], np.array(who, np.int64)])]
    values = np.concatenate([labels["relevant"], np.array([CODES[a] for a in answer], np.int64)])
    seconds = np.concatenate(
        [np.where(labels["spent"] < 0, np.nan, labels["spent"]), np.array(spent, np.float64)]
    )  # a gold answer's None seconds: NaN
    times = np.concatenate([labels["created"], np.array([t.timestamp() for t in at], np.float64)])
    scores = quality.annotator_scores(
        items,
        annotator_index,
        values,
        [str(names.get(pk, pk)) for pk in order],
        n_items,
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
        gold_answers=len(truth),
        annotators=tuple(
            replace(score, labels=int(own_labels[a])) for a, score in enumerate(scores)
        ),
    )
