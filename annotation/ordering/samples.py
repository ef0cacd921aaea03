"""Estimation samples: random queries whose unjudged pairs are all served next, for an
estimate of the scores judging has not settled (:mod:`retrieval.scoring.estimation`)."""

from dataclasses import dataclass, replace

import numpy as np
from django.db import transaction

from annotation.judging import pair_state
from annotation.models import Campaign, Pair
from config.batches import rows_in
from config.errors import UserError

SAMPLE_PAIRS = (1, 10_000_000)


class SampleError(UserError):
    """The estimation sample cannot be drawn as asked."""


def sampled_captions(campaign: Campaign) -> set[int]:
    """Captions drawn for an estimation sample: every pooled pair of theirs gets judged."""
    return set(campaign.settings.estimation_sample.captions)


@dataclass(frozen=True)
class SampleDraw:
    """What :func:`draw_sample` drew: queries, their unjudged pairs, the pairs asked for and
    the seed (an estimate Horvitz-Thompson over queries: :mod:`retrieval.scoring.estimation`)."""

    queries: int
    pairs: int
    requested: int
    seed: int


def draw_sample(campaign: Campaign, pairs: int, seed: int = 0) -> SampleDraw:
    """ "Judge ``pairs`` more random pairs to estimate": draw queries uniformly among those
    with unjudged pooled pairs until ``pairs`` are covered, reopen their parked pairs and
    serve them before anything else. A budget grows by what the sample adds."""
    from retrieval.scoring.estimation import draw_queries

    if not SAMPLE_PAIRS[0] <= pairs <= SAMPLE_PAIRS[1]:
        raise SampleError(f"pairs must be between {SAMPLE_PAIRS[0]} and {SAMPLE_PAIRS[1]}")
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
        already = sampled_captions(campaign)
        rows = [  # the sampled captions left out here: as a list, they grow with the samples
            row
            for row in Pair.objects.filter(
                campaign=campaign, status=Pair.Status.PENDING, label_count=0
            ).values_list("pk", "caption_id", "needed", "held")
            if row[1] not in already
        ]
        if not rows:
            raise SampleError("no unjudged pooled pair is left to sample")
        captions = np.array([row[1] for row in rows], dtype=np.int64)
        queries, per_query = np.unique(captions, return_counts=True)
        drawn = queries[draw_queries(per_query, pairs, seed)]
        drawn_set = set(drawn.tolist())
        chosen = [row for row in rows if row[1] in drawn_set]
        pair_state.place(
            reopen_ids=[row[0] for row in chosen if row[2] == 0],
            positions={row[0]: 0 for row in chosen},
        )
        settings = campaign.settings
        judging = settings.judging
        if judging.budget is not None:
            judging = replace(judging, budget=judging.budget + len(chosen))
        sample = settings.estimation_sample.drawn(
            drawn.tolist(), [row[0] for row in chosen], pairs, seed
        )
        campaign.set_settings(replace(settings, judging=judging, estimation_sample=sample))
    return SampleDraw(int(drawn.size), len(chosen), pairs, seed)


def pool_state(campaign: Campaign):
    """The campaign's unjudged pooled pairs and its estimation sample, for its label set."""
    from retrieval.scoring.estimation import PoolState

    pending = np.array(
        Pair.objects.filter(campaign=campaign, status=Pair.Status.PENDING).values_list(
            "caption_id", "video_id"
        ),
        dtype=np.int64,
    ).reshape(-1, 2)
    sample = campaign.settings.estimation_sample
    sampled = np.array(
        rows_in(
            Pair.objects.exclude(status=Pair.Status.PENDING).values_list("caption_id", "video_id"),
            "pk",
            sample.pairs,
        ),
        dtype=np.int64,
    ).reshape(-1, 2)
    return PoolState(
        (pending[:, 0], pending[:, 1]),
        (sampled[:, 0], sampled[:, 1]),
        np.array(sample.captions, dtype=np.int64),
    )
