"""What judging has settled, for a campaign's pages: per run the share of queries whose
Correct@K (FIRE §2.1) is already exact, labels against the budget, open and parked pairs, and
under the adaptive policy what its posteriors have settled."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db.models import Case, Q, Value, When

from annotation.campaigns.provenance import provenance
from annotation.judging import pair_state, statements
from annotation.models import Campaign, Judgement, Pair
from annotation.ordering import orders as judging_order
from annotation.ordering.priorities import labels_spent
from annotation.policy import label_models, label_value
from annotation.policy.rules import certainty


@dataclass(frozen=True)
class RunExactness:
    """One pooled run: for each K, the share of queries whose Correct@K is already exact."""

    run: str
    shares: tuple[tuple[int, float], ...]

    @property
    def exact_ks(self) -> tuple[int, ...]:
        return tuple(k for k, share in self.shares if share >= 1.0)


@dataclass(frozen=True)
class JudgingStatus:
    """Where a campaign's judging order stands, for its report page."""

    strategy: str
    budget: int | None
    labels_spent: int
    labels_left: int
    open_pairs: int
    parked_pairs: int
    runs: tuple[RunExactness, ...]
    ks: tuple[int, ...]
    policy: str = "fire"
    confidence: float | None = None
    """The adaptive policy's target; None under FIRE's."""
    below_target: int = 0
    """Adaptive: labelled pairs whose resolved label's posterior is below the target."""
    settled: tuple[RunExactness, ...] = ()
    """Adaptive: per run, the share of queries whose C@K every deciding pair is sure of
    (:func:`annotation.policy.label_value.settled_correct_at`)."""
    decided_share: float = 0.0
    """The share of queries with no unfinished pooled pair (:func:`pair_state.unfinished`):
    their AP and nDCG, which hang on every positive of the query, are exact, each other
    query's may still be anywhere in [0, 1]."""

    @property
    def budget_spent(self) -> bool:
        return self.budget is not None and self.labels_spent >= self.budget

    @property
    def all_settled(self) -> bool:
        """Adaptive: every run's every C@K settled, and labels given (a campaign with none
        has settled nothing, whatever a grid with no deciding pair says)."""
        return (
            bool(self.settled)
            and self.labels_spent > 0
            and all(share >= 1.0 for run in self.settled for _, share in run.shares)
        )


_STATUS_COLUMNS = np.dtype(
    [
        ("id", np.int64),
        ("pool_row", np.int64),
        ("caption_id", np.int64),
        ("video_id", np.int64),
        ("label_count", np.int64),
        ("relevant_count", np.int64),
        ("needed", np.int64),
        ("open_slots", np.int64),
        ("held", np.bool_),
        ("pending", np.bool_),
        ("status_relevant", np.bool_),
        ("adjudicated_any", np.bool_),
        ("adjudicated_relevant", np.bool_),
        ("auto", np.bool_),
    ]
)
"""A campaign's pairs as :func:`judging_status`, the active stages and the relevance predictor
read them, straight into numpy: 552,880 named tuples took a second and +300 MB of the campaign
page at FIRE's scale."""


def status_rows(campaign: Campaign) -> np.ndarray:
    """The campaign's pairs as :data:`_STATUS_COLUMNS`, in pool-row order."""

    def flag(condition: Q) -> Case:
        return Case(When(condition, then=Value(True)), default=Value(False))

    # Sorted here, not by the server: a sort must read every row before the first, so a
    # streamed read (statements.streamed_reads) could not pace the scan.
    rows = statements.queryset_array(
        Pair.objects.filter(campaign=campaign)
        .order_by()
        .annotate(
            pending=flag(Q(status=Pair.Status.PENDING)),
            status_relevant=flag(Q(status=Pair.Status.RELEVANT)),
            adjudicated_any=flag(~Q(adjudicated="")),
            adjudicated_relevant=flag(Q(adjudicated=Pair.Status.RELEVANT)),
            auto=flag(~Q(auto_label="")),
        )
        .values_list(*_STATUS_COLUMNS.names),
        _STATUS_COLUMNS,
    )
    return rows[np.argsort(rows["pool_row"], kind="stable")]


def decided_arrays(rows: np.ndarray, by_status: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~annotation.ordering.priorities.decided` over :data:`_STATUS_COLUMNS` rows, vectorised (the same rule)."""
    labels = rows["label_count"]
    adjudicated = rows["adjudicated_any"]
    judged = adjudicated | rows["auto"] | ~rows["pending"] | (labels > 0)
    by_label = judging_order.live_relevant(rows["relevant_count"], labels)
    from_status = (labels == 0) | by_status
    relevant = np.where(
        adjudicated,
        rows["adjudicated_relevant"],
        np.where(from_status, rows["status_relevant"], by_label),
    )
    return judged, relevant & judged


def judging_status(campaign: Campaign) -> JudgingStatus:
    """Labels spent against the budget, what is still needed, and per run which Correct@K
    are exact (whatever the order, so a depth campaign shows it too)."""
    settings = campaign.settings.judging
    source = provenance(campaign)
    label_policy = campaign.settings.label_policy
    rows = status_rows(campaign)
    judged, relevant = decided_arrays(rows, by_status=label_policy.adaptive)
    pool_rows, captions = rows["pool_row"], rows["caption_id"]
    queries = source.queries if source.queries.size else np.unique(captions)
    ranks, known = source.settling
    if known.shape[0] != queries.size:
        known = np.zeros((queries.size, ranks.shape[1]), np.int16)
    query_of = np.searchsorted(queries, captions)
    # exact means no label judging still asks for can change it: an unfinished pair (one
    # the policy still asks labels of, whatever its labels say so far, or one with none) is
    # open; under the adaptive policy a labelled pair's status is only its posterior's guess
    labelled = (rows["label_count"] > 0) | rows["adjudicated_any"] | rows["auto"]
    still_open = pair_state.unfinished(rows["needed"], labelled)
    final = judged & ~still_open
    shares = judging_order.exact_correct_at(
        ranks[pool_rows] if pool_rows.size else np.zeros((0, known.shape[1]), np.int16),
        query_of,
        final,
        relevant & final,
        known,
        settings.ks,
    )
    names = campaign.run_names()
    parked = ~judged & (rows["needed"] == 0)  # unjudged: no label of any kind, still pending
    adaptive = {}
    if label_policy.adaptive and len(rows):
        adaptive = _adaptive_status(campaign, rows, names)
    return JudgingStatus(
        strategy=settings.strategy,
        budget=settings.budget,
        labels_spent=labels_spent(campaign),
        # as the tallies count it (the campaign and judging pages' "labels still needed")
        labels_left=int(rows["needed"][~rows["held"]].sum()),
        open_pairs=int((rows["open_slots"] > 0).sum()),
        parked_pairs=int(parked.sum()),
        runs=tuple(
            RunExactness(name, tuple(zip(settings.ks, map(float, shares[r]), strict=True)))
            for r, name in enumerate(names)
        ),
        ks=settings.ks,
        decided_share=_decided_share(query_of[still_open], queries.size),
        **adaptive,
    )


def _decided_share(open_query_of: np.ndarray, queries: int) -> float:
    """The share of ``queries`` with no undecided pair (``open_query_of``: the query of each).
    Counted over the pooled queries, as C@K's exactness is: the scores' means may count more
    queries, each decided (nothing pooled), which only makes the bounds it gives wider."""
    if queries == 0:
        return 1.0
    still_open = np.bincount(open_query_of, minlength=queries)[:queries] > 0
    return float(1.0 - still_open.mean())


def _adaptive_status(campaign: Campaign, rows: np.ndarray, names: Sequence[str]) -> dict:
    """What the adaptive policy adds to :class:`JudgingStatus`: its target, the labelled
    pairs below it and, per run, the share of each C@K that every deciding pair is sure of,
    from the :data:`_STATUS_COLUMNS` rows already read (a second read of the pairs as named
    tuples took 1.6 s of a 4 s figures job at 600,000 pairs), laid out queries x slots for
    :mod:`annotation.policy.label_value` with one read of the campaign's labels."""
    chosen, ks = campaign.settings.label_policy, campaign.settings.judging.ks
    rows = rows[np.lexsort((rows["pool_row"], rows["caption_id"]))]
    source = provenance(campaign)
    seen = label_models.snapshot(
        campaign,
        np.stack([rows["id"], rows["pool_row"]], axis=1),
        Judgement.objects.filter(pair__campaign=campaign),
    )
    captions = rows["caption_id"]
    queries, query_of = np.unique(captions, return_inverse=True)
    slot_of = np.arange(len(rows)) - np.searchsorted(captions, queries)[query_of]
    shape = (queries.size, int(slot_of.max(initial=-1)) + 1)
    ranks, known_ranks = source.settling
    at = np.minimum(np.searchsorted(source.queries, queries), max(source.queries.size - 1, 0))
    found = (source.queries[at] == queries) if source.queries.size else np.zeros(0, bool)
    _, relevant = decided_arrays(rows, by_status=True)

    def grid(values, fill=0):
        values = np.asarray(values)
        out = np.full(shape + values.shape[1:], fill, dtype=values.dtype)
        out[query_of, slot_of] = values
        return out

    labels, posterior = grid(seen.total), grid(seen.posterior, 0.5)
    fixed = grid(rows["adjudicated_any"] | rows["auto"], True)
    unsure = (labels > 0) & ~fixed & (certainty(posterior) < chosen.confidence)
    settled = label_value.settled_correct_at(
        grid(ranks[rows["pool_row"]].astype(np.int64)),
        grid(relevant),
        np.where(found[:, None], known_ranks[at], 0).astype(np.int64),
        labels,
        posterior,
        fixed,
        confidence=chosen.confidence,
        ks=ks,
    )
    return {
        "policy": chosen.name,
        "confidence": chosen.confidence,
        "below_target": int(unsure.sum()),
        "settled": tuple(
            RunExactness(name, tuple(zip(ks, map(float, settled[r]), strict=True)))
            for r, name in enumerate(names)
        ),
    }
