"""Refit the adaptive label policy of a campaign: annotator confusions and class priors.

:func:`refit` fits every live label and gold answer (gold pairs as known items) with
:func:`annotation.policy.confusion.fit`, stores the confusions and priors in one transaction,
then has the pairs' writer recompute labelled pairs and the metric-aware order requeue the
changed queries in short transactions, so judging goes on. It runs as the ``refit-policy``
job (:func:`annotation.policy.label_models.request_refit`) or ``manage.py refit_policy``, and
queues the ``fit-predictor`` job when done (:func:`annotation.prediction.service.request_fit`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import datetime

import numpy as np
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.judging import pair_state
from annotation.judging.statements import queryset_array
from annotation.models import (
    AnnotatorModel,
    Campaign,
    GoldJudgement,
    GoldPair,
    Judgement,
    Pair,
    PolicyFit,
)
from annotation.ordering import priorities
from annotation.policy import confusion, label_models
from annotation.prediction import service as prediction
from config.errors import UserError
from retrieval.label_sets.status import CODES

JOB_KIND = label_models.REFIT_JOB


class PolicyFitError(UserError):
    """A campaign that cannot be refitted (not under the adaptive policy)."""


@dataclass(frozen=True)
class RefitResult:
    campaign: str
    labels: int
    gold_answers: int
    annotators: int
    strata: int
    priors: list[float]
    iterations: int
    converged: bool
    pairs_changed: int
    queue_changed: int
    """Pairs the metric-aware order asked for, parked or moved after the refit."""
    fitted_at: datetime

    def summary(self) -> dict:
        """JSON-ready: the job's result and the command's output (all but ``strata``)."""
        found = asdict(self)
        del found["strata"]
        return {**found, "fitted_at": self.fitted_at.isoformat()}


_JUDGEMENT_ROW = np.dtype(
    [(name, np.int64) for name in ("id", "pair_id", "annotator_id", "said", "pool_row", "verdict")]
)
_PAIR_ROW = np.dtype([("id", np.int64), ("pool_row", np.int64), ("verdict", np.int64)])
_GOLD_ROW = np.dtype([("gold_pair_id", np.int64), ("annotator_id", np.int64), ("said", np.int64)])


def refit(campaign: Campaign, now: datetime | None = None) -> RefitResult:
    """Fit and store the campaign's annotator models and priors (one transaction), then
    recompute its labelled pairs and requeue the queries that changed in short transactions
    (:func:`annotation.judging.pair_state.apply_refit`)."""
    if not campaign.settings.label_policy.adaptive:
        raise PolicyFitError(
            f"campaign {campaign.name!r} follows the {campaign.settings.label_policy.name} "
            "policy: only adaptive campaigns have annotator models to fit"
        )
    now = now or timezone.now()
    started = time.monotonic()
    with transaction.atomic():
        # Each label with its pair's row and verdict in one statement (one snapshot).
        judged = queryset_array(
            Judgement.objects.filter(pair__campaign=campaign, undone_at__isnull=True)
            .order_by()
            .annotate(
                said=label_models.SAID,
                pool_row=F("pair__pool_row"),
                verdict=label_models.verdict("pair__adjudicated"),
            )
            .values_list(*_JUDGEMENT_ROW.names),
            _JUDGEMENT_ROW,
        )
        decided = queryset_array(
            Pair.objects.filter(campaign=campaign)
            .exclude(adjudicated="")
            .order_by()
            .annotate(verdict=label_models.VERDICT)
            .values_list("id", "pool_row", "verdict"),
            _PAIR_ROW,
        )
        gold = list(
            GoldPair.objects.filter(campaign=campaign).order_by("pk").values_list("pk", "label")
        )
        answers = queryset_array(
            GoldJudgement.objects.filter(gold_pair__campaign=campaign)
            .order_by()
            .annotate(said=label_models.SAID)
            .values_list("gold_pair_id", "annotator_id", "said"),
            _GOLD_ROW,
        )
        pairs = _fitted_pairs(judged, decided)
        n_pairs, n_gold = len(pairs), len(gold)
        gold_item = {pk: n_pairs + i for i, (pk, _) in enumerate(gold)}
        pair_item = np.searchsorted(pairs["id"], judged["pair_id"])
        gold_items = [gold_item[g] for g in answers["gold_pair_id"].tolist()]
        items = np.concatenate([pair_item, np.array(gold_items, np.int64)]).astype(np.int64)
        who = np.concatenate([judged["annotator_id"], answers["annotator_id"]])
        annotators, annotator_index = np.unique(who, return_inverse=True)
        said = np.concatenate([judged["said"], answers["said"]])
        order = np.concatenate([judged["id"], np.zeros(len(answers), np.int64)])
        first = confusion.first_labels(items, order)
        first[len(judged) :] = False  # gold answers are always fair evidence
        known = np.concatenate(
            [pairs["verdict"], np.array([CODES[label] for _, label in gold], np.int64)]
        ).astype(np.int64)
        strata = np.concatenate(
            [label_models.strata(campaign, pairs["pool_row"]), np.zeros(n_gold, np.int64)]
        )
        n_strata = label_models.n_strata(campaign)
        fitted = confusion.fit(
            items,
            annotator_index.astype(np.int64),
            said,
            n_pairs + n_gold,
            len(annotators),
            first=first,
            known=known,
            strata=strata,
            n_strata=n_strata,
            warm=_previous(campaign, annotators, n_strata),
        )
        _store(campaign, annotators, fitted, len(judged), now)
    metric_aware = campaign.settings.judging.strategy == priorities.METRIC_AWARE
    applied = pair_state.apply_refit(campaign, reopen=not metric_aware)
    requeued = priorities.requeue(campaign, applied.captions)
    changed = applied.written
    # The refit's whole cost paces the next one (label_models.DUTY).
    PolicyFit.objects.filter(campaign=campaign).update(seconds=time.monotonic() - started)
    # The new posteriors are the predictor's targets: refit it in the background.
    prediction.request_fit(campaign)
    return RefitResult(
        campaign=campaign.name,
        labels=len(judged),
        gold_answers=len(answers),
        annotators=len(annotators),
        strata=n_strata,
        priors=[round(float(p), 6) for p in fitted.prior],
        iterations=fitted.iterations,
        converged=fitted.converged,
        pairs_changed=changed,
        queue_changed=requeued,
        fitted_at=now,
    )


def _fitted_pairs(judged: np.ndarray, decided: np.ndarray) -> np.ndarray:
    """The pairs the fit sees, by id: every labelled or adjudicated one, from the labels' rows
    rather than a read of every pooled pair (0.33 s of a 0.44 s refit at 600,000 pairs and
    2,000 labels, ``bench/RESULTS.md``). An unlabelled pair adds nothing to the confusions or
    the priors, so the fit is the one over every pair."""
    rows = np.empty(len(judged) + len(decided), _PAIR_ROW)
    rows["id"] = np.concatenate([judged["pair_id"], decided["id"]])
    for name in ("pool_row", "verdict"):
        rows[name] = np.concatenate([judged[name], decided[name]])
    _, first = np.unique(rows["id"], return_index=True)
    return rows[first]


def _previous(
    campaign: Campaign, annotators: np.ndarray, n_strata: int
) -> tuple[confusion.Confusion, np.ndarray] | None:
    """The last fit's confusions and priors for EM to start from: a refit then takes a few
    iterations, not dozens (``bench/refit_bench.py``)."""
    priors = label_models.stored_priors(campaign)
    if len(priors) != n_strata:
        return None
    return label_models.stored_confusion(campaign, annotators), priors


def _store(campaign: Campaign, annotators: np.ndarray, fitted, labels: int, now) -> None:
    """Replace the campaign's annotator models and priors with the fit's."""
    model = fitted.confusion
    AnnotatorModel.objects.filter(campaign=campaign).exclude(
        annotator_id__in=annotators.tolist()
    ).delete()
    AnnotatorModel.objects.bulk_create(
        [
            AnnotatorModel(
                campaign=campaign,
                annotator_id=int(annotator),
                sensitivity=float(model.sensitivity[i]),
                specificity=float(model.specificity[i]),
                evidence=float(model.evidence[i]),
                fitted_at=now,
            )
            for i, annotator in enumerate(annotators.tolist())
        ],
        update_conflicts=True,
        unique_fields=["campaign", "annotator"],
        update_fields=["sensitivity", "specificity", "evidence", "fitted_at"],
    )
    PolicyFit.objects.update_or_create(
        campaign=campaign,
        defaults={
            "priors": [float(p) for p in fitted.prior],
            "labels": labels,
            "fitted_at": now,
            "requested_at": None,
        },
    )
