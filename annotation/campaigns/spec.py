"""What an admin asks for when creating a campaign (:class:`CampaignSpec`), and the bounds
that the form, the pool job and ``create_campaign`` all check with :func:`spec_errors`, so
that a value one accepts is never refused later by another. Checks that need the database
are :func:`annotation.campaigns.service.check_spec`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from annotation.campaigns.pooling import MAX_DEPTH
from annotation.campaigns.settings import (
    DEFAULT_FLOOR_SECONDS,
    DEFAULT_GOLD_RATE,
    DEFAULT_HALF_WIDTH,
    DEFAULT_SETTLE,
    DEFAULT_STRATEGY,
    DEFAULT_THRESHOLD,
    DEFAULT_TRAINING_PAIRS,
    CampaignSettings,
    GoldSettings,
    JudgingSettings,
    LabelPolicy,
    settle_metrics,
)
from annotation.policy import rules as policy
from config.text_rule import text_problem
from retrieval.datasets.names import NAME_MAX_LENGTH, InvalidName, check_name

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
GOLD_RATE_MAX = 0.5
"""Highest gold rate a new campaign may ask for (a stored one may be up to 1)."""
QUALIFICATION_PAIRS_MAX = 500
SPEED_FLOOR_MAX = 600.0
"""Highest speed floor a form offers (seconds per judgement; the settings allow a day)."""
GUIDELINES_MAX = 20_000
"""Longest guidelines a form takes (characters)."""


@dataclass(frozen=True)
class CampaignSpec:
    """A campaign as asked for: its columns, its settings (checked when built) and the name
    of the label set it completes (FIRE §3.1 policy: a second label for a sample)."""

    name: str
    depth: int = DEFAULT_DEPTH
    query_sample: int | None = None
    seed: int = 0
    second_label_rate: float = policy.DEFAULT_SECOND_LABEL_RATE
    """FIRE's second-label sample; 0 under the adaptive policy (``from_values`` sets it)."""
    max_labels: int = policy.DEFAULT_CAP
    """The cap on labels per pair (``from_values``: :data:`policy.DEFAULT_ADAPTIVE_CAP` under
    the adaptive policy)."""
    lease_seconds: int = DEFAULT_LEASE_SECONDS
    guidelines: str | None = None
    settings: CampaignSettings = field(default_factory=CampaignSettings)
    """Everything else (its ``extends`` is set when the campaign is made, from :attr:`extends`)."""
    extends: str | None = None
    """The name of a label set this campaign completes: its pairs are not pooled again, and
    resolving makes a new version of it."""

    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> CampaignSpec:
        """The spec from flat values named as the campaign form's fields (missing or empty:
        the default); values out of the settings' bounds raise :class:`SettingsError`."""
        given = {name: value for name, value in values.items() if value not in (None, "")}
        qualification = int(given.get("qualification", 0))
        gold = GoldSettings(
            rate=given.get("gold_rate", DEFAULT_GOLD_RATE),
            qualification=qualification > 0,
            training_pairs=qualification or DEFAULT_TRAINING_PAIRS,
            threshold=given.get("qualification_threshold", DEFAULT_THRESHOLD),
            floor_seconds=given.get("speed_floor", DEFAULT_FLOOR_SECONDS),
        )
        judging = JudgingSettings(
            strategy=given.get("judging_order", DEFAULT_STRATEGY), budget=given.get("budget")
        )
        label_policy = LabelPolicy(
            name=given.get("policy", policy.FIRE),
            confidence=given.get("confidence", policy.DEFAULT_CONFIDENCE),
        )
        columns = {name: given[key] for name, key in COLUMN_VALUES.items() if key in given}
        if label_policy.adaptive:
            # No second-label sample: the posterior asks for second labels where needed.
            columns["second_label_rate"] = 0.0
            columns.setdefault("max_labels", policy.DEFAULT_ADAPTIVE_CAP)
        return cls(
            **columns,
            settings=CampaignSettings(
                judging=judging,
                gold=gold,
                show_roles=bool(given.get("show_roles", True)),
                label_policy=label_policy,
                settle=settle_metrics("settle", given.get("settle", DEFAULT_SETTLE)),
                half_width=given.get("half_width", DEFAULT_HALF_WIDTH),
            ),
            extends=str(given["extends"]).strip() or None if "extends" in given else None,
        )


COLUMN_VALUES = {
    "name": "name",
    "depth": "depth",
    "query_sample": "queries",
    "seed": "seed",
    "second_label_rate": "second_label_rate",
    "max_labels": "max_labels",
    "lease_seconds": "lease_seconds",
    "guidelines": "guidelines",
}
"""Spec field -> the flat value that gives it (``queries`` is the form's name)."""


def spec_errors(spec: CampaignSpec) -> dict[str, str]:
    """Field name -> message for every setting out of bounds (empty when all are fine)."""
    errors: dict[str, str] = {}
    try:
        check_name(spec.name, "campaign")
    except InvalidName as exc:
        errors["name"] = str(exc)
    if spec.guidelines:
        problem = text_problem(spec.guidelines, GUIDELINES_MAX, lines=True)
        if problem is not None:
            errors["guidelines"] = f"the guidelines {problem}"
    integers = {
        "depth": (spec.depth, DEPTH),
        "seed": (spec.seed, SEED),
        "max_labels": (spec.max_labels, MAX_LABELS),
        "lease_seconds": (spec.lease_seconds, LEASE_SECONDS),
    }
    if spec.query_sample is not None:
        integers["query_sample"] = (spec.query_sample, QUERY_SAMPLE)
    for name, (value, bounds) in integers.items():
        if not bounds[0] <= value <= bounds[1]:
            errors[name] = f"must be between {bounds[0]} and {bounds[1]}"
    if not 0.0 <= spec.second_label_rate <= 1.0:  # also rejects NaN
        errors["second_label_rate"] = "must be between 0 and 1"
    label_policy = spec.settings.label_policy
    if label_policy.adaptive and spec.second_label_rate:
        errors["second_label_rate"] = (
            "must be 0 under the adaptive policy (it asks for second labels where needed)"
        )
    gold = spec.settings.gold
    if not gold.rate <= GOLD_RATE_MAX:
        errors["gold_rate"] = f"must be between 0 and {GOLD_RATE_MAX}"
    if gold.qualification and not gold.training_pairs <= QUALIFICATION_PAIRS_MAX:
        errors["qualification"] = f"must be between 0 and {QUALIFICATION_PAIRS_MAX}"
    return errors
