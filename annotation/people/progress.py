"""An annotator's own progress over every campaign listed on their home, in bulk.

The judging page shows one campaign's :func:`annotation.judging.queue.progress`; the
home lists many campaigns, so each total here is the one that function reads, for all of
them at once: one aggregate query per total (judged today and in all, gold answers, the
campaign's pairs and labels left, the labels left on pairs the annotator already judged,
labels spent against a budget), never a query per campaign. Both turn the totals into the
figures shown with one function, :func:`annotation.judging.queue.shown_progress`, so the
labels left agree with gold in the queue too. The counts come from the running tallies
the database's triggers keep (:class:`~annotation.models.AnnotatorTally`,
:class:`~annotation.models.CampaignTally`), as the judging page's do. Each campaign also
carries the annotator's state there (:mod:`annotation.people.state`, read by
:func:`annotation.people.state_service.campaign_states` in four queries more at
most), so the list says what the judging page says, "nothing free right now" included,
and offers judging only where it is possible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time

from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotation.judging import pair_state, queue
from annotation.models import (
    AnnotatorTally,
    Campaign,
    CampaignTally,
    GoldJudgement,
    Judgement,
)
from annotation.people.state import State
from annotation.people.state_service import campaign_states


@dataclass(frozen=True)
class CampaignProgress:
    """One campaign as one annotator sees it.

    ``judged_today``, ``judged_total``, ``labels_left`` and ``pairs`` are the judging
    page's, from the same function (:func:`annotation.judging.queue.shown_progress`: the
    annotator's gold answers count as judgements and as labels done). ``labels_needed`` is
    the campaign's own figure (labels the policy still needs over pairs not held), which
    says whether it is finished; ``left_for_me`` is the part of it on pairs the annotator
    has not judged (none of the rest can come to them: nobody labels a pair twice).
    ``budget`` and ``labels_spent`` are None without a label budget.
    """

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
    """Live labels in the campaign, everyone's, the annotator's gold answers counted in
    (``shown_progress``'s ``labels_given``, the judging API's; the progress bar's done part)."""
    needed_now: bool = False
    """The judging order or the label policy is adaptive: what is needed changes as labels
    come in, so both pages say "needed now" where they would say "left"."""
    state: State | None = None
    """The annotator's state here (:mod:`annotation.people.state`)."""

    @property
    def done_percent(self) -> int:
        """The campaign's share of labels given, of those given and still needed: the
        judging page's bar when it opens (labels given then, of those and ``labels_left``)."""
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


def _utc_day(now: datetime) -> date:
    return now.astimezone(UTC).date()


def _judged(ids: list[int], annotator, today: date) -> dict[int, tuple[int, int]]:
    """Campaign id -> (the annotator's live judgements today (UTC), in all)."""
    rows = (
        AnnotatorTally.objects.filter(campaign_id__in=ids, annotator=annotator)
        .order_by()
        .values("campaign_id")
        .annotate(today=Sum("judged", filter=Q(day=today)), total=Sum("judged"))
        .values_list("campaign_id", "today", "total")
    )
    return {campaign: (int(t or 0), int(n or 0)) for campaign, t, n in rows}


def _gold_answers(ids: list[int], annotator, today: date) -> dict[int, tuple[int, int]]:
    """Campaign id -> (queue answers on gold today, in all): progress counts them as
    judgements."""
    if not ids:
        return {}
    start = datetime.combine(today, time.min, tzinfo=UTC)
    rows = (
        GoldJudgement.objects.filter(
            gold_pair__campaign_id__in=ids,
            annotator=annotator,
            purpose=GoldJudgement.Purpose.QUEUE,
        )
        .order_by()
        .values("gold_pair__campaign_id")
        .annotate(today=Count("pk", filter=Q(created_at__gte=start)), total=Count("pk"))
        .values_list("gold_pair__campaign_id", "today", "total")
    )
    return {campaign: (int(t), int(n)) for campaign, t, n in rows}


def _totals(ids: list[int]) -> dict[int, tuple[int, int]]:
    """Campaign id -> (pairs not held, labels they still need), as
    :func:`annotation.judging.queue.campaign_totals` counts them."""
    rows = (
        CampaignTally.objects.filter(campaign_id__in=ids)
        .order_by()
        .values("campaign_id")
        .annotate(pairs=Sum("pairs"), left=Sum("labels_left"))
        .values_list("campaign_id", "pairs", "left")
    )
    return {campaign: (int(n or 0), int(left or 0)) for campaign, n, left in rows}


def _left_on_mine(ids: list[int], annotator) -> dict[int, int]:
    """Campaign id -> labels still needed on pairs (not held) the annotator has judged.

    Read from the annotator's own live judgements, so its cost grows with their work and
    not with the campaigns' size."""
    rows = (
        Judgement.objects.filter(
            pair_state.servable("pair__", once_leases_end=True),
            annotator=annotator,
            undone_at__isnull=True,
            pair__campaign_id__in=ids,
        )
        .order_by()
        .values("pair__campaign_id")
        .annotate(left=Sum("pair__needed"))
        .values_list("pair__campaign_id", "left")
    )
    return {campaign: int(left or 0) for campaign, left in rows}


def _spent(ids: list[int]) -> dict[int, int]:
    """Campaign id -> live labels, as :func:`annotation.ordering.priorities.labels_spent`."""
    if not ids:
        return {}
    rows = (
        AnnotatorTally.objects.filter(campaign_id__in=ids)
        .order_by()
        .values("campaign_id")
        .annotate(n=Sum("judged"))
        .values_list("campaign_id", "n")
    )
    return {campaign: int(n or 0) for campaign, n in rows}


def annotator_progress(
    campaigns: Sequence[Campaign], annotator, now: datetime | None = None
) -> tuple[CampaignProgress, ...]:
    """Each campaign's progress for ``annotator``, in the order given (campaigns with
    ``dataset`` selected, or one query more per campaign for its name)."""
    campaigns = list(campaigns)
    if not campaigns:
        return ()
    today = _utc_day(now or timezone.now())
    ids = [campaign.pk for campaign in campaigns]
    judged = _judged(ids, annotator, today)
    gold = _gold_answers([c.pk for c in campaigns if c.settings.gold.rate > 0], annotator, today)
    totals = _totals(ids)
    mine = _left_on_mine(ids, annotator)
    budgets = {c.pk: b for c in campaigns if (b := c.settings.judging.budget) is not None}
    spent = _spent(ids)
    found = []
    for campaign in campaigns:
        pairs, left = totals.get(campaign.pk, (0, 0))
        shown = queue.shown_progress(
            judged.get(campaign.pk, (0, 0)),
            gold.get(campaign.pk, (0, 0)),
            pairs,
            left,
            spent.get(campaign.pk, 0),
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
                left_for_me=max(left - mine.get(campaign.pk, 0), 0),
                labels_needed=left,
                budget=budgets.get(campaign.pk),
                labels_spent=spent.get(campaign.pk, 0) if campaign.pk in budgets else None,
                labels_done=shown.labels_given,
                needed_now=not queue.steady(campaign),
            )
        )
    states = campaign_states(campaigns, annotator, found, now)
    return tuple(replace(item, state=states[item.campaign_id]) for item in found)


def work_first(progress: Sequence[CampaignProgress]) -> tuple[CampaignProgress, ...]:
    """Campaigns the annotator may judge now first, then those where they may not (paused,
    waiting to retry qualification), those done for them, then finished ones; the given
    order within each."""
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
    """The campaigns an annotator's home lists: the active ones and the paused ones (whose
    state says they are paused, so nobody wonders where their work went); closed campaigns
    leave the list."""
    return Campaign.objects.filter(
        status__in=(Campaign.Status.ACTIVE, Campaign.Status.PAUSED)
    ).select_related("dataset")
