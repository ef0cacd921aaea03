"""The one writer of a pair's state: counters, status, holds, adjudication and auto-labels.

A pair carries running counts so the next-task query is an index lookup: live labels
(``label_count``, ``relevant_count``), ``needed`` (what the label policy still asks, FIRE
§3.1 or adaptive), ``leased`` and ``open_slots`` (0 while held, else
``max(needed - leased, 0)``: :func:`open_slots`, in SQL ``open_slots_expression``). Every
transition goes through a function here (a test looks for writers elsewhere) and check
constraints make a writer that breaks the rule fail loudly. Writers lock a pair's row before
its leases' rows (several pairs in id order), so a submit and a lease release cannot deadlock.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple
from uuid import UUID

import numpy as np
from django.db import connection, transaction
from django.db.models import Case, Count, F, Q, Value, When
from django.utils import timezone

from annotation.campaigns.spec import LEASE_SECONDS
from annotation.judging import statements as sql
from annotation.judging.errors import AssignmentError
from annotation.models import (
    Campaign,
    CampaignTally,
    Judgement,
    LapsedLease,
    Lease,
    Pair,
    open_slots_expression,
)
from annotation.policy import label_models
from annotation.policy import rules as policy
from config.batches import id_filters, rows_in
from config.subqueries import row_count
from retrieval.label_sets.status import CODES, NAMES, RELEVANT

BATCH = 5_000
"""Pairs per ``bulk_update`` query."""
GRACE_SECONDS = 120
"""How long after a lease ran out its annotator may still submit (while a slot is free)."""


def open_slots(needed, leased, held):
    """How many more annotators may lease a pair now: 0 while held, else
    ``max(needed - leased, 0)``. Ints give an int; arrays (many pairs) give an array.
    ``open_slots_expression`` (:mod:`annotation.models`) is the same rule in SQL."""
    slots = np.where(held, 0, np.maximum(np.subtract(needed, leased), 0))
    return int(slots) if slots.ndim == 0 else slots


def servable(prefix: str = "", *, once_leases_end: bool = False) -> Q:
    """Pairs an annotator may be served: :func:`open_slots` > 0 now (the stored count, which
    the partial index ``pair_queue`` serves) or, with ``once_leases_end``, once every live
    lease ends (``needed > 0``, not held). ``prefix`` names the pair from another model."""
    if once_leases_end:
        return Q(**{f"{prefix}needed__gt": 0, f"{prefix}held": False})
    return Q(**{f"{prefix}open_slots__gt": 0})


def first_needed(double: np.ndarray, parked: np.ndarray | None = None) -> np.ndarray:
    """Labels freshly pooled pairs need: what the policy asks of a pair with no label (one,
    two in the double sample), none when ``parked`` (the judging order keeps them back)."""
    needed = policy.labels_needed(0, 0, double)
    return needed if parked is None else np.where(parked, 0, needed)


def initial(needed) -> dict[str, object]:
    """The state of new pairs, by column: no label, no lease, not held, pending, needing
    ``needed`` labels. An int gives one pair's values (for ``Pair(**...)``); an array gives
    a list per varying column (as :func:`annotation.judging.statements.insert` takes them)."""
    needed = np.asarray(needed, dtype=np.int64)
    return {
        "label_count": 0,
        "relevant_count": 0,
        "needed": needed.tolist(),
        "leased": 0,
        "open_slots": np.asarray(open_slots(needed, 0, False)).tolist(),
        "held": False,
        "status": Pair.Status.PENDING.value,
        "adjudicated": "",
    }


def unfinished(needed, labelled) -> np.ndarray:
    """Pairs judging is not done with: the policy still asks labels of them, or they have no
    label, adjudication or proxy label (``labelled`` false; parked ones included). Arrays in,
    a bool array out; :func:`unfinished_pairs` is the same rule in SQL."""
    return (np.asarray(needed) > 0) | ~np.asarray(labelled, dtype=bool)


def unfinished_pairs() -> Q:
    """:func:`unfinished` as a filter on pairs."""
    return Q(needed__gt=0) | Q(label_count=0, adjudicated="", auto_label="")


def waiting_for_admin() -> Q:
    """Pairs an admin should see: disagreements not adjudicated, escalated (held) pairs, and
    ties still waiting for a further label (as many relevant labels as irrelevant ones)."""
    return (
        Q(status=Pair.Status.DISAGREEMENT, adjudicated="")
        | Q(held=True)
        | Q(status=Pair.Status.PENDING, label_count__gte=2, label_count=F("relevant_count") * 2)
    )


def lock_pairs(pair_ids: Iterable[int]) -> None:
    """Lock pairs in id order before touching their leases (no-op on SQLite)."""
    pair_ids = sorted(set(pair_ids))
    if pair_ids and connection.features.has_select_for_update:
        for where in id_filters("pk", pair_ids):  # in id order across batches too
            locking = Pair.objects.filter(**where).order_by("pk").select_for_update()
            list(locking.values_list("pk", flat=True))


class QueryPair(NamedTuple):
    """A query's pair as the judging order re-ranks it."""

    id: int
    pool_row: int
    position: int
    label_count: int
    relevant_count: int
    status: str
    adjudicated: str
    auto_label: str
    needed: int
    leased: int
    double: bool


def lock_query(campaign_id: int, caption_id: int) -> list[QueryPair]:
    """Lock one query's pairs in id order, then their tally rows, as a writer that re-orders
    the query must first; the pairs as the judging order reads them, in pool order. Through
    the ORM: our own statement saved 0.5 ms of a 6 ms submit (RESULTS, "each statement
    against the ORM")."""
    query = Pair.objects.filter(campaign_id=campaign_id, caption_id=caption_id).order_by("pk")
    found = query.select_for_update().values_list(*QueryPair._fields)
    rows = sorted((QueryPair(*row) for row in found), key=lambda row: row.pool_row)
    lock_tallies(campaign_id, [caption_id])
    return rows


def lock_tallies(campaign_id: int, caption_ids: Iterable[int]) -> None:
    """Lock, in shard order, the tally rows (:class:`CampaignTally`) these queries count in:
    a transaction changing several pairs in several statements would otherwise update shards
    in statement order, and two such transactions could deadlock."""
    if not connection.features.has_select_for_update:
        return
    shards = sorted({int(caption) % CampaignTally.SHARDS for caption in caption_ids})
    if shards:
        params = {f"shard_{i}": shard for i, shard in enumerate(shards)}
        sql.LOCK_TALLIES.plain_rows({"campaign": campaign_id, **params}, shards=len(shards))


def recount_leases(pair_ids: Iterable[int], held: bool | None = None) -> None:
    """Recount live leases of the pairs and recompute how many more may be leased, in one
    statement a batch of pairs (the pair's row never breaks the rule between two); with
    ``held`` the pairs are held or let go in the same statement."""
    pair_ids = sorted(set(pair_ids))
    if not pair_ids:
        return
    leased = row_count(Lease.objects.all(), "pair")
    values = {"leased": leased, "open_slots": open_slots_expression(leased=leased, held=held)}
    if held is not None:
        values["held"] = held
    for where in id_filters("pk", pair_ids):
        Pair.objects.filter(**where).update(**values)


def take_lease(pair: Pair, annotator, campaign: Campaign, now: datetime) -> Lease:
    """Lease an open pair (``open_slots > 0``, row locked by the caller) to the annotator."""
    # At most a day: a campaign stored before the bound existed must not break every request.
    expires = now + timedelta(seconds=min(campaign.lease_seconds, LEASE_SECONDS[1]))
    lease_id = sql.insert_lease(pair.pk, annotator.pk, now, expires)
    sql.LEASES_MOVED.execute({"pair": pair.pk, "step": 1})  # open slots by the rule
    lease = Lease(pk=lease_id, pair=pair, annotator=annotator, created_at=now, expires_at=expires)
    pair.leased += 1
    pair.open_slots = open_slots(pair.needed, pair.leased, pair.held)
    return lease


def end_lease(pair_id: int, annotator_id: int) -> bool:
    """End the annotator's lease on the pair and free its slot (a gold task's answer or
    escalation); whether they held one."""
    if not sql.delete_lease(pair_id, annotator_id):
        return False
    sql.LEASES_MOVED.execute({"pair": pair_id, "step": -1})
    return True


def _give_back_lease(pair: Pair, annotator_id: int, now: datetime) -> None:
    """End the annotator's lease on the pair as their label comes in (the counts are saved
    with the label's). Without a lease the label is taken only if theirs lapsed less than
    :data:`GRACE_SECONDS` ago and a slot is free: nobody picks pairs by hand."""
    if sql.delete_lease(pair.pk, annotator_id):
        pair.leased -= 1
        pair.open_slots = open_slots(pair.needed, pair.leased, pair.held)
        return
    lapsed = LapsedLease.objects.filter(
        pair=pair, annotator_id=annotator_id, expired_at__gt=now - timedelta(seconds=GRACE_SECONDS)
    ).exists()
    if not lapsed:
        raise AssignmentError("not_leased", "this pair is not leased to you")
    if pair.open_slots <= 0:
        raise AssignmentError(
            "lease_expired", "your time on this pair ran out and it no longer needs a label"
        )


def add_label(
    pair: Pair,
    campaign: Campaign,
    annotator_id: int,
    label: str,
    client_uuid: UUID,
    seconds: float | None,
    played: float | None,
    now: datetime,
) -> tuple[Judgement, label_models.QueryLabels | None]:
    """Store an annotator's label on a pair they hold (row locked by the caller) and move
    the pair's state with it: their lease ends, the judgement is stored, the pair's counts,
    needs and status are saved. Returns the judgement and what :func:`count_label` read."""
    _give_back_lease(pair, annotator_id, now)
    judgement = sql.insert_judgement(
        client_uuid, pair.pk, annotator_id, label, seconds, now, played
    )
    return judgement, count_label(pair, campaign, label, +1)


def release_leases(leases: list[tuple[int, int]], locked: bool = False) -> None:
    """Delete leases given as (lease id, pair id) and free their pairs' slots."""
    if leases:
        if not locked:
            lock_pairs(pair_id for _, pair_id in leases)
        for where in id_filters("pk", [pk for pk, _ in leases]):
            Lease.objects.filter(**where).delete()
        recount_leases(pair_id for _, pair_id in leases)


def _in_campaign(campaign_id: int) -> Q:
    """Leases (and lapsed ones) on the campaign's pairs or its gold tasks."""
    return Q(pair__campaign_id=campaign_id) | Q(pair__gold_task__campaign_id=campaign_id)


def forget_lapsed(campaign_id: int, annotator_id: int) -> None:
    """Drop the annotator's lapsed leases in the campaign: no grace period to submit what
    they had on screen (a paused annotator's)."""
    LapsedLease.objects.filter(_in_campaign(campaign_id), annotator_id=annotator_id).delete()


def held_leases(campaign_id: int, annotator_id: int) -> list[tuple[int, int]]:
    """(lease id, pair id) of every lease the annotator holds in the campaign, its gold
    tasks' included."""
    leases = Lease.objects.filter(_in_campaign(campaign_id), annotator_id=annotator_id)
    return list(leases.values_list("pk", "pair_id"))


def release_annotator(campaign_id: int, annotator_id: int) -> int:
    """End every lease the annotator holds in the campaign (its gold tasks' included) and
    forget their lapsed ones, so nothing they still have on screen may be submitted: what
    pausing them does. How many leases ended."""
    held = held_leases(campaign_id, annotator_id)
    release_leases(held)
    forget_lapsed(campaign_id, annotator_id)
    return len(held)


def _apply_policies(
    pairs: list[Pair], campaign: Campaign, posteriors: np.ndarray | None = None
) -> None:
    """Recompute the pairs' ``needed``, ``status`` and ``open_slots`` from their label counts
    under the campaign's label policy (:mod:`annotation.policy.rules`), the policy's arrays
    computed once (one pair at a time, a discount of 66,000 labels spent 25 s in numpy's
    per-call overhead); ``posteriors`` (by pair) under the adaptive policy, whose callers
    always give them; None under FIRE's."""
    if not pairs:
        return
    relevant = np.array([pair.relevant_count for pair in pairs], dtype=np.int64)
    total = np.array([pair.label_count for pair in pairs], dtype=np.int64)
    adjudicated = np.array(
        [CODES[pair.adjudicated] if pair.adjudicated else policy.NOT_ADJUDICATED for pair in pairs]
    )
    if posteriors is not None:
        captions = [pair.caption_id for pair in pairs]
        needed, code = label_models.adaptive_state(
            campaign, total, posteriors, adjudicated, captions
        )
    else:
        cap = campaign.max_labels
        double = np.array([pair.double for pair in pairs], dtype=bool)
        needed, code = policy.fire_state(relevant, total, double, cap, adjudicated)
    for pair, pair_needed, pair_code in zip(pairs, needed.tolist(), code.tolist(), strict=True):
        pair.needed = 0 if pair.adjudicated else int(pair_needed)
        pair.status = NAMES[int(pair_code)]
        pair.open_slots = open_slots(pair.needed, pair.leased, pair.held)


COUNT_FIELDS = list(sql.SAVE_COUNTS_COLUMNS)


def count_label(
    pair: Pair,
    campaign: Campaign,
    label: str,
    change: int,
) -> label_models.QueryLabels | None:
    """Add (``change=1``) or take back (``-1``) one live label and save the pair's state.
    Under the adaptive policy the query's live labels are read once, after the change: the
    pair's posterior comes from them and they are returned, for the judging order to
    re-rank the query from (None under FIRE's policy).

    The caller has locked the pair and settled its leases (``pair.leased`` is current).
    """
    pair.label_count += change
    pair.relevant_count += change * (label == RELEVANT.label)
    read = None
    posteriors = None
    if campaign.settings.label_policy.adaptive:
        read = label_models.read_query(campaign, pair.caption_id)
        posteriors = np.array([read.posterior(campaign, pair)])
    _apply_policies([pair], campaign, posteriors)
    sql.save_counts(pair)
    return read


def recount_labels(pair_ids: list[int], campaign: Campaign) -> None:
    """Recompute the pairs' label counts from the labels that still count (after labels were
    discounted) and what the policy now needs of them; the caller has locked the pairs.
    Bulk: a query for the counts (with the posteriors under the adaptive policy), one for
    the pairs, and one update per set of values (:func:`_save_counts`)."""
    pairs = rows_in(Pair.objects.all(), "pk", pair_ids)
    if campaign.settings.label_policy.adaptive:
        seen = label_models.snapshot(campaign, [(pair.pk, pair.pool_row) for pair in pairs])
        for i, pair in enumerate(pairs):
            pair.label_count, pair.relevant_count = int(seen.total[i]), int(seen.relevant[i])
        _apply_policies(pairs, campaign, np.asarray(seen.posterior, dtype=float))
    else:
        live = {
            row["pair_id"]: row
            for where in id_filters("pair_id", pair_ids)
            for row in Judgement.objects.filter(**where, undone_at__isnull=True)
            .order_by()
            .values("pair_id")
            .annotate(n=Count("pk"), rel=Count("pk", filter=Q(label=RELEVANT.label)))
        }
        for pair in pairs:
            counts = live.get(pair.pk, {"n": 0, "rel": 0})
            pair.label_count, pair.relevant_count = counts["n"], counts["rel"]
        _apply_policies(pairs, campaign)
    _save_counts(pairs)


def _save_counts(pairs: list[Pair]) -> None:
    """Write the pairs' :data:`COUNT_FIELDS`, one ``UPDATE`` per set of values and batch of
    ids (the values repeat: a few counts and states), not ``bulk_update``'s ``CASE`` of a
    branch per pair, which PostgreSQL evaluates branch by branch for every row: a discount
    of 100,000 labels spent minutes there."""
    groups: dict[tuple, list[int]] = {}
    for pair in pairs:
        groups.setdefault(tuple(getattr(pair, name) for name in COUNT_FIELDS), []).append(pair.pk)
    for values, pks in groups.items():
        for where in id_filters("pk", pks):
            Pair.objects.filter(**where).update(**dict(zip(COUNT_FIELDS, values, strict=True)))


REFIT_CHUNK = 500
"""Changed pairs written per transaction by :func:`apply_refit`."""


@dataclass(frozen=True)
class RefitApplied:
    """What :func:`apply_refit` wrote: how many pairs, and the captions (queries) they are in."""

    written: int
    captions: tuple[int, ...]


def apply_refit(campaign: Campaign, *, reopen: bool = True) -> RefitApplied:
    """Recompute ``needed`` and ``status`` of every labelled pair of an adaptive campaign under
    its newly stored annotator models, from one read of the labels. Only changed pairs are
    written, guarded so a pair whose labels changed since keeps its own writer's values, in
    :data:`REFIT_CHUNK`-pair transactions locking as a submit does (one transaction held
    every tally shard for seconds: p99 305 ms at 250 annotators). Without ``reopen`` (a
    metric-aware order, which asks again where it matters) a pair is only asked for less."""
    rows = list(
        Pair.objects.filter(campaign=campaign, label_count__gt=0, adjudicated="")
        .order_by("pk")
        .values_list("pk", "pool_row", "needed", "status", "caption_id")
    )
    if not rows:
        return RefitApplied(0, ())
    seen = label_models.snapshot(
        campaign,
        [(pk, pool_row) for pk, pool_row, _, _, _ in rows],
        Judgement.objects.filter(pair__campaign=campaign),
    )
    unadjudicated = np.full(len(rows), policy.NOT_ADJUDICATED)
    captions = np.array([row[4] for row in rows], dtype=np.int64)
    needed, codes = label_models.adaptive_state(
        campaign, seen.total, seen.posterior, unadjudicated, captions
    )
    before_needed = np.array([r[2] for r in rows], dtype=np.int64)
    if not reopen:  # but a query judged in full for an estimate has no value order to ask
        in_full = np.isin(captions, list(campaign.settings.judged_in_full))
        needed = np.where(in_full, needed, np.minimum(needed, before_needed))
    before_codes = np.array([CODES[r[3]] for r in rows], dtype=np.int64)
    changed = np.flatnonzero((needed != before_needed) | (codes != before_codes))
    written = 0
    for start in range(0, changed.size, REFIT_CHUNK):
        chunk = changed[start : start + REFIT_CHUNK]
        with transaction.atomic():
            ids = seen.pair_ids[chunk].tolist()
            lock_pairs(ids)
            lock_tallies(campaign.pk, (rows[i][4] for i in chunk.tolist()))
            groups: dict[tuple[int, int, int, int], list[int]] = {}
            for i in chunk.tolist():
                key = (int(needed[i]), int(codes[i]), int(seen.total[i]), int(seen.relevant[i]))
                groups.setdefault(key, []).append(int(seen.pair_ids[i]))
            for (new_needed, code, total, relevant), pks in groups.items():
                written += Pair.objects.filter(
                    pk__in=pks, label_count=total, relevant_count=relevant, adjudicated=""
                ).update(
                    needed=new_needed,
                    status=NAMES[code],
                    open_slots=open_slots_expression(needed=Value(new_needed)),
                )
    captions = tuple(sorted({int(rows[i][4]) for i in changed.tolist()}))
    return RefitApplied(written, captions)


def hold(pair_id: int) -> None:
    """Keep an escalated pair from annotators until an admin decides: every lease on it
    ends (the caller has locked the pair), so nobody is shown it meanwhile."""
    Lease.objects.filter(pair_id=pair_id).delete()
    recount_leases([pair_id], held=True)


def unhold(pair_id: int) -> None:
    """Return an escalated pair to the judging queue."""
    recount_leases([pair_id], held=False)


def adjudicate(pair: Pair, admin, label: str) -> None:
    """Store an admin's final label; it wins over the annotators' labels (FIRE §3.1)."""
    pair.adjudicated = label
    pair.adjudicated_by = admin
    pair.adjudicated_at = timezone.now()
    posteriors = None
    if pair.campaign.settings.label_policy.adaptive:
        posteriors = np.array([label_models.pair_posterior(pair, pair.campaign)])
    _apply_policies([pair], pair.campaign, posteriors)
    pair.save(update_fields=["adjudicated", "adjudicated_by", "adjudicated_at", *COUNT_FIELDS])


def auto_label(pair_ids: Iterable[int], status: str, rule: str) -> int:
    """Give unleased, unlabelled pairs a proxy's label: they leave the judging queue."""
    # Unleased (the caller checked) and needing nothing, so no slot is open.
    slots = open_slots(0, 0, False)
    pairs = [
        Pair(pk=int(pk), status=status, needed=0, open_slots=slots, auto_label=rule)
        for pk in pair_ids
    ]
    Pair.objects.bulk_update(pairs, ["status", "needed", "open_slots", "auto_label"], BATCH)
    return len(pairs)


def place(
    park_ids: Sequence[int] = (),
    reopen_ids: Sequence[int] = (),
    positions: Mapping[int, int] | None = None,
) -> None:
    """A judging order's decisions in one call. Park unleased pairs it no longer needs (nothing
    is needed of them, so nobody is offered them; a lease taken since the caller read the row
    wins); reopen parked ones (their first labels, two in the double sample, or under the
    metric-aware order one more); move pairs to new queue positions (:func:`move`)."""
    if park_ids:
        zero = open_slots_expression(needed=Value(0))
        for where in id_filters("pk", park_ids):
            Pair.objects.filter(**where, leased=0).update(needed=0, open_slots=zero)
    needed = Case(When(double=True, then=Value(2)), default=Value(1))  # first_needed
    for where in id_filters("pk", reopen_ids) if reopen_ids else ():
        Pair.objects.filter(**where).update(
            needed=needed, open_slots=open_slots_expression(needed=needed)
        )
    if positions:
        move(dict(positions))


def move(positions: dict[int, int]) -> int:
    """New queue positions by pair id (the judging order; not part of a pair's state): one
    query's few by one statement, a campaign's many in ``bulk_update`` batches."""
    if len(positions) <= sql.MOVE_MAX:
        sql.move_pairs(positions)
    else:
        pairs = [Pair(pk=pk, position=position) for pk, position in positions.items()]
        Pair.objects.bulk_update(pairs, ["position"], batch_size=BATCH)
    return len(positions)
