"""A campaign's live figures (agreement, annotator scores, judging status, proxies), computed
by a job and stored with a fingerprint of the label state (:func:`live_state`); a request
computes one only when none is stored, or when it is stale and took under
:data:`INLINE_SECONDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Count, Max, Q, Sum

from annotation.campaign_read import figures_due
from annotation.campaign_read.reporting import campaign_proxy_report, campaign_report
from annotation.judging import statements
from annotation.models import (
    AnnotatorStanding,
    AnnotatorTally,
    Campaign,
    CampaignTally,
    GoldJudgement,
    Pair,
    PolicyFit,
)
from annotation.ordering import settled
from annotation.people.scores import campaign_scores
from jobs import figures

VERSION = 3
"""Bump when what a live figure computes changes, so stored ones are redone."""
INLINE_SECONDS = 0.25
"""A stale figure that took less than this is computed again in the request."""

SCORES, JUDGING, PROXIES, AGREEMENT = figures_due.KINDS
COMPUTE: dict[str, Callable[[Campaign], object]] = {
    SCORES: campaign_scores,
    JUDGING: settled.judging_status,
    PROXIES: lambda campaign: campaign_proxy_report(campaign, cache_only=True),
    AGREEMENT: campaign_report,  # last: the one that paces the refreshes
}


@dataclass(frozen=True)
class LiveState:
    """What a campaign's live figures are computed from, in a few aggregate queries."""

    labels: int
    tally_rows: int
    labels_left: int
    gold_answers: int
    last_gold_answer: int
    adjudicated: int
    standings: tuple
    fitted_at: object
    proxy_files: tuple = ()
    """The proxy cache's matrices (a newly cached proxy must redo the proxies' agreement)."""

    @property
    def inputs(self) -> str:
        return figures.fingerprint(VERSION, self)


def live_state(campaign: Campaign) -> LiveState:
    tallies = AnnotatorTally.objects.filter(campaign=campaign).aggregate(
        n=Sum("judged"), rows=Count("pk")
    )
    left = CampaignTally.objects.filter(campaign=campaign).aggregate(n=Sum("labels_left"))
    gold = GoldJudgement._base_manager.filter(gold_pair__campaign=campaign).aggregate(
        n=Count("pk"), last=Max("pk")
    )
    adjudicated = Pair.objects.filter(campaign=campaign).filter(~Q(adjudicated="")).count()
    standings = AnnotatorStanding.objects.filter(campaign=campaign).aggregate(
        paused=Count("paused_at"),
        last_pause=Max("paused_at"),
        discounted=Sum("discounted_labels"),
    )
    fit = PolicyFit.objects.filter(campaign=campaign).values_list("fitted_at", flat=True).first()
    # Imported here: the proxies' service pulls in SciPy, which a page not showing them skips.
    from retrieval.proxies.service import cache_files

    return LiveState(
        labels=int(tallies["n"] or 0),
        tally_rows=int(tallies["rows"] or 0),
        labels_left=int(left["n"] or 0),
        gold_answers=int(gold["n"] or 0),
        last_gold_answer=int(gold["last"] or 0),
        adjudicated=adjudicated,
        standings=tuple(sorted(standings.items())),
        fitted_at=fit,
        proxy_files=tuple(cache_files()),
    )


@dataclass(frozen=True)
class LiveFigures:
    """Live figures of one campaign as a page shows them, with the state they were read at."""

    state: LiveState
    figures: dict[str, figures.Figure]

    def __getitem__(self, kind: str):
        return self.figures[kind].value

    @property
    def oldest(self) -> figures.Figure:
        """The figure computed longest ago (what the page's age line reports)."""
        return min(self.figures.values(), key=lambda figure: figure.computed_at)

    @property
    def current(self) -> bool:
        return all(figure.current for figure in self.figures.values())


def live_figures(campaign: Campaign, kinds: tuple[str, ...] = tuple(COMPUTE)) -> LiveFigures:
    """The ``kinds`` of the campaign's live figures, read with one state: as stored (one
    read), each missing or cheap stale one computed now."""
    state = live_state(campaign)
    subject = figures_due.subject(campaign.pk)
    found = figures.stored_many(tuple(kinds), subject, state.inputs)
    for kind, figure in found.items():
        if figure is None or (not figure.current and figure.seconds < INLINE_SECONDS):
            found[kind] = figures.store(
                kind, subject, state.inputs, lambda k=kind: COMPUTE[k](campaign)
            )
    return LiveFigures(state, found)


def live_figure(campaign: Campaign, kind: str) -> figures.Figure:
    """The campaign's stored ``kind`` figure (see the module for when it is computed here)."""
    return live_figures(campaign, (kind,)).figures[kind]


def refresh(campaign: Campaign) -> dict:
    """Compute and store every live figure now (the ``campaign-figures`` job); seconds each."""
    took = {}
    with statements.streamed_reads():  # the server's scans paced by this job's reading
        inputs = live_state(campaign).inputs
        subject = figures_due.subject(campaign.pk)
        for kind, compute in COMPUTE.items():
            figure = figures.store(kind, subject, inputs, lambda c=compute: c(campaign))
            took[kind] = round(figure.seconds, 3)
    return {"campaign": campaign.name, "seconds": took}
