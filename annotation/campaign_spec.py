"""What an admin asks for when creating a campaign, and the bounds every entry point checks.

The admin form, the pool job and ``create_campaign`` all describe a campaign with
:class:`CampaignSpec` and check it with :func:`spec_errors`, so a value one of them accepts
is never rejected later by another (a form that took ``max_labels=1`` surfaced as a failed
job). Checks that need the database (run ownership, unique names) live in
:func:`annotation.services.campaigns.check_spec`.
"""

from dataclasses import dataclass

from annotation import policy
from annotation.judging_order import STRATEGIES
from annotation.pooling import MAX_DEPTH
from retrieval.names import NAME_MAX_LENGTH, InvalidName, check_name

NAME_LENGTH = NAME_MAX_LENGTH
"""Longest campaign name (the ``Campaign.name`` column), as for every named thing."""
DEPTH = (1, MAX_DEPTH)
QUERY_SAMPLE = (1, 10_000_000)
SEED = (0, 2**31 - 1)
MAX_LABELS = (2, 15)
LEASE_SECONDS = (10, 86_400)
"""From ten seconds to a day: a lease past the calendar's end broke every request."""
DEFAULT_LEASE_SECONDS = 300
DEFAULT_DEPTH = 10
BUDGET = (1, 1_000_000_000)
GOLD_RATE_MAX = 0.5
QUALIFICATION_PAIRS_MAX = 500
JUDGING_ORDERS = tuple(STRATEGIES)
"""The strategies of :mod:`annotation.judging_order`; ``depth`` is today's order."""


@dataclass(frozen=True)
class CampaignSpec:
    """A campaign's settings as asked for (FIRE §3.1 policy: a second label for a sample)."""

    name: str
    depth: int = DEFAULT_DEPTH
    query_sample: int | None = None
    seed: int = 0
    second_label_rate: float = policy.DEFAULT_SECOND_LABEL_RATE
    max_labels: int = policy.DEFAULT_CAP
    lease_seconds: int = DEFAULT_LEASE_SECONDS
    guidelines: str | None = None
    show_roles: bool = True
    """Underline the caption's semantic roles on the judging page (who, does what, ...)."""
    judging_order: str = "depth"
    """Which pair is served next (:mod:`annotation.judging_order`)."""
    budget: int | None = None
    """Labels after which judging stops (none: until nothing is needed)."""
    gold_rate: float = 0.05
    """Share of served tasks that are gold pairs (when the campaign has any)."""
    qualification: int = 0
    """Training pairs (from the gold pairs) an annotator judges before real work; 0: none."""
    qualification_threshold: float = 0.9
    """Accuracy on the training pairs that admits an annotator."""
    extends: str | None = None
    """A label set of the dataset this campaign completes: its pairs are not pooled again,
    and resolving the campaign makes a new version of it (judge only what is missing)."""


def _outside(value, bounds: tuple[int, int]) -> bool:
    return not (bounds[0] <= value <= bounds[1])


def spec_errors(spec: CampaignSpec) -> dict[str, str]:
    """Field name -> message for every setting out of bounds (empty when all are fine)."""
    errors: dict[str, str] = {}
    try:
        check_name(spec.name, "campaign")
    except InvalidName as exc:
        errors["name"] = str(exc)
    integers = {
        "depth": (spec.depth, DEPTH),
        "seed": (spec.seed, SEED),
        "max_labels": (spec.max_labels, MAX_LABELS),
        "lease_seconds": (spec.lease_seconds, LEASE_SECONDS),
    }
    if spec.query_sample is not None:
        integers["query_sample"] = (spec.query_sample, QUERY_SAMPLE)
    if spec.budget is not None:
        integers["budget"] = (spec.budget, BUDGET)
    for field, (value, bounds) in integers.items():
        if _outside(value, bounds):
            errors[field] = f"must be between {bounds[0]} and {bounds[1]}"
    if not 0.0 <= spec.second_label_rate <= 1.0:  # also rejects NaN
        errors["second_label_rate"] = "must be between 0 and 1"
    if not 0.0 <= spec.gold_rate <= GOLD_RATE_MAX:
        errors["gold_rate"] = f"must be between 0 and {GOLD_RATE_MAX}"
    if not 0 <= spec.qualification <= QUALIFICATION_PAIRS_MAX:
        errors["qualification"] = f"must be between 0 and {QUALIFICATION_PAIRS_MAX}"
    if not 0.0 < spec.qualification_threshold <= 1.0:
        errors["qualification_threshold"] = "must be above 0 and at most 1"
    if spec.judging_order not in JUDGING_ORDERS:
        errors["judging_order"] = f"must be one of {', '.join(JUDGING_ORDERS)}"
    return errors
