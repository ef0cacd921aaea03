"""A campaign's life cycle: opened by pooling, paused, resumed and closed; what may change
once it is pooled; and whether its gold pairs let its qualification run.

Statuses move only as :data:`TRANSITIONS` allows: an active campaign may be paused or
closed, a paused one resumed or closed, and a closed one is final (its labels stay for
resolution and export, but nothing is served or accepted again). The page, the admin and
the ``create_campaign`` command all go through :func:`change_status` and :func:`open_campaign`.

A campaign that requires qualification serves each annotator a balanced training set
(:func:`annotation.people.quality.training_split`); with fewer gold pairs of either label the
attempt could not be balanced, and with none annotators waited forever. So such a campaign
is never active with too few gold pairs: created with a gold file that is short it is
refused; created without one it starts paused, and resuming it (or turning qualification
on while it is active) is refused until imported or promoted gold makes up the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from django.db import transaction
from django.db.models import Count

from annotation.campaigns.service import create_campaign
from annotation.campaigns.settings import CampaignSettings, GoldSettings
from annotation.campaigns.spec import CampaignSpec, spec_errors
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
    """Why ``balance`` cannot serve the qualification ``settings`` ask for (None: it can, or
    no qualification is required), with what to do about it unless ``advice`` is false."""
    if not settings.qualification:
        return None
    relevant, irrelevant = quality.training_split(settings.training_pairs)
    if balance.relevant >= relevant and balance.irrelevant >= irrelevant:
        return None
    return (
        f"qualification needs {settings.training_pairs} gold pairs, {relevant} relevant and "
        f"{irrelevant} irrelevant; this campaign has {balance.relevant} relevant and "
        f"{balance.irrelevant} irrelevant"
        + (
            ": import a gold file or promote decided pairs, or ask for fewer training pairs"
            if advice
            else ""
        )
    )


def check_qualification(campaign: Campaign, settings: GoldSettings | None = None) -> None:
    """Refuse (LifecycleError) when the campaign's gold cannot serve its qualification."""
    problem = qualification_shortfall(settings or campaign.settings.gold, gold_balance(campaign))
    if problem:
        raise LifecycleError(problem)


def check_transition(campaign: Campaign, status: str) -> None:
    """Refuse (LifecycleError) a move :data:`TRANSITIONS` does not allow, and resuming a
    campaign whose gold cannot serve its qualification; writes nothing."""
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
    """Move ``campaign`` to ``status`` as :data:`TRANSITIONS` allows (the row locked);
    resuming a campaign whose gold cannot serve its qualification is refused."""
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    check_transition(locked, status)
    locked.status = status
    locked.save(update_fields=["status"])
    campaign.status = status
    return locked


@dataclass(frozen=True)
class GoldUpload:
    """A gold file as a campaign's creation receives it: where the server reads it, and the
    name its errors give (the uploader's own)."""

    path: Path
    shown: str


def check_gold_file(dataset: Dataset, upload: GoldUpload, spec: CampaignSpec) -> gold.GoldRows:
    """Read a gold file for a campaign about to be made on ``dataset`` (writing nothing):
    FormatError for a bad file, LifecycleError when it cannot serve the qualification."""
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
) -> Campaign:
    """Pool a new campaign and import its gold file, all or nothing.

    With a gold file too short for the qualification the whole campaign is refused; without
    one, a campaign that requires qualification starts paused (resume it once it has gold).
    """
    campaign = create_campaign(dataset, runs, spec, user)
    if gold_file is not None:  # read once: checked, then written
        gold.write_gold_rows(campaign, check_gold_file(dataset, gold_file, spec), user=user)
    if qualification_shortfall(spec.settings.gold, gold_balance(campaign)):
        campaign.status = Status.PAUSED
        campaign.save(update_fields=["status"])
    return campaign


FIXED = {
    "depth": "depth",
    "query_sample": "queries",
    "seed": "seed",
    "second_label_rate": "second_label_rate",
    "max_labels": "max_labels",
    "extends": "extends",
}
"""Spec fields pooling used (which pairs, which get a second label, the policy's cap), by
the form field that names them: fixed once pooled."""


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
        name=campaign.name,
        depth=campaign.depth,
        query_sample=campaign.query_sample,
        seed=campaign.seed,
        second_label_rate=campaign.second_label_rate,
        max_labels=campaign.max_labels,
        lease_seconds=campaign.lease_seconds,
        guidelines=campaign.guidelines,
        settings=campaign.settings,
        extends=extends,
    )


def form_values(spec: CampaignSpec) -> dict:
    """The campaign form's values for ``spec`` (the inverse of ``CampaignSpec.from_values``)."""
    settings = spec.settings
    return {
        "name": spec.name,
        "depth": spec.depth,
        "queries": spec.query_sample,
        "seed": spec.seed,
        "second_label_rate": spec.second_label_rate,
        "max_labels": spec.max_labels,
        "lease_seconds": spec.lease_seconds,
        "guidelines": spec.guidelines,
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
    }


def fixed_changes(campaign: Campaign, spec: CampaignSpec) -> list[str]:
    """The form fields of ``spec`` that differ from the pooled campaign's but may not."""
    now = current_spec(campaign)
    changed = [field for name, field in FIXED.items() if getattr(spec, name) != getattr(now, name)]
    if spec.settings.judging.strategy != now.settings.judging.strategy:
        changed.append("judging_order")
    asked, pooled = spec.settings.label_policy, now.settings.label_policy
    changed += [
        field
        for name, field in FIXED_POLICY.items()
        if getattr(asked, name) != getattr(pooled, name)
    ]
    return changed


FIXED_POLICY = {"name": "policy", "confidence": "confidence"}
"""The label policy's settings, by the form field that names them: fixed once pooled (the
pairs' needed labels were computed under them)."""

FIXED_FIELDS = (*FIXED.values(), "judging_order", *FIXED_POLICY.values())
"""Every form field :func:`fixed_changes` refuses to change once pooled: the edit page shows
them disabled (their posted values ignored, the campaign's own kept)."""


@transaction.atomic
def edit_campaign(campaign: Campaign, spec: CampaignSpec) -> Campaign:
    """Change what may change once a campaign is pooled: its name, guidelines, lease, label
    budget, gold rate, qualification, speed floor and role underlining.

    What decided the pool (depth, queries, seed, second-label rate, the label cap, the
    label policy and its confidence, the judging order, the label set it completes) is refused with the fields named; so is
    turning qualification on (or asking more training pairs) while the campaign is active
    and its gold is short.
    """
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    fixed = fixed_changes(locked, spec)
    if fixed:
        raise LifecycleError(
            f"{', '.join(fixed)}: fixed once the campaign is pooled (they decided its pairs "
            "and how many labels each needs); make a new campaign to change them"
        )
    errors = {k: v for k, v in spec_errors(spec).items() if k not in FIXED}
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
    """What the campaign page offers an admin: the status and the moves it allows, the
    gold pairs by label and what qualification still lacks, the decided pairs that are not
    gold yet, and the pairs still pending (what closing leaves unjudged)."""

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
