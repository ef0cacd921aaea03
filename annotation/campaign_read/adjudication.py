"""The admin's adjudication page as data (pairs waiting for an admin, the last decided, gold
counts) and one decision on a pair (FIRE §3.1: the admin's label wins)."""

from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet

from annotation.gold import service as gold
from annotation.judging import escalations, pair_state
from annotation.models import Campaign, Escalation, GoldPair, Judgement, Pair

RECENT = 10
"""Decided pairs shown under the waiting ones, the latest first."""


@dataclass(frozen=True)
class Adjudication:
    """What the adjudication page shows besides the page of waiting pairs."""

    waiting: QuerySet
    """Pairs waiting for an admin in queue order, with ``live_judgements`` and
    ``open_escalations``."""
    recent: list[Pair]
    gold_pair_ids: set[int]
    """Which of ``recent`` are gold pairs."""
    gold_count: int
    decided_count: int
    """Decided pairs that could be promoted to gold."""


def adjudication(campaign: Campaign) -> Adjudication:
    pairs = Pair.objects.filter(campaign=campaign).select_related("caption", "video")
    live = Judgement.objects.filter(undone_at__isnull=True).select_related("annotator")
    unresolved = Escalation.objects.filter(resolved_at__isnull=True).select_related("annotator")
    waiting = (
        pairs.filter(pair_state.waiting_for_admin())
        .prefetch_related(
            Prefetch("judgements", live.order_by("created_at"), to_attr="live_judgements"),
            Prefetch("escalations", unresolved, to_attr="open_escalations"),
        )
        .order_by("position")
    )
    recent = pairs.exclude(adjudicated="").select_related("adjudicated_by")
    recent = list(recent.order_by("-adjudicated_at")[:RECENT])
    gold_pairs = GoldPair.objects.filter(campaign=campaign)
    gold_ids = set(gold_pairs.filter(pair__in=recent).values_list("pair_id", flat=True))
    return Adjudication(waiting, recent, gold_ids, gold_pairs.count(), gold.promotable(campaign))


def decide(campaign: Campaign, pair_id: int, user, label: str | None, note: str) -> Pair | None:
    """The admin's ``label`` for one pair (resolving an open escalation), or None to hand an
    escalated pair back to the queue; None when the campaign has no such pair."""
    pairs = Pair.objects.select_related("caption", "video").filter(campaign=campaign)
    pair = pairs.filter(pk=pair_id).first()
    if pair is None:
        return None
    open_escalation = pair.escalations.filter(resolved_at__isnull=True).first()
    if open_escalation is not None:
        escalations.resolve_escalation(open_escalation, user, label=label, note=note)
    elif label is not None:
        escalations.adjudicate(pair, user, label)
    return pair
