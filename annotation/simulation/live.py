"""Simulated annotators: judge a campaign through the real assignment service.

Each follows a :class:`Profile` (careful, sloppy, random spammer, always one answer,
adversarial, drifting) with gamma-distributed time per judgement, so agreement figures,
scores, the labelling policy and the resolution methods run end to end without people;
:func:`judge_until_settled` also plays the admin (refits, discounts of paused annotators).
"""

import math
import random
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.judging import pair_state, queue, submit
from annotation.models import AnnotatorStanding, Campaign, Pair
from annotation.people import service as people
from annotation.policy.fit import refit
from annotation.simulation.model import largest_remainder
from annotation.simulation.replay_service import truth_table
from config import roles
from config.accounts.names import existing_or_new
from config.errors import UserError
from jobs.models import Job
from retrieval.datasets.demo.service import DemoError
from retrieval.label_sets.status import NAMES

ERROR = "error"
RANDOM = "random"
ALWAYS_IRRELEVANT = "always-irrelevant"
ALWAYS_RELEVANT = "always-relevant"
ADVERSARIAL = "adversarial"
BEHAVIOURS = (ERROR, RANDOM, ALWAYS_IRRELEVANT, ALWAYS_RELEVANT, ADVERSARIAL)
ALIASES = {"always-no": ALWAYS_IRRELEVANT, "always-yes": ALWAYS_RELEVANT, "spammer": RANDOM}
DEFAULT_SECONDS = 4.0
"""Mean seconds per judgement of an annotator who looks at the video."""
SPAMMER_SECONDS = 0.8
"""Mean seconds per judgement of one who does not (random, always the same answer)."""
GAMMA_SHAPE = 4.0
PROFILE_SYNTAX = "NAME=SHARE:BEHAVIOUR[:SECONDS][@AFTER>ERROR]"
_PROFILE = re.compile(
    r"^(?P<name>[A-Za-z0-9_-]+)=(?P<share>[0-9.]+):(?P<behaviour>[A-Za-z0-9.-]+)"
    r"(?::(?P<seconds>[0-9.]+))?(?:@(?P<after>[0-9]+)>(?P<drift>[0-9.]+))?$"
)


class SimulationError(UserError):
    """Simulation settings no annotator could follow (an error rate outside 0..1, no one)."""


@dataclass(frozen=True)
class Profile:
    """How one kind of simulated annotator answers (one of :data:`BEHAVIOURS`; :data:`ERROR`
    is wrong with probability ``error_rate``, ``drift_error`` after ``drift_after`` labels),
    and what share of the crowd it is; ``seconds`` the mean time per judgement."""

    name: str
    share: float = 1.0
    behaviour: str = ERROR
    error_rate: float = 0.0
    seconds: float | None = None
    drift_after: int | None = None
    drift_error: float | None = None

    def __post_init__(self) -> None:
        if self.behaviour not in BEHAVIOURS:
            raise SimulationError(
                f"profile {self.name!r}: unknown behaviour {self.behaviour!r} "
                f"(an error rate, or one of {', '.join(BEHAVIOURS[1:])})"
            )
        for what, value in (("error rate", self.error_rate), ("drift error", self.drift_error)):
            if value is not None and not 0.0 <= value <= 1.0:
                raise SimulationError(f"profile {self.name!r}: {what} must be between 0 and 1")
        if not 0.0 <= self.share <= 1.0:
            raise SimulationError(f"profile {self.name!r}: share must be between 0 and 1")
        if self.seconds is not None and not self.seconds > 0:
            raise SimulationError(f"profile {self.name!r}: seconds must be positive")
        if (self.drift_after is None) != (self.drift_error is None):
            raise SimulationError(f"profile {self.name!r}: drift needs both AFTER and ERROR")

    @property
    def mean_seconds(self) -> float:
        if self.seconds is not None:
            return self.seconds
        return DEFAULT_SECONDS if self.behaviour in (ERROR, ADVERSARIAL) else SPAMMER_SECONDS

    def error_after(self, labels: int) -> float:
        """The error rate of an :data:`ERROR` annotator who has given ``labels`` labels."""
        if self.drift_after is not None and labels >= self.drift_after:
            return float(self.drift_error)
        return self.error_rate

    def answer(self, truth: bool, labels: int, rng: np.random.Generator) -> bool:
        """This profile's answer on a pair whose true relevance is ``truth``."""
        if self.behaviour == ERROR:
            return truth if rng.random() >= self.error_after(labels) else not truth
        if self.behaviour == RANDOM:
            return bool(rng.random() < 0.5)
        if self.behaviour == ADVERSARIAL:
            return not truth
        return self.behaviour == ALWAYS_RELEVANT


def parse_profiles(text: str) -> tuple[Profile, ...]:
    """Profiles from ``careful=0.6:0.02,spammer=0.4:random`` (each :data:`PROFILE_SYNTAX`:
    BEHAVIOUR an error rate or a behaviour's name; ``@200>0.3`` a drift to error 0.3 after
    200 labels); shares must add up to 1."""
    profiles = []
    for part in (piece.strip() for piece in text.split(",")):
        if not part:
            continue
        match = _PROFILE.match(part)
        if match is None:
            raise SimulationError(f"profile {part!r} does not read as {PROFILE_SYNTAX}")
        behaviour = ALIASES.get(match["behaviour"], match["behaviour"])
        error_rate = 0.0
        if re.fullmatch(r"[0-9]*\.?[0-9]+", behaviour):
            error_rate, behaviour = float(behaviour), ERROR
        try:
            profiles.append(
                Profile(
                    name=match["name"],
                    share=float(match["share"]),
                    behaviour=behaviour,
                    error_rate=error_rate,
                    seconds=float(match["seconds"]) if match["seconds"] else None,
                    drift_after=int(match["after"]) if match["after"] else None,
                    drift_error=float(match["drift"]) if match["drift"] else None,
                )
            )
        except ValueError as exc:
            raise SimulationError(f"profile {part!r}: {exc}") from None
    if not profiles:
        raise SimulationError(f"no profiles given ({PROFILE_SYNTAX}, comma-separated)")
    names = [profile.name for profile in profiles]
    if len(set(names)) != len(names):
        raise SimulationError("two profiles have the same name")
    total = sum(profile.share for profile in profiles)
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise SimulationError(f"profile shares add up to {total:g}, not 1")
    return tuple(profiles)


def crowd(profiles: Sequence[Profile], annotators: int) -> list[Profile]:
    """Each of ``annotators`` people's profile, shares split by largest remainder."""
    if annotators < 1:
        raise SimulationError("at least one annotator is needed")
    counts = largest_remainder([profile.share for profile in profiles], annotators)
    return [profile for profile, n in zip(profiles, counts.tolist(), strict=True) for _ in range(n)]


@dataclass(frozen=True)
class AnnotatorResult:
    """What one simulated annotator did: labels given and how many were wrong."""

    username: str
    profile: str
    judgements: int
    wrong: int


@dataclass(frozen=True)
class SimulationResult:
    annotators: int
    judgements: int
    flipped: int
    """Answers that differ from the truth."""
    people: tuple[AnnotatorResult, ...] = field(default=())


def simulated_annotators(count: int, prefix: str = "sim-annotator") -> list:
    """Accounts ``{prefix}-1..count`` in the annotator group (created if missing)."""
    group = roles.ensure_groups()[roles.ANNOTATOR]
    users = []
    for i in range(1, count + 1):
        # made with no usable password; a name another account has in another letter case
        # is refused (UsernameTaken) rather than left to the database's index
        user, _ = existing_or_new(f"{prefix}-{i}")
        user.groups.add(group)
        users.append(user)
    return users


def truth_for(campaign: Campaign) -> Callable[[Pair], bool]:
    """Exact relevance of any pair of the campaign's captions (demo datasets only)."""
    captions = Pair.objects.filter(campaign=campaign).values_list("caption_id", flat=True)
    table = truth_table(campaign.dataset, list(captions.distinct()))

    def truth(pair: Pair) -> bool:
        relevant, known = table([pair.caption_id], [pair.video_id])
        if not known[0]:
            raise DemoError(
                f"caption {pair.caption.key!r} or video {pair.video.key!r} of dataset "
                f"{campaign.dataset.name!r} has no stored ground truth to answer it by"
            )
        return bool(relevant[0])

    return truth


def simulate(
    campaign: Campaign,
    *,
    annotators: int = 3,
    error_rate: float = 0.05,
    seed: int = 0,
    max_judgements: int | None = None,
    seconds_mean: float = DEFAULT_SECONDS,
    profiles: Sequence[Profile] | None = None,
    progress: Callable[[int], object] | None = None,
) -> SimulationResult:
    """Let ``annotators`` simulated people judge, taking turns, until the queue is empty or the
    cap is hit: with ``profiles`` split by share (``sim-<profile>-N``), else all answering with
    ``error_rate`` (``sim-annotator-N``)."""
    if profiles is None:
        if not 0.0 <= error_rate <= 1.0:
            raise SimulationError("error rate must be between 0 and 1")
        profiles = [Profile("annotator", 1.0, ERROR, error_rate, seconds_mean)]
    people = crowd(profiles, annotators)
    users = []
    for profile in profiles:
        mine = sum(1 for person in people if person is profile)
        users += simulated_annotators(mine, f"sim-{profile.name}")
    rng = np.random.default_rng(seed)
    truth = truth_for(campaign)
    given = [0] * len(users)
    wrong = [0] * len(users)
    judgements = 0
    active = list(range(len(users)))
    while active and (max_judgements is None or judgements < max_judgements):
        for i in list(active):
            user, profile = users[i], people[i]
            current = queue.assign(campaign, user).current
            if current is None:
                active.remove(i)
                continue
            true = truth(current.pair)
            answer = profile.answer(true, given[i], rng)
            rng.integers(0, 2**63)  # once the client id's draw: seeded answers stay as they were
            wrong[i] += answer != true
            submit.submit(
                user,
                current.pair.pk,
                NAMES[int(answer)],
                uuid.uuid4(),  # a fresh client id: one seeded from `seed` clashed in a second campaign
                seconds=float(rng.gamma(GAMMA_SHAPE, profile.mean_seconds / GAMMA_SHAPE)),
            )
            given[i] += 1
            judgements += 1
            if progress:
                progress(1)
            if max_judgements is not None and judgements >= max_judgements:
                break
    # Hand back leases still held, so real annotators are not kept waiting (in a transaction:
    # on PostgreSQL the pairs are locked first, which needs one).
    for user in users:
        held = list(user.leases.filter(pair__campaign=campaign).values_list("pk", "pair_id"))
        with transaction.atomic():
            pair_state.release_leases(held)
    return SimulationResult(
        annotators=len(users),
        judgements=judgements,
        flipped=sum(wrong),
        people=tuple(
            AnnotatorResult(user.username, profile.name, n, bad)
            for user, profile, n, bad in zip(users, people, given, wrong, strict=True)
        ),
    )


def judge_until_settled(
    campaign: Campaign,
    profiles: Sequence[Profile],
    annotators: int,
    seed: int,
    *,
    requeue: bool,
    say: Callable[[str], object] = lambda text: None,
) -> None:
    """Let the crowd judge until done, as an admin would see it through (at most 20 rounds):
    refit under the adaptive policy while that asks for more; with ``requeue``, discount
    paused annotators' labels and judge again until nobody new is paused."""
    discounted: set[int] = set()
    adaptive = campaign.settings.label_policy.adaptive
    for round_ in range(20):
        random.seed(seed * 1000 + round_)  # gold_queue draws gold tasks with `random`
        result = simulate(campaign, annotators=annotators, seed=seed + round_, profiles=profiles)
        say(f"  {campaign.name}: round {round_ + 1}, {result.judgements:,} judgements")
        if adaptive:
            ran = Job.objects.filter(kind="refit-policy").values_list("status", flat=True)
            say(f"  {campaign.name}: background refits so far: {sorted(ran)}")
            fitted = refit(campaign)
            say(f"  {campaign.name}: refit, {fitted.pairs_changed} pairs changed")
            if result.judgements and (fitted.pairs_changed or fitted.queue_changed):
                continue
        if not requeue:
            break
        standing = AnnotatorStanding.objects.filter(campaign=campaign, paused_at__isnull=False)
        paused = set(
            standing.exclude(annotator_id__in=discounted).values_list("annotator_id", flat=True)
        )
        if not paused:
            break
        for user in get_user_model().objects.filter(pk__in=paused):
            n = people.discount(campaign, user)
            say(f"  {campaign.name}: discounted {n} labels of paused {user.username}")
        discounted |= paused
