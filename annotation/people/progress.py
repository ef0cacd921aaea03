"""An annotator's own progress over every campaign listed on their home, in bulk.

Each total is the one :func:`annotation.judging.queue.progress` reads for the judging page,
for all campaigns at once (one aggregate query per total over the running tallies, never a
query per campaign), turned into figures by the same
:func:`annotation.judging.queue.shown_progress`, with the annotator's state in each
(:func:`annotation.people.state_service.campaign_states`), so both pages say the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time

from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotation.judging import pair_state, queue
from annotation.models import AnnotatorTally, Campaign, CampaignTally, GoldJudgement, Judgement
from annotation.people.state import State
from annotation.people.state_service import campaign_states


@dataclass(frozen=True)
class CampaignProgress:
    """One campaign as one annotator sees it: the judging page's figures, ``labels_needed``
    (the campaign's, over pairs not held) and ``left_for_me`` (its part on pairs the
    annotator has not judged); ``budget`` and ``labels_spent`` are None without a budget."""

    campaign_id: int
    name: str
    dataset: str
    status: str
    judged_today: int
    judged_total: int
    labels_left: int
    pairs: int
    left_for_me: int
    labels_needed: int = 0
    budget: int | None = None
    labels_spent: int | None = None
    labels_done: int = 0
    """Live labels in the campaign, everyone's (``shown_progress``'s ``labels_given``)."""
    needed_now: bool = False
    """Adaptive order or policy: pages say "needed now" where they would say "left"."""
    state: State | None = None

    @property
    def done_percent(self) -> int:
        """Labels given, of those given and ``labels_left``: the judging page's bar."""
        whole = self.labels_done + self.labels_left
        return round(100 * self.labels_done / whole) if whole else 100

    @property
    def budget_spent(self) -> bool:
        return self.budget is not None and (self.labels_spent or 0) >= self.budget

    @property
    def finished(self) -> bool:
        """Nothing is left for anyone: no label needed, or the label budget used up."""
        return self.labels_needed == 0 or self.budget_spent

    @property
    def nothing_for_me(self) -> bool:
        """Labels are still needed, but only on pairs this annotator has judged already."""
        return not self.finished and self.left_for_me == 0


def sums_by(rows, key: str, **totals) -> dict[int, tuple[int, ...]]:
    """``key`` -> the ``totals`` (aggregates, None read as 0) of ``rows`` grouped by it."""
    found = rows.order_by().values(key).annotate(**totals).values_list(key, *totals)
    return {group: tuple(int(value or 0) for value in values) for group, *values in found}


def annotator_progress(
    campaigns: Sequence[Campaign], annotator, now: datetime | None = None
) -> tuple[CampaignProgress, ...]:
    """Each campaign's progress for ``annotator``, in the order given (campaigns with
    ``dataset`` selected, or one query more per campaign for its name)."""
    campaigns = list(campaigns)
    if not campaigns:
        return ()
    today = (now or timezone.now()).astimezone(UTC).date()
    ids = [campaign.pk for campaign in campaigns]
    tallies = AnnotatorTally.objects.filter(campaign_id__in=ids)
    judged = sums_by(
        tallies.filter(annotator=annotator),
        "campaign_id",
        today=Sum("judged", filter=Q(day=today)),
        total=Sum("judged"),
    )
    # Queue answers on gold (today, in all): progress counts them as judgements.
    gold = sums_by(
        GoldJudgement.objects.filter(
            gold_pair__campaign_id__in=[c.pk for c in campaigns if c.settings.gold.rate > 0],
            annotator=annotator,
            purpose=GoldJudgement.Purpose.QUEUE,
        ),
        "gold_pair__campaign_id",
        today=Count("pk", filter=Q(created_at__gte=datetime.combine(today, time.min, tzinfo=UTC))),
        total=Count("pk"),
    )
    totals = sums_by(
        CampaignTally.objects.filter(campaign_id__in=ids),
        "campaign_id",
        pairs=Sum("pairs"),
        left=Sum("labels_left"),
    )
    # Labels still needed on pairs (not held) the annotator judged: read from their own
    # judgements, so the cost grows with their work, not with the campaigns' size.
    mine = sums_by(
        Judgement.objects.filter(
            pair_state.servable("pair__", once_leases_end=True),
            annotator=annotator,
            undone_at__isnull=True,
            pair__campaign_id__in=ids,
        ),
        "pair__campaign_id",
        left=Sum("pair__needed"),
    )
    budgets = {c.pk: b for c in campaigns if (b := c.settings.judging.budget) is not None}
    spent = sums_by(tallies, "campaign_id", n=Sum("judged"))
    found = []
    for campaign in campaigns:
        pairs, left = totals.get(campaign.pk, (0, 0))
        shown = queue.shown_progress(
            judged.get(campaign.pk, (0, 0)),
            gold.get(campaign.pk, (0, 0)),
            pairs,
            left,
            spent.get(campaign.pk, (0,))[0],
            queue.steady(campaign),
        )
        found.append(
            CampaignProgress(
                campaign_id=campaign.pk,
                name=campaign.name,
                dataset=campaign.dataset.name,
                status=campaign.status,
                judged_today=shown.judged_today,
                judged_total=shown.judged_total,
                labels_left=shown.labels_left,
                pairs=shown.pairs,
                left_for_me=max(left - mine.get(campaign.pk, (0,))[0], 0),
                labels_needed=left,
                budget=budgets.get(campaign.pk),
                labels_spent=spent.get(campaign.pk, (0,))[0] if campaign.pk in budgets else None,
                labels_done=shown.labels_given,
                needed_now=not queue.steady(campaign),
            )
        )
    states = campaign_states(campaigns, annotator, found, now)
    return tuple(replace(item, state=states[item.campaign_id]) for item in found)


def work_first(progress: Sequence[CampaignProgress]) -> tuple[CampaignProgress, ...]:
    """Campaigns the annotator may judge now first, then those they may not, those done for
    them, then finished ones; the given order within each."""
    return tuple(
        sorted(
            progress,
            key=lambda item: (
                item.state is not None and not item.state.can_judge,
                item.finished,
                item.nothing_for_me,
            ),
        )
    )


def judging_campaigns():
    """The campaigns an annotator's home lists: active and paused ones, not closed ones."""
    return Campaign.objects.filter(
        status__in=(Campaign.Status.ACTIVE, Campaign.Status.PAUSED)
    ).select_related("dataset")
