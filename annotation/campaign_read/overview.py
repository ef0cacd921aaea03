"""What the campaigns table (three grouped queries whatever the number of campaigns) and a
campaign's own page show, from the services that own each figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotation.active import reading as active_reading
from annotation.campaign_read import live_figures
from annotation.campaign_read.reporting import CampaignAgreement
from annotation.campaign_read.resolution import extended_label_set
from annotation.campaigns.settings import (
    DEFAULT_HALF_WIDTH,
    DEFAULT_SETTLE,
    GoldSettings,
    JudgingSettings,
    LabelPolicy,
)
from annotation.judging import pair_state
from annotation.models import AnnotatorTally, Campaign, CampaignTally, Escalation, Pair
from annotation.ordering import settle_width
from annotation.ordering.settled import JudgingStatus
from retrieval.models import BROWSER_READY_STATES, LabelSet, Video


@dataclass(frozen=True)
class StatusCounts:
    """A campaign's pairs per status (FIRE Table 2's columns)."""

    pending: int = 0
    relevant: int = 0
    irrelevant: int = 0
    disagreement: int = 0

    @property
    def pairs(self) -> int:
        return self.pending + self.relevant + self.irrelevant + self.disagreement


@dataclass(frozen=True)
class CampaignRow:
    """One row of the campaigns table."""

    campaign: Campaign
    counts: StatusCounts
    open_escalations: int
    label_set: LabelSet | None


def campaign_label_sets(campaign: Campaign | None = None):
    """Label sets resolved from campaigns (or from ``campaign``), oldest first, no arrays."""
    sets = LabelSet.objects.filter(source=LabelSet.Source.CAMPAIGN).defer("arrays")
    if campaign is not None:
        sets = sets.filter(dataset_id=campaign.dataset_id, metadata__campaign_id=campaign.pk)
    return sets.select_related("dataset").order_by("created_at", "pk")


def campaign_rows(
    campaigns: Iterable[Campaign], ids: list[int] | None = None, label_sets=None
) -> list[CampaignRow]:
    """The campaigns table: three grouped queries for every campaign listed (counting only the
    pairs of ``ids`` when given, each campaign's latest of ``label_sets``, default all)."""
    pairs = Pair.objects.order_by()
    escalations = Escalation.objects.filter(resolved_at__isnull=True).order_by()
    if ids is not None:
        pairs = pairs.filter(campaign_id__in=ids)
        escalations = escalations.filter(pair__campaign_id__in=ids)
    counts: dict[int, dict[str, int]] = {}
    by_status = pairs.values_list("campaign_id", "status").annotate(n=Count("pk"))
    for campaign_id, status, n in by_status:
        counts.setdefault(campaign_id, {})[status] = n
    open_escalations = dict(escalations.values_list("pair__campaign_id").annotate(n=Count("pk")))
    label_sets = {
        label_set.metadata.get("campaign_id"): label_set
        for label_set in (campaign_label_sets() if label_sets is None else label_sets)
    }
    return [
        CampaignRow(
            campaign=campaign,
            counts=StatusCounts(**counts.get(campaign.pk, {})),
            open_escalations=open_escalations.get(campaign.pk, 0),
            label_set=label_sets.get(campaign.pk),
        )
        for campaign in campaigns
    ]


@dataclass(frozen=True)
class CampaignFacts:
    """What the campaign page shows of how a campaign was made."""

    dataset: str
    runs: tuple[str, ...]
    depth: int
    query_sample: int | None
    seed: int
    second_label_rate: float
    max_labels: int
    lease_seconds: int
    judging: JudgingSettings
    gold: GoldSettings
    status: str
    created_at: datetime
    created_by: str | None
    extends: LabelSet | None = None
    """The label set the campaign completes (its resolution makes that set's next version)."""
    label_policy: LabelPolicy = LabelPolicy()
    settle: tuple[str, ...] = DEFAULT_SETTLE
    """The scores judging must settle, to ``half_width`` points."""
    half_width: float = DEFAULT_HALF_WIDTH


@dataclass(frozen=True)
class LabelCounts:
    """A campaign's live labels today (UTC) and in all, and the labels its pairs not held still
    need, from the triggers' running totals (exact at the request)."""

    today: int
    in_all: int
    still_needed: int


def label_counts(campaign: Campaign, now: datetime | None = None) -> LabelCounts:
    """The campaign's :class:`LabelCounts` (two aggregate queries over its tally rows)."""
    today = (now or timezone.now()).astimezone(UTC).date()
    judged = AnnotatorTally.objects.filter(campaign=campaign).aggregate(
        today=Sum("judged", filter=Q(day=today)), in_all=Sum("judged")
    )
    left = CampaignTally.objects.filter(campaign=campaign).aggregate(n=Sum("labels_left"))["n"]
    return LabelCounts(int(judged["today"] or 0), int(judged["in_all"] or 0), int(left or 0))


@dataclass(frozen=True)
class CampaignPage:
    """Everything a campaign's page shows; ``agreement`` is the agreement page's report."""

    row: CampaignRow
    settings: CampaignFacts
    counts: LabelCounts
    """Read live with the page, not from the stored figures."""
    judging: JudgingStatus
    agreement: CampaignAgreement
    waiting_for_admin: int
    label_sets: tuple[LabelSet, ...]
    live: live_figures.LiveFigures
    waiting_for_media: int = 0
    """Pairs not served yet because their video's browser copy or segment clip is not made."""
    settle: settle_width.SettledToWidth | None = None
    """Per run, each score the campaign must settle against its target half-width."""
    active: active_reading.StageStatus | None = None
    """The campaign's active stages (None before the first)."""

    @property
    def campaign(self) -> Campaign:
        return self.row.campaign


def campaign_facts(campaign: Campaign) -> CampaignFacts:
    """The campaign's settings (``campaign`` with its dataset and creator selected)."""
    pool = ("depth", "query_sample", "seed", "second_label_rate", "max_labels", "lease_seconds")
    return CampaignFacts(
        **{name: getattr(campaign, name) for name in pool},
        status=campaign.status,
        dataset=campaign.dataset.name,
        runs=tuple(campaign.run_names()),
        judging=campaign.settings.judging,
        gold=campaign.settings.gold,
        created_at=campaign.created_at,
        label_policy=campaign.settings.label_policy,
        settle=campaign.settings.settle,
        half_width=campaign.settings.half_width,
        created_by=campaign.created_by.get_username() if campaign.created_by else None,
        extends=extended_label_set(campaign),
    )


def campaign_page(campaign: Campaign, now: datetime | None = None) -> CampaignPage:
    """The figures of one campaign's page (``campaign`` with its dataset selected)."""
    label_sets = tuple(campaign_label_sets(campaign))
    row = campaign_rows([campaign], [campaign.pk], label_sets)[0]
    live = live_figures.live_figures(campaign, (live_figures.JUDGING, live_figures.AGREEMENT))
    judging, chosen = live[live_figures.JUDGING], campaign.settings
    return CampaignPage(
        row=row,
        settings=campaign_facts(campaign),
        counts=label_counts(campaign, now),
        judging=judging,
        agreement=live[live_figures.AGREEMENT],
        live=live,
        waiting_for_admin=Pair.objects.filter(campaign=campaign)
        .filter(pair_state.waiting_for_admin())
        .count(),
        label_sets=label_sets,
        waiting_for_media=waiting_for_media(campaign),
        settle=settle_width.from_exactness(
            judging.runs,
            chosen.settle,
            chosen.half_width,
            active_reading.active_spreads(campaign),
            judging.decided_share,
        ),
        active=active_reading.stage_status(campaign),
    )


def waiting_for_media(campaign: Campaign) -> int:
    """Pairs of ``campaign`` whose video a browser cannot be given yet (the queue skips them);
    pairs are counted only when some video is waiting."""
    waiting = Video.objects.filter(dataset_id=campaign.dataset_id).exclude(
        media_state__in=BROWSER_READY_STATES
    )
    if not waiting.exists():
        return 0
    return Pair.objects.filter(campaign=campaign, video__in=waiting).count()
