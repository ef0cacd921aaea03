"""A campaign's life cycle (opened by pooling, paused, resumed, closed as :data:`TRANSITIONS`
allows), what may change once it is pooled, and whether its gold can serve its
qualification: a campaign that requires a balanced training set is never active with too
few gold pairs (refused with a short gold file, started paused without one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from django.db import transaction
from django.db.models import Count

from annotation.campaigns.service import PooledRuns, create_campaign
from annotation.campaigns.settings import CampaignSettings, GoldSettings
from annotation.campaigns.spec import COLUMN_VALUES, CampaignSpec, spec_errors
from annotation.gold import service as gold
from annotation.models import Campaign, GoldPair, Judgement, Pair
from annotation.people import quality
from config.errors import UserError
from retrieval.models import Dataset, LabelSet, Run


class LifecycleError(UserError):
    """The campaign cannot change as asked; nothing was written."""


Status = Campaign.Status

TRANSITIONS: dict[str, frozenset[str]] = {
    Status.ACTIVE: frozenset({Status.PAUSED, Status.CLOSED}),
    Status.PAUSED: frozenset({Status.ACTIVE, Status.CLOSED}),
    Status.CLOSED: frozenset(),
}
"""Status -> the statuses it may move to (closed is final)."""

ACTIONS = {"pause": Status.PAUSED, "resume": Status.ACTIVE, "close": Status.CLOSED}
"""The page's buttons, by the status each asks for."""


@dataclass(frozen=True)
class GoldBalance:
    """A campaign's gold pairs by label."""

    relevant: int = 0
    irrelevant: int = 0

    @property
    def total(self) -> int:
        return self.relevant + self.irrelevant


def gold_balance(campaign: Campaign) -> GoldBalance:
    """The campaign's gold pairs, relevant and irrelevant (one grouped query)."""
    counts = dict(
        GoldPair.objects.filter(campaign=campaign)
        .order_by()
        .values_list("label")
        .annotate(n=Count("pk"))
    )
    relevant = counts.pop(Judgement.Label.RELEVANT, 0)
    return GoldBalance(relevant=relevant, irrelevant=sum(counts.values()))


def qualification_shortfall(
    settings: GoldSettings, balance: GoldBalance, *, advice: bool = True
) -> str | None:
    """Why ``balance`` cannot serve the qualification ``settings`` ask for (None: it can), with
    what to do about it unless ``advice`` is false."""
    if not settings.qualification:
        return None
    relevant, irrelevant = quality.training_split(settings.training_pairs)
    if balance.relevant >= relevant and balance.irrelevant >= irrelevant:
        return None
    problem = (
        f"qualification needs {settings.training_pairs} gold pairs, {relevant} relevant and "
        f"{irrelevant} irrelevant; this campaign has {balance.relevant} relevant and "
        f"{balance.irrelevant} irrelevant"
    )
    advise = ": import a gold file or promote decided pairs, or ask for fewer training pairs"
    return problem + advise if advice else problem


def check_qualification(campaign: Campaign, settings: GoldSettings | None = None) -> None:
    """Refuse (LifecycleError) when the campaign's gold cannot serve its qualification."""
    problem = qualification_shortfall(settings or campaign.settings.gold, gold_balance(campaign))
    if problem:
        raise LifecycleError(problem)


def check_transition(campaign: Campaign, status: str) -> None:
    """Refuse (LifecycleError) a move :data:`TRANSITIONS` does not allow, or resuming a
    campaign whose gold cannot serve its qualification."""
    if status not in TRANSITIONS:
        raise LifecycleError(f"unknown status {str(status)[:40]!r}")
    if status == campaign.status:
        raise LifecycleError(f"campaign {campaign.name!r} is {campaign.status} already")
    if status not in TRANSITIONS[campaign.status]:
        raise LifecycleError(
            f"campaign {campaign.name!r} is {campaign.status}; a closed campaign stays closed"
        )
    if status == Status.ACTIVE:
        check_qualification(campaign)


@transaction.atomic
def change_status(campaign: Campaign, status: str) -> Campaign:
    """Move ``campaign`` to ``status`` (the row locked) if :func:`check_transition` allows."""
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    check_transition(locked, status)
    locked.status = status
    locked.save(update_fields=["status"])
    campaign.status = status
    return locked


@dataclass(frozen=True)
class GoldUpload:
    """A gold file for a new campaign: where the server reads it, and the name errors give."""

    path: Path
    shown: str


def check_gold_file(dataset: Dataset, upload: GoldUpload, spec: CampaignSpec) -> gold.GoldRows:
    """Read a gold file for a campaign about to be made (writing nothing): FormatError for a
    bad file, LifecycleError when it cannot serve the qualification."""
    rows = gold.read_gold_rows(dataset, upload.path, shown=upload.shown)
    problem = qualification_shortfall(
        spec.settings.gold, GoldBalance(rows.relevant, rows.irrelevant), advice=False
    )
    if problem:
        raise LifecycleError(f"{upload.shown}: {problem}")
    return rows


@transaction.atomic
def open_campaign(
    dataset: Dataset,
    runs: Sequence[Run],
    spec: CampaignSpec,
    *,
    gold_file: GoldUpload | None = None,
    user=None,
    pool: PooledRuns | None = None,
) -> Campaign:
    """Pool a new campaign and import its gold file, all or nothing; without enough gold for
    its qualification it starts paused (``pool``: already checked, see ``create_campaign``)."""
    campaign = create_campaign(dataset, runs, spec, user, pool)
    if gold_file is not None:  # read once: checked, then written
        gold.write_gold_rows(campaign, check_gold_file(dataset, gold_file, spec), user=user)
    if qualification_shortfall(spec.settings.gold, gold_balance(campaign)):
        campaign.status = Status.PAUSED
        campaign.save(update_fields=["status"])
    return campaign


FIXED_FIELDS = (
    "depth",
    "queries",
    "seed",
    "second_label_rate",
    "max_labels",
    "extends",
    "judging_order",
    "policy",
    "confidence",
)
"""The campaign form's fields that pooling used, fixed once pooled (the edit page disables
them)."""


def current_spec(campaign: Campaign) -> CampaignSpec:
    """The spec that describes ``campaign`` as it is now (what its edit form starts from)."""
    extends = None
    if campaign.settings.extends is not None:
        extends = (
            LabelSet.objects.filter(pk=campaign.settings.extends, dataset_id=campaign.dataset_id)
            .values_list("name", flat=True)
            .first()
        )
    return CampaignSpec(
        **{name: getattr(campaign, name) for name in COLUMN_VALUES},
        settings=campaign.settings,
        extends=extends,
    )


def form_values(spec: CampaignSpec) -> dict:
    """The campaign form's values for ``spec`` (the inverse of ``CampaignSpec.from_values``)."""
    settings = spec.settings
    return {
        **{key: getattr(spec, name) for name, key in COLUMN_VALUES.items()},
        "show_roles": settings.show_roles,
        "judging_order": settings.judging.strategy,
        "budget": settings.judging.budget,
        "gold_rate": settings.gold.rate,
        "qualification": settings.gold.training_pairs if settings.gold.qualification else 0,
        "qualification_threshold": settings.gold.threshold,
        "speed_floor": settings.gold.floor_seconds,
        "extends": spec.extends or "",
        "policy": settings.label_policy.name,
        "confidence": settings.label_policy.confidence,
        "settle": list(settings.settle),
        "half_width": settings.half_width,
    }


@transaction.atomic
def edit_campaign(campaign: Campaign, spec: CampaignSpec) -> Campaign:
    """Change what may change once a campaign is pooled (name, guidelines, lease, budget, gold
    and speed settings, role underlining, the scores to settle and their half-width); a
    :data:`FIXED_FIELDS` change is refused with the fields named, and so is a qualification
    the gold of an active campaign cannot serve."""
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    wanted, pooled = form_values(spec), form_values(current_spec(locked))
    fixed = [name for name in FIXED_FIELDS if wanted[name] != pooled[name]]
    if fixed:
        raise LifecycleError(
            f"{', '.join(fixed)}: fixed once the campaign is pooled (they decided its pairs "
            "and how many labels each needs); make a new campaign to change them"
        )
    errors = {
        k: v for k, v in spec_errors(spec).items() if COLUMN_VALUES.get(k, k) not in FIXED_FIELDS
    }
    if errors:
        raise LifecycleError("; ".join(f"{field}: {message}" for field, message in errors.items()))
    if (
        spec.name != locked.name
        and Campaign._base_manager.filter(name=spec.name).exclude(pk=locked.pk).exists()
    ):
        raise LifecycleError(f"a campaign named {spec.name!r} already exists")
    old: CampaignSettings = locked.settings
    asked = spec.settings
    settings = replace(
        old,
        judging=replace(old.judging, budget=asked.judging.budget),
        gold=replace(
            old.gold,
            rate=asked.gold.rate,
            qualification=asked.gold.qualification,
            training_pairs=asked.gold.training_pairs
            if asked.gold.qualification
            else old.gold.training_pairs,
            threshold=asked.gold.threshold,
            floor_seconds=asked.gold.floor_seconds,
        ),
        show_roles=asked.show_roles,
        settle=asked.settle,
        half_width=asked.half_width,
    )
    if locked.status == Status.ACTIVE:
        check_qualification(locked, settings.gold)
    locked.name = spec.name
    locked.guidelines = spec.guidelines or locked.guidelines
    locked.lease_seconds = spec.lease_seconds
    locked.set_settings(settings, save=False)
    locked.save(update_fields=["name", "guidelines", "lease_seconds", "options"])
    return locked


@dataclass(frozen=True)
class LifecycleFacts:
    """What the campaign page offers an admin: the moves its status allows, its gold and what
    qualification lacks, the decided pairs not gold yet and the pairs still pending."""

    status: str
    actions: tuple[str, ...]
    gold: GoldBalance
    shortfall: str | None
    promotable: int
    pending: int


def facts(campaign: Campaign) -> LifecycleFacts:
    """The campaign's :class:`LifecycleFacts` (three queries)."""
    balance = gold_balance(campaign)
    allowed = TRANSITIONS[campaign.status]
    return LifecycleFacts(
        status=campaign.status,
        actions=tuple(action for action, status in ACTIONS.items() if status in allowed),
        gold=balance,
        shortfall=qualification_shortfall(campaign.settings.gold, balance),
        promotable=gold.promotable(campaign),
        pending=Pair.objects.filter(campaign=campaign, status=Pair.Status.PENDING).count(),
    )
