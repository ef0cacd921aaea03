"""The adaptive label policy's live inputs: annotator confusions, class priors, strata.

A pair's posterior is its stratum's class prior (:class:`~annotation.models.PolicyFit`) and
one log-likelihood ratio per live label, weighed by its annotator's stored confusion
(:class:`~annotation.models.AnnotatorModel`; the prior without one). The live writer, the
refit and the read model all go through :func:`posteriors` and :func:`adaptive_state`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.db import transaction
from django.db.models import Case, FloatField, IntegerField, OuterRef, Q, Subquery, Sum, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.campaigns.provenance import provenance
from annotation.judging import statements
from annotation.judging.statements import queryset_array
from annotation.models import AnnotatorModel, AnnotatorTally, Campaign, Judgement, Pair, PolicyFit
from annotation.policy import confusion
from annotation.policy import rules as policy
from config.batches import id_filters
from jobs import runner
from retrieval.ids import positions_of
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
"""A refit starts at least ``max(MIN_INTERVAL, seconds / DUTY)`` after the last one started
(``seconds``: how long it took), so refits hold at most a tenth of a core: back to back they
kept the judging p99 at 610 ms (``bench/load.py --policy adaptive``)."""
STALE_REQUEST = timedelta(hours=1)
"""A refit asked for this long ago and not done (its job failed) may be asked for again."""


def strata(campaign: Campaign, pool_rows) -> np.ndarray:
    """Each pair's stratum by its provenance row (:func:`confusion.pool_strata`, computed once
    per process); 0 for a row the provenance lacks."""
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
    """Every pool row's stratum, kept beside the process's cached provenance."""
    found = provenance(campaign)
    kept = _STRATA.get(campaign.pk)
    if kept is not None and kept[0] is found:
        return kept[1]
    every = confusion.pool_strata(found.ranks)
    if len(_STRATA) >= 64:
        _STRATA.pop(next(iter(_STRATA)))
    _STRATA[campaign.pk] = (found, every)
    return every


def stored_priors(campaign: Campaign) -> np.ndarray:
    """Each stratum's class prior as the last refit stored it (empty before any)."""
    priors = PolicyFit.objects.filter(campaign=campaign).values_list("priors", flat=True).first()
    return np.asarray(priors or [], dtype=np.float64)


def stored_confusion(campaign: Campaign, annotators: np.ndarray) -> confusion.Confusion:
    """Each of ``annotators``' (ids) confusion as the last refit stored it, else the prior."""
    found = confusion.Confusion.default(len(annotators))
    at = {int(a): i for i, a in enumerate(np.asarray(annotators).tolist())}
    stored = AnnotatorModel.objects.filter(campaign=campaign)
    for annotator, sens, spec in stored.values_list("annotator_id", "sensitivity", "specificity"):
        if annotator in at:
            found.sensitivity[at[annotator]] = sens
            found.specificity[at[annotator]] = spec
    return found


def prior_of(priors: np.ndarray, stratum: np.ndarray) -> np.ndarray:
    """The class prior of each stratum: the stored one, else :data:`confusion.CLASS_PRIOR`."""
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


SAID = Case(
    When(label=RELEVANT.label, then=Value(1)), default=Value(0), output_field=IntegerField()
)
"""A judgement's (or gold answer's) label as 1 (relevant) or 0."""


def verdict(field: str) -> Case:
    """A label ``field`` (a pair's ``adjudicated``, ``pair__adjudicated`` from a judgement, a
    machine judgement's ``label``) as 1, 0 or :data:`~annotation.policy.rules.NOT_ADJUDICATED`
    where blank."""
    return Case(
        When(**{field: RELEVANT.label}, then=Value(1)),
        When(~Q(**{field: ""}), then=Value(0)),
        default=Value(policy.NOT_ADJUDICATED),
        output_field=IntegerField(),
    )


VERDICT = verdict("adjudicated")
"""The :func:`verdict` of the pair queried."""


def live_labels(judgements):
    """Rows (pair id, 1/0, sensitivity, specificity) of the live ``judgements`` (one query)."""
    return (
        judgements.filter(undone_at__isnull=True)
        .order_by()
        .annotate(said=SAID)
        .annotate(sens=_model("sensitivity"), spec=_model("specificity"))
        .values_list("pair_id", "said", "sens", "spec")
    )


def posteriors(
    prior: np.ndarray, item: np.ndarray, said: np.ndarray, sens: np.ndarray, spec: np.ndarray
) -> np.ndarray:
    """Each item's probability of relevance from its ``prior`` and its labels (one entry each)."""
    n = len(said)
    weights = confusion.Confusion(np.asarray(sens, float), np.asarray(spec, float), np.zeros(n))
    return confusion.posteriors(
        np.asarray(prior, dtype=np.float64), np.asarray(item, np.int64), np.arange(n), said, weights
    )


def adaptive_state(
    campaign: Campaign, total, posterior, adjudicated, captions=None
) -> tuple[np.ndarray, np.ndarray]:
    """``(needed, status code)`` of each pair under the campaign's adaptive policy (an
    adjudicated pair needs nothing); with the pairs' ``captions``, a pair of a query judged in
    full for an estimate is asked to :data:`~annotation.policy.rules.IN_FULL_CONFIDENCE`."""
    settings = campaign.settings
    adjudicated = np.asarray(adjudicated, dtype=np.int64)
    confidence = settings.label_policy.confidence
    in_full = settings.judged_in_full
    if captions is not None and in_full:
        wanted = np.fromiter(in_full, dtype=np.int64, count=len(in_full))
        drawn = np.isin(np.asarray(captions, dtype=np.int64), wanted)
        confidence = np.where(drawn, max(confidence, policy.IN_FULL_CONFIDENCE), confidence)
    needed = policy.adaptive_needed(total, posterior, confidence, campaign.max_labels)
    needed = np.where(adjudicated != policy.NOT_ADJUDICATED, 0, needed)
    return needed, policy.adaptive_resolve(total, posterior, adjudicated)


@dataclass(frozen=True)
class QueryLabels:
    """One query's live labels (:data:`LABEL_ROW`) and the stored priors, read once a label."""

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
    """The live labels of a query with their annotators' stored models (one statement) and
    the stored priors."""
    return _labels_of(campaign, campaign=campaign.pk, caption=caption_id)


def _labels_of(of: Campaign, **where) -> QueryLabels:
    """The live labels ``where`` says (one statement) and ``of``'s stored priors."""
    rows = statements.live_labels(confusion.PRIOR_ACCURACY, **where)
    labels = np.array([tuple(row) for row in rows], dtype=LABEL_ROW)
    return QueryLabels(labels, stored_priors(of))


def pair_posterior(pair: Pair, campaign: Campaign) -> float:
    """One pair's posterior from its live labels (one statement) and its stratum's prior."""
    return _labels_of(campaign, pair=pair.pk).posterior(campaign, pair)


@dataclass(frozen=True)
class Snapshot:
    """Pairs' live labels as read once: per pair, label and relevant counts and posterior."""

    pair_ids: np.ndarray
    total: np.ndarray
    relevant: np.ndarray
    posterior: np.ndarray


def snapshot(
    campaign: Campaign,
    pairs: Iterable[tuple[int, int]],
    judgements=None,
    *,
    read: QueryLabels | None = None,
) -> Snapshot:
    """The posteriors of ``pairs`` (pair id, pool row; or an array of those two columns) from
    their live labels and the stored priors (``read`` when read already, else from
    ``judgements`` or their own)."""
    pairs = np.asarray(pairs if isinstance(pairs, np.ndarray) else list(pairs), dtype=np.int64)
    ids, rows = pairs.reshape(-1, 2).T
    if read is not None:
        labels = read.labels
    elif judgements is not None:
        labels = queryset_array(live_labels(judgements), LABEL_ROW)
    else:  # filters whose parameters do not grow with the ids
        labels = np.concatenate(
            [np.empty(0, LABEL_ROW)]
            + [
                queryset_array(live_labels(Judgement.objects.filter(**where)), LABEL_ROW)
                for where in id_filters("pair_id", ids.tolist())
            ]
        )
    item = positions_of(ids, labels["pair_id"])
    labels, item = labels[item >= 0], item[item >= 0]
    priors = stored_priors(campaign) if read is None else read.priors
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
    """Every pair's posterior over the dense pair index of the campaign's read model, from its
    live labels (pair index, annotator id, 1/0) and the stored confusions and priors."""
    ids = np.asarray(annotator_ids, dtype=np.int64)
    present = np.unique(ids)
    model = stored_confusion(campaign, present)
    where = np.searchsorted(present, ids)
    rows = queryset_array(
        Pair.objects.filter(campaign=campaign).order_by().values_list("id", "pool_row"),
        np.dtype([("id", np.int64), ("pool_row", np.int64)]),
    )
    pool_rows = np.zeros(n_pairs, dtype=np.int64)
    pool_rows[rows["id"] - first_pair_id] = rows["pool_row"]
    prior = prior_of(stored_priors(campaign), strata(campaign, pool_rows))
    return posteriors(prior, pair_index, labels, model.sensitivity[where], model.specificity[where])


def refit_due(campaign: Campaign, now: datetime | None = None) -> bool:
    """Claim the campaign's next refit if one is due: enough new labels, the last fit long
    enough ago (:data:`DUTY`), and none asked for (or a stale request). Called inside a
    submit: ``SKIP LOCKED`` keeps it from waiting on a running refit, and one conditional
    UPDATE claims it, so concurrent requests queue it once."""
    now = now or timezone.now()
    fit = PolicyFit.objects.filter(campaign=campaign).first()
    if fit is None:
        fit, _ = PolicyFit.objects.get_or_create(campaign=campaign)
    if fit.requested_at is not None and fit.requested_at > now - STALE_REQUEST:
        return False
    if fit.fitted_at is not None and fit.fitted_at > now - pause(fit.seconds):
        return False
    # The running tallies: counting judgements would read 680,000 labels at FIRE's scale.
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


def pause(seconds: float, duty: float = DUTY) -> timedelta:
    """How long after a refit that took ``seconds`` started the next may start, for work
    that may hold ``duty`` of a core."""
    return max(MIN_INTERVAL, timedelta(seconds=max(float(seconds), 0.0) / duty))


def request_refit(campaign: Campaign, judgement_id: int, now: datetime | None = None) -> bool:
    """After a label is stored: queue the ``refit-policy`` job on commit if a refit is due;
    whether one was queued."""
    if judgement_id % REFIT_EVERY or not campaign.settings.label_policy.adaptive:
        return False
    if not refit_due(campaign, now):
        return False
    name = campaign.name
    transaction.on_commit(lambda: runner.submit(REFIT_JOB, {"campaign": name}))
    return True
