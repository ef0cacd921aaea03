"""The campaign's judging order applied live: queue positions, parked pairs and the budget.

Creation gives every pair its first position under the campaign's strategy
(:mod:`annotation.ordering.orders`); an adaptive strategy recomputes one query's positions on
every label of it (:func:`reprioritise`, in the submit's transaction, the query locked), so
the next-task query, an index walk in position order, serves the best open pair. Pairs that
can no longer change a score are parked (``needed`` 0) until they matter again or an admin
reopens them. No state is kept between requests: a query's is rebuilt from its pairs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from django.db import transaction
from django.db.models import Min, Sum

from annotation.campaigns.pooling import Pool
from annotation.campaigns.provenance import Provenance, provenance
from annotation.campaigns.settings import JudgingSettings
from annotation.judging import pair_state
from annotation.judging.pair_state import QueryPair
from annotation.models import AnnotatorTally, Campaign, Judgement, Pair
from annotation.ordering import orders as judging_order
from annotation.policy import label_models, label_value
from config.batches import rows_in


def known_positive_ranks(
    lists: Sequence, queries: np.ndarray, own_videos: np.ndarray
) -> np.ndarray:
    """Queries x runs: where each run ranked the caption's own video (1-based, 0 = not in
    its lists), the positive every benchmark already counts."""
    from retrieval.scoring.metrics import align_rows

    known = np.zeros((queries.size, len(lists)), dtype=np.int16)
    for r, lst in enumerate(lists):
        items = align_rows(lst.query_ids, lst.item_ids, queries)
        hit = items == own_videos[:, None]
        known[:, r] = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, 0)
    return known


@functools.lru_cache(maxsize=16)
def turn_of(queries: int, seed: int) -> np.ndarray:
    """Each query's turn within a round-robin round (a seeded permutation; read-only), kept
    per process: drawing it anew cost 5 ms a submit at 60,000 queries (the load bench)."""
    turns = np.argsort(np.random.default_rng(seed).permutation(queries)).astype(np.int64)
    turns.setflags(write=False)
    return turns


def initial_queue(
    settings: JudgingSettings, pool: Pool, source: Provenance, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(position, parked) of every freshly pooled pair under the campaign's strategy."""
    if not len(pool):
        return np.zeros(0, np.int64), np.zeros(0, bool)
    if settings.order.blocks:  # today's order: the pool's own (caption by caption, best rank)
        return np.arange(len(pool), dtype=np.int64), np.zeros(len(pool), bool)
    ranks, known = source.for_strategy(settings.strategy)
    state = settings.state(Pool(pool.caption_ids, pool.video_ids, ranks), known)
    return judging_order.queue_positions(state, turn_of(state.layout.pair_of.shape[0], seed))


# -- live updates --------------------------------------------------------------------------


QUERY_COLUMNS = QueryPair._fields
"""A query's pair columns as the judging order reads them (field names, read by name)."""


def _after_label(rows: list[QueryPair], pair: Pair) -> list[QueryPair]:
    """A query's pairs as read under its lock before a label, with the labelled ``pair``'s
    counts as the label left them: the others cannot have changed, being locked."""
    counts = {
        name: getattr(pair, name) for name in pair_state.COUNT_FIELDS if name in QueryPair._fields
    }
    return [row._replace(**counts) if row.id == pair.pk else row for row in rows]


def query_pairs(campaign_id: int, caption_id: int) -> list[QueryPair]:
    """One query's pairs in pool order, with what the judging order re-ranks them by. Through
    the ORM: a statement of our own saved 0.5 ms of a 6 ms submit (under a tenth: RESULTS,
    "each statement against the ORM")."""
    query = Pair.objects.filter(campaign_id=campaign_id, caption_id=caption_id)
    return [QueryPair(*row) for row in query.order_by("pool_row").values_list(*QUERY_COLUMNS)]


def decided(rows: Sequence[QueryPair], by_status: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(judged, relevant) per pair of a query from its stored labels: an admin's or a
    proxy's label, else the live labels as :func:`judging_order.live_relevant` counts them
    (``by_status``: as the pair's status says, the adaptive policy's posterior label)."""
    judged = np.zeros(len(rows), bool)
    relevant = np.zeros(len(rows), bool)
    for i, row in enumerate(rows):
        labels, rel, status = row.label_count, row.relevant_count, row.status
        adjudicated, auto = row.adjudicated, row.auto_label
        if adjudicated:
            judged[i], relevant[i] = True, adjudicated == Pair.Status.RELEVANT
        elif auto or status != Pair.Status.PENDING or labels:
            judged[i] = True
            relevant[i] = (
                status == Pair.Status.RELEVANT
                if not labels or by_status
                else judging_order.live_relevant(rel, labels)
            )
    return judged, relevant


def reprioritise(
    campaign: Campaign,
    caption_id: int,
    read: label_models.QueryLabels | None = None,
    locked: tuple[list[QueryPair], Pair] | None = None,
) -> None:
    """Recompute one query's open pairs' positions after a label (or an undo) and park or
    reopen its pairs as the strategy needs them (under the adaptive policy, from ``read``:
    the query's labels, when the caller has them). ``locked``: the query's pairs as the
    caller read them under its lock before the label, and the labelled pair, so the pairs
    are not read again. Called inside the caller's transaction."""
    settings = campaign.settings.judging
    if not settings.adaptive or caption_id in campaign.settings.judged_in_full:
        return  # a query drawn for an estimate is judged in full, first
    source = provenance(campaign)
    rows = query_pairs(campaign.pk, caption_id) if locked is None else _after_label(*locked)
    if not rows:
        return
    label_policy = campaign.settings.label_policy
    if label_policy.adaptive and settings.strategy == METRIC_AWARE:
        _reprioritise_by_value(campaign, caption_id, rows, source, read)
        return
    judged, relevant = decided(rows, by_status=label_policy.adaptive)
    judged_at = np.flatnonzero(judged)
    if settings.strategy == "mtf" and judged_at.size > 1:
        judged_at = _in_label_order(rows, judged_at)
    pool_rows = np.array([row.pool_row for row in rows], dtype=np.int64)
    ranks, known_ranks = source.for_strategy(settings.strategy)
    known, turn = _query_known(campaign, source, caption_id, known_ranks)
    state = judging_order.query_state(
        settings.strategy,
        ranks[pool_rows],
        [(int(i), bool(relevant[i])) for i in judged_at],
        known_positive_rank=known,
        ks=settings.ks,
        p=settings.p,
    )
    position, parked = judging_order.queue_positions(
        state, np.array([turn]), queries=max(source.queries.size, 1)
    )
    open_at = np.flatnonzero(~judged)
    apply_value_queue([rows[i] for i in open_at], ~parked[open_at], position[open_at])


def _query_known(
    campaign: Campaign, source: Provenance, caption_id: int, known_ranks: np.ndarray
) -> tuple[np.ndarray | None, int]:
    """The caption's row of ``known_ranks`` (None when the provenance lacks the caption) and
    its turn in the campaign's round-robin (:func:`turn_of`)."""
    queries = source.queries
    query = int(np.searchsorted(queries, caption_id))
    found = query < queries.size and queries[query] == caption_id
    turn = turn_of(queries.size, campaign.seed)[min(query, queries.size - 1)]
    return (known_ranks[query] if found else None), turn


METRIC_AWARE = "metric-first"
"""The judging order that, under the adaptive policy, serves tasks by their value
(:mod:`annotation.policy.label_value`): first labels and extra labels alike, only where they can
change some run's Correct@K."""


def _reprioritise_by_value(
    campaign: Campaign,
    caption_id: int,
    rows: Sequence[QueryPair],
    source: Provenance,
    read: label_models.QueryLabels | None = None,
) -> None:
    """One query under the adaptive policy's metric-aware order: ask for a label (a first one
    or another) exactly where :func:`label_value.queue` wants one, at its position; a pair on
    someone's screen keeps its lease and what it needed when leased."""
    read = read if read is not None else label_models.read_query(campaign, caption_id)
    seen = label_models.snapshot(campaign, [(row.id, row.pool_row) for row in rows], read=read)
    ranks, known_ranks = source.settling
    known, turn = _query_known(campaign, source, caption_id, known_ranks)
    if known is None:
        known = np.zeros(ranks.shape[1], np.int64)
    pool_rows = np.array([row.pool_row for row in rows], dtype=np.int64)
    fixed = np.array([bool(row.adjudicated or row.auto_label) for row in rows])
    _, relevant = decided(rows, by_status=True)
    chosen = campaign.settings.label_policy
    want, position = label_value.queue(
        ranks[pool_rows][None].astype(np.int64),
        relevant[None],
        np.asarray(known, dtype=np.int64)[None],
        seen.total[None],
        seen.posterior[None],
        fixed[None],
        np.array([turn]),
        max(source.queries.size, 1),
        confidence=chosen.confidence,
        cap=campaign.max_labels,
        ks=campaign.settings.judging.ks,
    )
    apply_value_queue(rows, want[0], position[0])


def apply_value_queue(rows: Sequence, want: np.ndarray, position: np.ndarray) -> None:
    """Write a queue's decisions through the pairs' one writer: reopen the wanted pairs that
    need nothing, move them to their positions, and park the unwanted ones that need
    something (a pair on someone's screen keeps what it needed when leased)."""
    park, reopen_ids, moves = [], [], {}
    for i, row in enumerate(rows):
        if want[i]:
            if row.needed == 0:
                reopen_ids.append(row.id)
            if int(position[i]) != row.position:
                moves[row.id] = int(position[i])
        elif row.needed > 0 and row.leased == 0:
            park.append(row.id)
    pair_state.place(park, reopen_ids, moves)


def requeue(campaign: Campaign, caption_ids) -> int:
    """Run the metric-aware order again on the queries a refit changed, one short transaction
    each locking as a submit does (one over the whole campaign deadlocked with submits); how
    many queries it ran on (none for another policy or order)."""
    settings = campaign.settings
    if not (settings.label_policy.adaptive and settings.judging.strategy == METRIC_AWARE):
        return 0
    done = 0
    for caption_id in sorted({int(c) for c in caption_ids}):
        with transaction.atomic():
            pair_state.lock_query(campaign.pk, caption_id)
            reprioritise(campaign, caption_id)
        done += 1
    return done


def _in_label_order(rows: Sequence[QueryPair], judged_at: np.ndarray) -> np.ndarray:
    """The judged pairs ordered by their first live label (move-to-front follows the last)."""
    ids = [rows[i].id for i in judged_at]
    first = dict(
        rows_in(
            Judgement.objects.filter(undone_at__isnull=True)
            .order_by()
            .values("pair_id")
            .annotate(at=Min("pk"))
            .values_list("pair_id", "at"),
            "pair_id",
            ids,
        )
    )
    return judged_at[np.argsort([first.get(rows[i].id, 0) for i in judged_at], kind="stable")]


def reopen(campaign: Campaign) -> int:
    """Serve the campaign's parked pairs again (an admin's call, or budget to spare)."""
    ids = list(parked_pairs(campaign).values_list("pk", flat=True))
    pair_state.place(reopen_ids=ids)
    return len(ids)


def parked_pairs(campaign: Campaign):
    """Pairs kept but not served: never labelled, no admin or proxy label, nothing needed."""
    return Pair.objects.filter(
        campaign=campaign,
        status=Pair.Status.PENDING,
        label_count=0,
        needed=0,
        adjudicated="",
        auto_label="",
    )


# -- budget --------------------------------------------------------------------------------


def labels_spent(campaign: Campaign) -> int:
    """Live labels in the campaign (from the triggers' annotator tallies)."""
    total = AnnotatorTally.objects.filter(campaign=campaign).aggregate(n=Sum("judged"))["n"]
    return int(total or 0)


def budget_spent(campaign: Campaign) -> bool:
    """Whether the campaign has a label budget and has used it up."""
    budget = campaign.settings.judging.budget
    return budget is not None and labels_spent(campaign) >= budget
