"""A campaign's settings beyond its columns as one typed, validated, frozen object
(:class:`CampaignSettings`), read from and written to ``Campaign.options`` only through
:meth:`~CampaignSettings.from_options` and :meth:`~CampaignSettings.to_options`, which check
every value and keep the stored JSON layout (defaults left out). Pure: no Django.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass, replace

import numpy as np

from annotation.campaigns.pooling import Pool
from annotation.ordering import orders as judging_order
from annotation.policy import rules as policy
from config.errors import UserError

DEFAULT_STRATEGY = "depth"
"""The judging order of a campaign that names none: caption by caption, in pool order."""
JUDGING_ORDERS = tuple(judging_order.STRATEGIES)
BUDGET = (1, 1_000_000_000)
"""Bounds of a label budget."""

DEFAULT_GOLD_RATE = 0.05
"""Share of served tasks that are gold pairs (when the campaign has any)."""
DEFAULT_TRAINING_PAIRS = 20
DEFAULT_THRESHOLD = 0.9
"""Gold accuracy that admits an annotator (qualification) and keeps them unpaused."""
DEFAULT_COOLDOWN_SECONDS = 3600
DEFAULT_TRIES = 3
DEFAULT_FLOOR_SECONDS = 1.0
"""Median seconds per judgement below which an annotator is paused: nobody watches a video
that fast."""
SETTLE_METRICS = ("C@1", "C@5", "C@10", "AP", "nDCG@10")
"""The scores judging may be asked to settle, in their canonical order."""
DEFAULT_SETTLE = ("C@1", "C@5", "C@10", "AP")
"""FIRE's reported scores (Rodriguez et al. 2022, Table 1: Correct@K and AP); nDCG@10 is optional."""
DEFAULT_HALF_WIDTH = 1.0
HALF_WIDTH = (0.0, 50.0)
"""The target half-width of a settled score's 95% interval, in points (percentage points of
the score): above 0 and at most 50 (a score lies in [0, 100])."""


class SettingsError(UserError):
    """Campaign settings that are malformed or out of bounds."""


def _fail(path: str, message: str):
    raise SettingsError(f"{path}: {message}")


def _integer(path: str, value: object, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        _fail(path, "must be an integer")
    if value < low or (high is not None and value > high):
        _fail(path, f"must be between {low} and {high}" if high else f"must be at least {low}")
    return int(value)


def _number(path: str, value: object, low: float, high: float, *, open_low=False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        _fail(path, "must be a number")
    number = float(value)
    inside = (low < number if open_low else low <= number) and number <= high
    if math.isnan(number) or not inside:
        _fail(path, f"must be {'above' if open_low else 'at least'} {low:g} and at most {high:g}")
    return number


def _flag(path: str, value: object) -> bool:
    if not isinstance(value, bool):
        _fail(path, "must be true or false")
    return value


def _text(path: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        _fail(path, "must be a non-empty text")
    return value


def _ids(path: str, value: object) -> tuple[int, ...]:
    if not isinstance(value, list | tuple):
        _fail(path, "must be a list of ids")
    return tuple(_integer(f"{path}[{i}]", v, 1) for i, v in enumerate(value))


def settle_metrics(path: str, value: object) -> tuple[str, ...]:
    """The metrics ``value`` names (a comma-separated text or a list, any case) in canonical
    order: at least one, each of :data:`SETTLE_METRICS`, none twice."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        _fail(path, "must be a list of metric names")
    canonical = {name.lower(): name for name in SETTLE_METRICS}
    named = []
    for item in value:
        name = canonical.get(item.strip().lower())
        if name is None:
            _fail(path, f"unknown metric {item[:40]!r}: choose from {', '.join(SETTLE_METRICS)}")
        if name in named:
            _fail(path, f"{name} named twice")
        named.append(name)
    if not named:
        _fail(path, "must name at least one metric")
    return tuple(name for name in SETTLE_METRICS if name in named)


def _entry(path: str, stored: object, cls, complete: bool = False) -> dict:
    """The stored mapping as keyword arguments of ``cls`` (a dataclass, or the key names),
    refusing unknown keys (with ``complete``, missing ones too)."""
    if not isinstance(stored, Mapping):
        _fail(path, "must be an object")
    names = list(cls) if isinstance(cls, tuple) else [f.name for f in fields(cls)]
    unknown = sorted(map(str, set(stored) - set(names)))
    if unknown:
        _fail(path, f"unknown setting {', '.join(unknown)}")
    missing = [name for name in names if name not in stored] if complete else []
    if missing:
        _fail(path, f"missing {', '.join(missing)}")
    return dict(stored)


@dataclass(frozen=True)
class JudgingSettings:
    """A campaign's judging order, its Correct@K cut-offs, RBP's p and its label budget."""

    strategy: str = DEFAULT_STRATEGY
    ks: tuple[int, ...] = judging_order.DEFAULT_KS
    p: float = judging_order.RBP_P
    budget: int | None = None
    """Labels after which judging stops (none: until nothing is needed)."""

    def __post_init__(self) -> None:
        if self.strategy not in judging_order.STRATEGIES:
            _fail("judging_order.strategy", f"must be one of {', '.join(JUDGING_ORDERS)}")
        if not isinstance(self.ks, tuple) or not self.ks:
            _fail("judging_order.ks", "must be a non-empty list of cut-offs")
        for k in self.ks:
            _integer("judging_order.ks", k, 1)
        _number("judging_order.p", self.p, 0.0, 1.0, open_low=True)
        if self.budget is not None:
            _integer("budget", self.budget, *BUDGET)

    @property
    def order(self) -> type[judging_order.JudgingOrder]:
        return judging_order.STRATEGIES[self.strategy]

    @property
    def adaptive(self) -> bool:
        """Whether the order re-ranks a query's pairs on every label."""
        return self.order.adaptive

    def state(self, pool: Pool, known: np.ndarray | None) -> judging_order.JudgingOrder:
        return judging_order.make_order(
            self.strategy, pool, known_positive_rank=known, ks=self.ks, p=self.p
        )


@dataclass(frozen=True)
class GoldSettings:
    """A campaign's gold rate, qualification rule and the pace below which annotators pause."""

    rate: float = DEFAULT_GOLD_RATE
    qualification: bool = False
    training_pairs: int = DEFAULT_TRAINING_PAIRS
    threshold: float = DEFAULT_THRESHOLD
    cooldown_seconds: int = DEFAULT_COOLDOWN_SECONDS
    tries: int = DEFAULT_TRIES
    floor_seconds: float = DEFAULT_FLOOR_SECONDS

    def __post_init__(self) -> None:
        _number("gold.rate", self.rate, 0.0, 1.0)
        _flag("gold.qualification", self.qualification)
        _integer("gold.training_pairs", self.training_pairs, 1)
        _number("gold.threshold", self.threshold, 0.0, 1.0, open_low=True)
        _integer("gold.cooldown_seconds", self.cooldown_seconds, 0)
        _integer("gold.tries", self.tries, 1)
        _number("gold.floor_seconds", self.floor_seconds, 0.0, 86_400.0)

    @property
    def active(self) -> bool:
        return self.rate > 0 or self.qualification


@dataclass(frozen=True)
class SampleRequest:
    """One draw of an estimation sample: the pairs asked for and the seed."""

    requested: int
    seed: int

    def __post_init__(self) -> None:
        _integer("estimation_sample.draws.requested", self.requested, 1)
        _integer("estimation_sample.draws.seed", self.seed, 0)


@dataclass(frozen=True)
class LabelPolicy:
    """How many labels a pair needs (:mod:`annotation.policy.rules`): FIRE's rule, or until
    the posterior of its label reaches ``confidence`` (``adaptive``)."""

    name: str = policy.FIRE
    confidence: float = policy.DEFAULT_CONFIDENCE

    def __post_init__(self) -> None:
        if self.name not in policy.POLICIES:
            _fail("label_policy.name", f"must be one of {', '.join(policy.POLICIES)}")
        _number("label_policy.confidence", self.confidence, *policy.CONFIDENCE_RANGE)

    @property
    def adaptive(self) -> bool:
        return self.name == policy.ADAPTIVE


@dataclass(frozen=True)
class EstimationSample:
    """The queries drawn for estimates so far, the pairs they added, and each draw as asked."""

    captions: tuple[int, ...] = ()
    pairs: tuple[int, ...] = ()
    draws: tuple[SampleRequest, ...] = ()

    def __post_init__(self) -> None:
        _ids("estimation_sample.captions", self.captions)
        _ids("estimation_sample.pairs", self.pairs)
        if not all(isinstance(draw, SampleRequest) for draw in self.draws):
            _fail("estimation_sample.draws", "must be a list of draws")

    def drawn(self, captions, pairs, requested: int, seed: int) -> EstimationSample:
        """This sample with one more draw's captions and pairs."""
        return EstimationSample(
            tuple(sorted(set(self.captions) | set(captions))),
            tuple(sorted(set(self.pairs) | set(pairs))),
            (*self.draws, SampleRequest(requested, seed)),
        )


@dataclass(frozen=True)
class QueueOrder:
    """The last proxy ordering of the queue."""

    proxy: str
    pairs_moved: int
    pairs_scored: int

    def __post_init__(self) -> None:
        _text("queue_order.proxy", self.proxy)
        _integer("queue_order.pairs_moved", self.pairs_moved, 0)
        _integer("queue_order.pairs_scored", self.pairs_scored, 0)


@dataclass(frozen=True)
class AutoLabel:
    """The last proxy auto-labelling."""

    proxy: str
    relevant_at: float | None
    irrelevant_at: float | None
    relevant: int
    irrelevant: int

    def __post_init__(self) -> None:
        _text("auto_label.proxy", self.proxy)
        for name in ("relevant_at", "irrelevant_at"):
            if getattr(self, name) is not None:
                _number(f"auto_label.{name}", getattr(self, name), 0.0, 1.0)
        _integer("auto_label.relevant", self.relevant, 0)
        _integer("auto_label.irrelevant", self.irrelevant, 0)


@dataclass(frozen=True)
class CampaignSettings:
    """Everything a campaign sets in ``Campaign.options``, checked when built."""

    judging: JudgingSettings = field(default_factory=JudgingSettings)
    gold: GoldSettings = field(default_factory=GoldSettings)
    show_roles: bool = True
    """Underline the caption's semantic roles on the judging page (who, does what, ...)."""
    extends: int | None = None
    """The id of the label set this campaign completes (none: a campaign of its own)."""
    estimation_sample: EstimationSample = field(default_factory=EstimationSample)
    queue_order: QueueOrder | None = None
    auto_label: AutoLabel | None = None
    label_policy: LabelPolicy = field(default_factory=LabelPolicy)
    settle: tuple[str, ...] = DEFAULT_SETTLE
    """The scores judging must settle (canonical order, see :func:`settle_metrics`)."""
    half_width: float = DEFAULT_HALF_WIDTH
    """The target half-width of their 95% intervals, in points."""
    active_captions: tuple[int, ...] = ()
    """Queries the active policy's stages drew (:mod:`annotation.active.stages`): judged in full."""

    def __post_init__(self) -> None:
        _flag("show_roles", self.show_roles)
        _ids("active_captions", self.active_captions)
        if (
            not isinstance(self.settle, tuple)
            or settle_metrics("settle", self.settle) != self.settle
        ):
            _fail("settle", f"must be a tuple of metrics in the order {', '.join(SETTLE_METRICS)}")
        _number("half_width", self.half_width, *HALF_WIDTH, open_low=True)
        if not isinstance(self.label_policy, LabelPolicy):
            _fail("label_policy", "must be a label policy")
        if self.extends is not None:
            _integer("extends", self.extends, 1)

    @classmethod
    def from_options(cls, options: Mapping | None) -> CampaignSettings:
        """The settings a ``Campaign.options`` value stores (:class:`SettingsError` names the
        first bad entry), cached per JSON text: checking cost 0.1 ms, a tenth of a request."""
        try:
            text = json.dumps(options or {}, allow_nan=False)
        except (TypeError, ValueError):  # not JSON (or NaN): no key, so checked uncached
            return cls._checked(options)
        return _parsed(text)

    @classmethod
    def _checked(cls, options: object) -> CampaignSettings:
        stored = _entry("options", options or {}, OPTION_KEYS)
        order = _entry("judging_order", stored.get("judging_order", {}), JudgingSettings)
        if "budget" in order:
            _fail("judging_order", "unknown setting budget")
        if "ks" in order:
            if not isinstance(order["ks"], list | tuple):
                _fail("judging_order.ks", "must be a list of cut-offs")
            order["ks"] = tuple(order["ks"])
        sample = _entry("estimation_sample", stored.get("estimation_sample", {}), EstimationSample)
        draws = sample.get("draws", [])
        if not isinstance(draws, list | tuple):
            _fail("estimation_sample.draws", "must be a list")
        settle = stored.get("settle", list(DEFAULT_SETTLE))
        if not isinstance(settle, list | tuple):
            _fail("settle", "must be a list of metric names")
        return cls(
            judging=JudgingSettings(**order, budget=stored.get("budget")),
            gold=GoldSettings(**_entry("gold", stored.get("gold", {}), GoldSettings)),
            show_roles=stored.get("show_roles", True),
            extends=stored.get("extends"),
            estimation_sample=EstimationSample(
                captions=_ids("estimation_sample.captions", sample.get("captions", ())),
                pairs=_ids("estimation_sample.pairs", sample.get("pairs", ())),
                draws=tuple(
                    SampleRequest(
                        **_entry(f"estimation_sample.draws[{i}]", draw, SampleRequest, True)
                    )
                    for i, draw in enumerate(draws)
                ),
            ),
            queue_order=_record("queue_order", stored.get("queue_order"), QueueOrder),
            auto_label=_record("auto_label", stored.get("auto_label"), AutoLabel),
            label_policy=LabelPolicy(
                **_entry("label_policy", stored.get("label_policy", {}), LabelPolicy)
            ),
            settle=settle_metrics("settle", settle),
            half_width=stored.get("half_width", DEFAULT_HALF_WIDTH),
            active_captions=_ids("active_captions", stored.get("active_captions", ())),
        )

    def to_options(self) -> dict:
        """The JSON ``Campaign.options`` stores for these settings (defaults left out)."""
        stored: dict = {}
        judging = self.judging
        if replace(judging, budget=None) != JudgingSettings():
            stored["judging_order"] = {k: v for k, v in _json(judging).items() if k != "budget"}
        if judging.budget is not None:
            stored["budget"] = judging.budget
        for setting in fields(self)[1:]:  # the others by their names, unless at their defaults
            value = getattr(self, setting.name)
            default = setting.default_factory() if setting.default is MISSING else setting.default
            if value != default:
                stored[setting.name] = _json(value)
        return stored

    @functools.cached_property
    def judged_in_full(self) -> frozenset[int]:
        """Queries drawn for an estimate, uniformly or by an active stage: every pair of theirs
        is served, first, whatever the judging order would say (built once per parsed settings: they are shared)."""
        return frozenset(self.estimation_sample.captions) | frozenset(self.active_captions)


OPTION_KEYS = (
    "judging_order",
    "budget",
    *(f.name for f in fields(CampaignSettings) if f.name != "judging"),
)
"""The top-level keys of ``Campaign.options``: each setting by its name, the judging
settings as their order and budget; any other is refused."""


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> CampaignSettings:
    """The settings of one ``Campaign.options`` JSON text (frozen, so safely shared)."""
    return CampaignSettings._checked(json.loads(text))


def _json(value: object) -> object:
    """A setting as ``Campaign.options`` stores it: dataclasses as objects, tuples as lists."""
    if is_dataclass(value):
        value = asdict(value)
    if isinstance(value, dict):
        return {key: _json(item) for key, item in value.items()}
    return [_json(item) for item in value] if isinstance(value, tuple) else value


def _record(path: str, stored: object, cls):
    """A proxy record (:class:`QueueOrder`, :class:`AutoLabel`), or None."""
    return None if stored is None else cls(**_entry(path, stored, cls, complete=True))
