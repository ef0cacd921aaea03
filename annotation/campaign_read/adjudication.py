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
    waiting = (
        Pair.objects.filter(campaign=campaign)
        .filter(pair_state.waiting_for_admin())
        .select_related("caption", "video")
        .prefetch_related(
            Prefetch(
                "judgements",
                queryset=Judgement.objects.filter(undone_at__isnull=True)
                .select_related("annotator")
                .order_by("created_at"),
                to_attr="live_judgements",
            ),
            Prefetch(
                "escalations",
                queryset=Escalation.objects.filter(resolved_at__isnull=True).select_related(
                    "annotator"
                ),
                to_attr="open_escalations",
            ),
        )
        .order_by("position")
    )
    recent = list(
        Pair.objects.filter(campaign=campaign)
        .exclude(adjudicated="")
        .select_related("caption", "video", "adjudicated_by")
        .order_by("-adjudicated_at")[:RECENT]
    )
    gold_pairs = GoldPair.objects.filter(campaign=campaign)
    return Adjudication(
        waiting=waiting,
        recent=recent,
        gold_pair_ids=set(
            gold_pairs.filter(pair__in=[pair.pk for pair in recent]).values_list(
                "pair_id", flat=True
            )
        ),
        gold_count=gold_pairs.count(),
        decided_count=gold.promotable(campaign),
    )


def decide(campaign: Campaign, pair_id: int, user, label: str | None, note: str) -> Pair | None:
    """The admin's ``label`` for one pair (resolving an open escalation), or None to hand an
    escalated pair back to the queue; None when the campaign has no such pair."""
    pair = (
        Pair.objects.filter(pk=pair_id, campaign=campaign)
        .select_related("caption", "video")
        .first()
    )
    if pair is None:
        return None
    open_escalation = pair.escalations.filter(resolved_at__isnull=True).first()
    if open_escalation is not None:
        escalations.resolve_escalation(open_escalation, user, label=label, note=note)
    elif label is not None:
        escalations.adjudicate(pair, user, label)
    return pair
