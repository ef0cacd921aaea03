"""Simulated annotators: judge a campaign through the real assignment service.

Each simulated annotator answers with the demo world's exact relevance (FIRE §3.1 rule)
and flips it with probability ``error_rate``, so agreement figures and the labelling
policy can be exercised end to end without people.
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model

from annotation.models import Campaign, Pair
from annotation.services import assignment, pair_state
from config import roles
from config.errors import UserError
from retrieval.services.demo import ground_truth_relevance


class SimulationError(UserError):
    """Simulation settings no annotator could follow (an error rate outside 0..1, no one)."""


@dataclass(frozen=True)
class SimulationResult:
    annotators: int
    judgements: int
    flipped: int


def simulated_annotators(count: int) -> list:
    """Accounts ``sim-annotator-1..count`` in the annotator group (created if missing)."""
    User = get_user_model()
    group = roles.ensure_groups()[roles.ANNOTATOR]
    users = []
    for i in range(1, count + 1):
        user, created = User.objects.get_or_create(username=f"sim-annotator-{i}")
        if created:
            user.set_unusable_password()
            user.save()
        user.groups.add(group)
        users.append(user)
    return users


def truth_for(campaign: Campaign) -> Callable[[Pair], bool]:
    """Exact relevance of any of the campaign's pairs (demo datasets only)."""
    caption_ids = list(
        Pair.objects.filter(campaign=campaign).values_list("caption_id", flat=True).distinct()
    )
    caption_keys, video_keys, matrix = ground_truth_relevance(
        campaign.dataset, caption_ids=caption_ids
    )
    row = {key: i for i, key in enumerate(caption_keys)}
    col = {key: j for j, key in enumerate(video_keys)}

    def truth(pair: Pair) -> bool:
        return bool(matrix[row[pair.caption.key], col[pair.video.key]])

    return truth


def simulate(
    campaign: Campaign,
    *,
    annotators: int = 3,
    error_rate: float = 0.05,
    seed: int = 0,
    max_judgements: int | None = None,
    seconds_mean: float = 4.0,
    progress: Callable[[int], object] | None = None,
) -> SimulationResult:
    """Let ``annotators`` simulated people judge until the queue is empty or the cap is hit."""
    if not 0.0 <= error_rate <= 1.0:
        raise SimulationError("error rate must be between 0 and 1")
    if annotators < 1:
        raise SimulationError("at least one annotator is needed")
    rng = np.random.default_rng(seed)
    truth = truth_for(campaign)
    users = simulated_annotators(annotators)
    judgements = flipped = 0
    active = list(users)
    while active and (max_judgements is None or judgements < max_judgements):
        for user in list(active):
            current = assignment.assign(campaign, user).current
            if current is None:
                active.remove(user)
                continue
            answer = truth(current.pair)
            if rng.random() < error_rate:
                answer = not answer
                flipped += 1
            assignment.submit(
                user,
                current.pair.pk,
                "relevant" if answer else "irrelevant",
                uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | judgements),
                seconds=float(rng.gamma(4.0, seconds_mean / 4.0)),
            )
            judgements += 1
            if progress:
                progress(1)
            if max_judgements is not None and judgements >= max_judgements:
                break
    # Hand back leases still held, so real annotators are not kept waiting.
    for user in users:
        held = list(user.leases.filter(pair__campaign=campaign).values_list("pk", "pair_id"))
        pair_state.release_leases(held)
    return SimulationResult(annotators=annotators, judgements=judgements, flipped=flipped)
