"""The adaptive label policy's live inputs: annotator confusions, class priors, strata.

Under the ``adaptive`` policy (:mod:`annotation.policy.rules`) a pair's ``needed`` and ``status``
follow the posterior probability that it is relevant: its stratum's class prior and one
log-likelihood ratio per live label, weighed by the confusion of the annotator who gave it
(:mod:`annotation.policy.confusion`). The confusions (:class:`~annotation.models.AnnotatorModel`)
and priors (:class:`~annotation.models.PolicyFit`) are what the last refit stored; an
annotator without a row, and every stratum before the first refit, is at the prior.

A pair's stratum is :func:`annotation.policy.confusion.pool_strata` of its pooled ranks (which runs
retrieved it, and its best rank), read from the campaign's provenance: a run's rank-1 video
is far likelier relevant than its rank-10 one. Every reader of a pair's adaptive state, the live writer
(:mod:`annotation.judging.pair_state`), the refit and the campaign's read model
(:mod:`annotation.campaign_read.labels`), goes through :func:`posteriors` and
:func:`adaptive_state`, so all three agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.db import transaction
from django.db.models import (
    Case,
    FloatField,
    IntegerField,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.campaigns.provenance import provenance
from annotation.judging import statements
from annotation.judging.statements import queryset_array
from annotation.models import (
    AnnotatorModel,
    AnnotatorTally,
    Campaign,
    Judgement,
    Pair,
    PolicyFit,
)
from annotation.policy import confusion
from annotation.policy import rules as policy
from config.batches import id_filters
from jobs import runner
from retrieval.label_sets.status import RELEVANT

REFIT_JOB = "refit-policy"
"""The job kind that refits a campaign (:mod:`annotation.policy.fit`)."""
REFIT_EVERY = 25
"""A submit looks at whether a refit is due only when its judgement id is a multiple of this."""
MIN_NEW_LABELS = 50
NEW_SHARE = 0.1
"""A refit is due once ``max(MIN_NEW_LABELS, NEW_SHARE x labels at the last fit)`` labels
came in since it."""
MIN_INTERVAL = timedelta(seconds=5)
DUTY = 0.1
"""A refit starts at least ``max(MIN_INTERVAL, seconds / DUTY)`` after the last one started,
``seconds`` being how long that one took: refits then hold at most a tenth of one core
whatever the label rate. Refits queued back to back (every 50 labels at 45 labels a second)
kept both cores of the load bench's machine busy and the judging requests' p99 at 610 ms
(``bench/load.py --policy adaptive``, 250 annotators); a fixed two minutes instead let a
campaign judged fast run on models fitted on its first few hundred labels
(``bench/crowd_bench.py --only D``)."""
STALE_REQUEST = timedelta(hours=1)
"""A refit asked for this long ago and not done (its job failed) may be asked for again."""


def is_adaptive(campaign: Campaign) -> bool:
    return campaign.settings.label_policy.adaptive


def strata(campaign: Campaign, pool_rows) -> np.ndarray:
    """Each pair's stratum (int64) by its provenance row: :func:`confusion.pool_strata` of
    the campaign's pool (which runs retrieved the pair, and its best rank), computed over
    every row once per process; 0 for a row the provenance lacks."""
    rows = np.asarray(pool_rows, dtype=np.int64)
    every = _pool_strata(campaign)
    out = np.zeros(rows.shape, dtype=np.int64)
    inside = (rows >= 0) & (rows < every.size)
    out[inside] = every[rows[inside]]
    return out


def n_strata(campaign: Campaign) -> int:
    """How many strata the campaign's pool has (one more than the largest)."""
    return int(_pool_strata(campaign).max(initial=0)) + 1


_STRATA: dict[int, tuple[object, np.ndarray]] = {}


def _pool_strata(campaign: Campaign) -> np.ndarray:
    """Every pool row's stratum, kept beside the process's cached provenance (which never
    changes after pooling): the depth the strata use is the pool's, so they are computed
    over all rows at once."""
    found = provenance(campaign)
    kept = _STRATA.get(campaign.pk)
    if kept is not None and kept[0] is found:
        return kept[1]
    ranks = found.ranks
    every = (
        confusion.pool_strata(ranks)
        if ranks.ndim == 2 and ranks.size
        else np.zeros(ranks.shape[0] if ranks.ndim else 0, np.int64)
    )
    if len(_STRATA) >= 64:
        _STRATA.pop(next(iter(_STRATA)))
    _STRATA[campaign.pk] = (found, every)
    return every


def stored_priors(campaign: Campaign) -> np.ndarray:
    """Each stratum's class prior as the last refit stored it (empty before any)."""
    priors = PolicyFit.objects.filter(campaign=campaign).values_list("priors", flat=True).first()
    return np.asarray(priors or [], dtype=np.float64)


def prior_of(priors: np.ndarray, stratum: np.ndarray) -> np.ndarray:
    """The class prior of each stratum: the stored one, or :data:`confusion.CLASS_PRIOR`
    for a stratum the fit has none for."""
    stratum = np.asarray(stratum, dtype=np.int64)
    prior = np.full(stratum.shape, confusion.CLASS_PRIOR, dtype=np.float64)
    known = stratum < priors.size
    prior[known] = priors[stratum[known]]
    return prior


def _model(field: str):
    """The annotator's stored ``field`` in the judgement's campaign, or the prior."""
    stored = AnnotatorModel.objects.filter(
        campaign=OuterRef("pair__campaign"), annotator=OuterRef("annotator")
    ).values(field)[:1]
    return Coalesce(
        Subquery(stored, output_field=FloatField()),
        Value(confusion.PRIOR_ACCURACY),
        output_field=FloatField(),
    )


def live_labels(judgements):
    """Rows (pair id, label as 1/0, sensitivity, specificity) of the live judgements in
    ``judgements``, each with its annotator's stored confusion (one query)."""
    said = Case(
        When(label=RELEVANT.label, then=Value(1)), default=Value(0), output_field=IntegerField()
    )
    return (
        judgements.filter(undone_at__isnull=True)
        .order_by()
        .annotate(said=said)
        .annotate(sens=_model("sensitivity"), spec=_model("specificity"))
        .values_list("pair_id", "said", "sens", "spec")
    )


def posteriors(
    prior: np.ndarray, item: np.ndarray, said: np.ndarray, sens: np.ndarray, spec: np.ndarray
) -> np.ndarray:
    """Each item's probability of relevance from its ``prior`` and its labels (``item``
    index, ``said`` 1/0, and the giver's ``sens``/``spec``, one entry per label)."""
    n = len(said)
    weights = confusion.Confusion(np.asarray(sens, float), np.asarray(spec, float), np.zeros(n))
    return confusion.posteriors(
        np.asarray(prior, dtype=np.float64), np.asarray(item, np.int64), np.arange(n), said, weights
    )


def adaptive_state(
    campaign: Campaign, total, posterior, adjudicated
) -> tuple[np.ndarray, np.ndarray]:
    """``(needed, status code)`` of each pair under the campaign's adaptive policy: an
    adjudicated pair (0/1; -1: none) needs nothing and has the admin's label."""
    chosen = campaign.settings.label_policy
    adjudicated = np.asarray(adjudicated, dtype=np.int64)
    needed = policy.adaptive_needed(total, posterior, chosen.confidence, campaign.max_labels)
    needed = np.where(adjudicated != policy.NOT_ADJUDICATED, 0, needed)
    return needed, policy.adaptive_resolve(total, posterior, adjudicated)


@dataclass(frozen=True)
class QueryLabels:
    """One query's live labels (:data:`LABEL_ROW`) and the stored priors, read once after a
    label: the labelled pair's posterior and the query's snapshot both come from them."""

    labels: np.ndarray
    priors: np.ndarray

    def posterior(self, campaign: Campaign, pair: Pair) -> float:
        """``pair``'s posterior from its labels among these and its stratum's prior."""
        mine = self.labels[self.labels["pair_id"] == pair.pk]
        prior = prior_of(self.priors, strata(campaign, [pair.pool_row]))
        return float(
            posteriors(
                prior, np.zeros(len(mine), np.int64), mine["said"], mine["sens"], mine["spec"]
            )[0]
        )


def read_query(campaign: Campaign, caption_id: int) -> QueryLabels:
    """The live labels of a query of ``campaign`` with their annotators' stored models (one
    statement, :data:`annotation.judging.statements.LIVE_LABELS`) and the stored priors."""
    rows = statements.live_labels(
        confusion.PRIOR_ACCURACY, campaign=campaign.pk, caption=caption_id
    )
    labels = np.array([tuple(row) for row in rows], dtype=LABEL_ROW)
    return QueryLabels(labels, stored_priors(campaign))


def pair_posterior(pair: Pair, campaign: Campaign) -> float:
    """One pair's posterior from its live labels (one statement,
    :data:`annotation.judging.statements.LIVE_LABELS`) and its stratum's prior."""
    rows = statements.live_labels(confusion.PRIOR_ACCURACY, pair=pair.pk)
    labels = np.array([tuple(row) for row in rows], dtype=LABEL_ROW)
    return QueryLabels(labels, stored_priors(campaign)).posterior(campaign, pair)


@dataclass(frozen=True)
class Snapshot:
    """Pairs' live labels as read once: per pair (in ``pair_ids`` order) the live label and
    relevant counts the labels gave, and each pair's posterior."""

    pair_ids: np.ndarray
    total: np.ndarray
    relevant: np.ndarray
    posterior: np.ndarray


def query_snapshot(
    campaign: Campaign,
    caption_id: int,
    pairs: Iterable[tuple[int, int]],
    read: QueryLabels | None = None,
) -> Snapshot:
    """:func:`snapshot` of one query's ``pairs`` from its labels (``read``, else
    :func:`read_query`): what every label of an adaptive campaign under a metric-aware order
    reads."""
    read = read if read is not None else read_query(campaign, caption_id)
    return snapshot(campaign, pairs, labels=read.labels, priors=read.priors)


def snapshot(
    campaign: Campaign,
    pairs: Iterable[tuple[int, int]],
    judgements=None,
    *,
    labels: np.ndarray | None = None,
    priors: np.ndarray | None = None,
) -> Snapshot:
    """The posteriors of ``pairs`` (pair id, pool row), from their live labels (one query
    over all of them, ``judgements`` if given: a queryset holding at least theirs; or the
    rows already read, ``labels``, :data:`LABEL_ROW`) and the stored priors (``priors`` when
    read already)."""
    pairs = list(pairs)
    ids = np.array([p for p, _ in pairs], dtype=np.int64)
    rows = np.array([r for _, r in pairs], dtype=np.int64)
    if labels is None and judgements is not None:
        labels = queryset_array(live_labels(judgements), LABEL_ROW)
    elif labels is None:  # filters whose parameters do not grow with the ids
        labels = np.concatenate(
            [np.empty(0, LABEL_ROW)]
            + [
                queryset_array(live_labels(Judgement.objects.filter(**where)), LABEL_ROW)
                for where in id_filters("pair_id", ids.tolist())
            ]
        )
    order = np.argsort(ids, kind="stable")
    at = np.searchsorted(ids, labels["pair_id"], sorter=order)
    at = np.minimum(at, max(len(ids) - 1, 0))
    found = (len(ids) > 0) & (ids[order[at]] == labels["pair_id"]) if len(ids) else at < 0
    labels, item = labels[found], order[at[found]]
    priors = priors if priors is not None else stored_priors(campaign)
    prior = prior_of(priors, strata(campaign, rows))
    said = labels["said"]
    total = np.bincount(item, minlength=len(ids)).astype(np.int64)
    relevant = np.bincount(item, weights=said, minlength=len(ids)).astype(np.int64)
    return Snapshot(
        ids, total, relevant, posteriors(prior, item, said, labels["sens"], labels["spec"])
    )


LABEL_ROW = np.dtype(
    [("pair_id", np.int64), ("said", np.int64), ("sens", np.float64), ("spec", np.float64)]
)
"""A row of :func:`live_labels`."""


def campaign_posteriors(
    campaign: Campaign,
    first_pair_id: int,
    n_pairs: int,
    pair_index: np.ndarray,
    annotator_ids: np.ndarray,
    labels: np.ndarray,
) -> np.ndarray:
    """Every pair's posterior over the dense pair index of the campaign's read model
    (:func:`annotation.campaign_read.labels.load_campaign_labels`), from its arrays of live
    labels (dense pair index, annotator id, 1/0), the stored confusions and priors."""
    stored = dict(
        (annotator, (sens, spec))
        for annotator, sens, spec in AnnotatorModel.objects.filter(campaign=campaign).values_list(
            "annotator_id", "sensitivity", "specificity"
        )
    )
    ids = np.asarray(annotator_ids, dtype=np.int64)
    present = np.unique(ids)
    table = np.array(
        [stored.get(int(a), (confusion.PRIOR_ACCURACY,) * 2) for a in present.tolist()],
        dtype=np.float64,
    ).reshape(-1, 2)
    where = np.searchsorted(present, ids)
    rows = queryset_array(
        Pair.objects.filter(campaign=campaign).order_by().values_list("id", "pool_row"),
        np.dtype([("id", np.int64), ("pool_row", np.int64)]),
    )
    pool_rows = np.zeros(n_pairs, dtype=np.int64)
    pool_rows[rows["id"] - first_pair_id] = rows["pool_row"]
    prior = prior_of(stored_priors(campaign), strata(campaign, pool_rows))
    return posteriors(prior, pair_index, labels, table[where, 0], table[where, 1])


def refit_due(campaign: Campaign, now: datetime | None = None) -> bool:
    """Claim the campaign's next refit if one is due: enough labels since the last fit, that
    fit started long enough ago (:data:`DUTY`), and no refit asked for (or one asked for so long
    ago that its job must have failed).

    Called inside a submit, with pair rows locked: the claim skips a fit row that a running
    refit holds (``SKIP LOCKED``; that refit is what was asked for), so a submit never
    waits on a refit that may be waiting on the submit's pairs; then one conditional UPDATE
    claims it, so concurrent requests queue it once. The row is made with the campaign
    (:func:`annotation.campaigns.service.create_campaign`); one made before is made here.
    """
    now = now or timezone.now()
    fit = PolicyFit.objects.filter(campaign=campaign).first()
    if fit is None:
        fit, _ = PolicyFit.objects.get_or_create(campaign=campaign)
    if fit.requested_at is not None and fit.requested_at > now - STALE_REQUEST:
        return False
    if fit.fitted_at is not None and fit.fitted_at > now - pause(fit.seconds):
        return False
    # The triggers' running tallies: a few rows, where counting the judgements would read
    # every label of the campaign (680,000 at FIRE's scale).
    labels = int(
        AnnotatorTally.objects.filter(campaign=campaign).aggregate(n=Sum("judged"))["n"] or 0
    )
    if labels - fit.labels < max(MIN_NEW_LABELS, NEW_SHARE * fit.labels):
        return False
    free = Q(requested_at__isnull=True) | Q(requested_at__lte=now - STALE_REQUEST)
    claimable = PolicyFit.objects.select_for_update(skip_locked=True).filter(free, pk=fit.pk)
    if not list(claimable.values_list("pk", flat=True)):
        return False
    return bool(PolicyFit.objects.filter(free, pk=fit.pk).update(requested_at=now))


def pause(seconds: float) -> timedelta:
    """How long after a refit that took ``seconds`` started the next may start."""
    return max(MIN_INTERVAL, timedelta(seconds=max(float(seconds), 0.0) / DUTY))


def request_refit(campaign: Campaign, judgement_id: int, now: datetime | None = None) -> bool:
    """After a label is stored (in its transaction): cheaply decide whether the adaptive
    campaign's refit is due, and if so queue the ``refit-policy`` job once the transaction
    commits. Whether one was queued."""
    if judgement_id % REFIT_EVERY or not is_adaptive(campaign):
        return False
    if not refit_due(campaign, now):
        return False
    name = campaign.name
    transaction.on_commit(lambda: runner.submit(REFIT_JOB, {"campaign": name}))
    return True
