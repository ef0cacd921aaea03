"""The demo campaign: the demo world's four runs pooled, part judged by simulated annotators.

Pooling runs of different quality finds positives some miss (FIRE, Table 3); two simulated
annotators (5% error) pre-fill part of it so agreement figures exist at once, and it is
resolved into its label set. ``manage.py demo_campaign`` and its job both call
:func:`create_demo_campaign`.
"""

from collections.abc import Callable
from dataclasses import dataclass

from annotation.campaign_read.overview import campaign_label_sets
from annotation.campaign_read.resolution import resolve_campaign
from annotation.campaigns.service import CampaignError, CampaignSpec, create_campaign
from annotation.models import Campaign, Judgement
from annotation.simulation.live import simulate
from retrieval.datasets.demo.runs import DEMO_MODELS
from retrieval.models import Dataset, Run

DEMO_CAMPAIGN = "demo-campaign"
DEMO_RUNS = DEMO_MODELS
ANNOTATORS = 2
"""Simulated annotators who pre-fill the demo campaign."""


@dataclass(frozen=True)
class DemoCampaign:
    """What :func:`create_demo_campaign` made or found made (``done``: the steps this call did)."""

    campaign: Campaign
    runs: tuple[str, ...]
    labels: int
    annotators: int
    label_set: str
    positives: int
    done: tuple[str, ...] = ()


def create_demo_campaign(
    dataset: Dataset,
    *,
    name: str = DEMO_CAMPAIGN,
    depth: int = 10,
    fill: float = 0.6,
    error_rate: float = 0.05,
    seed: int = 0,
    say: Callable[[str, int | None], object] = lambda text, total=None: None,
    advance: Callable[[int], object] | None = None,
) -> DemoCampaign:
    """Pool the demo runs at ``depth`` into campaign ``name``, pre-fill ``fill`` of its labels
    by two simulated annotators and resolve it (CampaignError when a demo run is missing).
    Each step done already is skipped, so retrying a job that failed half-way finishes it."""
    done = []
    campaign = Campaign.objects.filter(name=name).first()
    if campaign is not None and campaign.dataset_id != dataset.pk:
        raise CampaignError(
            f"campaign {name!r} exists on another dataset; choose another name for the demo"
        )
    if campaign is None:
        campaign = _pool(dataset, name, depth, seed, say)
        done.append("pooled")
    # Labels given so far, and those the pairs still need: what the pool asked for in all.
    given = live_labels(campaign)
    wanted = int((given + sum(campaign.pairs.values_list("needed", flat=True))) * fill)
    if given < wanted:
        say(f"two simulated annotators pre-fill {wanted - given} of {wanted} labels", wanted)
        if advance and given:
            advance(given)
        simulated = simulate(
            campaign, annotators=ANNOTATORS, error_rate=error_rate, seed=seed,
            max_judgements=wanted - given, progress=advance,
        )  # fmt: skip
        if simulated.judgements:
            done.append("pre-filled")
    label_set = campaign_label_sets(campaign).last()
    if label_set is None or "pre-filled" in done:
        say("resolving the labels into a label set", None)
        label_set = resolve_campaign(campaign)
        done.append("resolved")
    return DemoCampaign(
        campaign=campaign,
        runs=DEMO_RUNS,
        labels=live_labels(campaign),
        annotators=ANNOTATORS,
        label_set=label_set.name,
        positives=label_set.relevant_count,
        done=tuple(done),
    )


def _pool(dataset: Dataset, name: str, depth: int, seed: int, say) -> Campaign:
    found = {run.name: run for run in Run.objects.filter(dataset=dataset, name__in=DEMO_RUNS)}
    missing = [name for name in DEMO_RUNS if name not in found]
    if missing:
        raise CampaignError(
            f"dataset {dataset.name!r} lacks the demo runs {', '.join(missing)}; "
            "they are built by `manage.py demo` (or the jobs `make run` starts)"
        )
    say(f"pooling {', '.join(DEMO_RUNS)} at depth {depth}", None)
    runs = [found[run] for run in DEMO_RUNS]
    return create_campaign(dataset, runs, CampaignSpec(name=name, depth=depth, seed=seed))


def live_labels(campaign: Campaign) -> int:
    """Live labels in the campaign."""
    return Judgement.objects.filter(pair__campaign=campaign, undone_at__isnull=True).count()
