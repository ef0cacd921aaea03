"""The demo campaign: the demo world's four runs pooled, part judged by simulated annotators.

Pooling runs that differ in quality finds positives some of them miss (FIRE, Table 3); two
simulated annotators (error rate 5%) pre-fill part of it, so agreement figures exist at
once and pairs are still left for people to judge, and the campaign is resolved into its
label set. ``manage.py demo_campaign`` and the ``demo_campaign`` job (which ``make run``
defers until the trained models' runs exist) both call :func:`create_demo_campaign`.
"""

from collections.abc import Callable
from dataclasses import dataclass

from annotation.campaign_read.resolution import resolve_campaign
from annotation.models import Campaign
from annotation.services.campaigns import CampaignError, CampaignSpec, create_campaign
from annotation.services.simulation import simulate
from retrieval.models import Dataset, Run
from retrieval.services.demo_models import DEMO_MODELS

DEMO_CAMPAIGN = "demo-campaign"
DEMO_RUNS = DEMO_MODELS


@dataclass(frozen=True)
class DemoCampaign:
    """What :func:`create_demo_campaign` made."""

    campaign: Campaign
    runs: tuple[str, ...]
    labels: int
    annotators: int
    label_set: str
    positives: int


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
    by two simulated annotators and resolve it. CampaignError when a demo run is missing.
    ``say(step, total)`` names each step, ``advance(1)`` counts each simulated label."""
    found = {run.name: run for run in Run.objects.filter(dataset=dataset, name__in=DEMO_RUNS)}
    missing = [name for name in DEMO_RUNS if name not in found]
    if missing:
        raise CampaignError(
            f"dataset {dataset.name!r} lacks the demo runs {', '.join(missing)}; "
            "they are built by `manage.py demo` (or the jobs `make run` starts)"
        )
    runs = [found[run] for run in DEMO_RUNS]
    say(f"pooling {', '.join(DEMO_RUNS)} at depth {depth}", None)
    campaign = create_campaign(dataset, runs, CampaignSpec(name=name, depth=depth, seed=seed))
    labels = sum(campaign.pairs.values_list("needed", flat=True))
    say(
        f"two simulated annotators pre-fill {int(labels * fill)} of {labels} labels",
        int(labels * fill),
    )
    result = simulate(
        campaign,
        annotators=2,
        error_rate=error_rate,
        seed=seed,
        max_judgements=int(labels * fill),
        progress=advance,
    )
    say("resolving the labels into a label set", None)
    label_set = resolve_campaign(campaign)
    return DemoCampaign(
        campaign=campaign,
        runs=DEMO_RUNS,
        labels=result.judgements,
        annotators=result.annotators,
        label_set=label_set.name,
        positives=label_set.relevant_count,
    )
