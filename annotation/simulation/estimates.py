"""Pure: every run's per-query metrics on a :class:`~annotation.simulation.model.World` whose pairs
are relevant with given probabilities, and the spread label noise gives them.

A run's ranked list holds pooled pairs and, where it ranks the caption's own video, a known
positive (probability 1); the query's other pooled pairs and an unlisted own video count in R
(FIRE, Rodriguez et al. 2022, §2.1). With 0/1 probabilities the values are the metrics
themselves; with a predictor's probabilities, their exact expectation under independence
(:func:`retrieval.scoring.expected.expected_metrics`), which active inference corrects.
"""

import numpy as np

from annotation.campaigns.settings import SETTLE_METRICS
from annotation.simulation.model import Outcome, World
from retrieval.scoring import score_intervals
from retrieval.scoring.expected import expected_metrics

METRICS = SETTLE_METRICS
"""The metrics simulated: C@1, C@5, C@10, AP and nDCG@10."""
KS = (1, 5, 10)
NOISE_DRAWS = 64
"""Labellings drawn from the posteriors per query for the label-noise variance."""


def query_metrics(
    world: World, probability: np.ndarray, queries: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Per metric, queries x runs: each run's expected metric for ``queries`` (all when None) when
    pooled pair i is relevant with ``probability[i]`` independently (exact on 0/1 inputs)."""
    p = np.asarray(probability, dtype=np.float64)
    if p.shape != (len(world.pool),):
        raise ValueError("one probability per pooled pair is required")
    layout = world.layout
    rows = np.arange(layout.pair_of.shape[0]) if queries is None else np.asarray(queries)
    pair_of = layout.pair_of[rows]
    grid = np.where(pair_of >= 0, p[np.maximum(pair_of, 0)], 0.0)
    runs = world.pool.run_count
    out = {metric: np.zeros((rows.size, runs)) for metric in METRICS}
    for r in range(runs):
        at = world.pair_at[rows, r]
        own = world.known_positive[rows, r]
        listed = np.where(at >= 0, p[np.maximum(at, 0)], own.astype(np.float64))
        listed_here = np.zeros(pair_of.shape, bool)
        valid = pair_of >= 0
        listed_here[valid] = world.pool.ranks[pair_of[valid], r] > 0
        own_outside = np.maximum(world.known_count[rows] - own.sum(axis=1), 0)
        unlisted_own = np.arange(max(int(own_outside.max(initial=0)), 1)) < own_outside[:, None]
        outside = np.c_[np.where(listed_here, 0.0, grid), unlisted_own.astype(np.float64)]
        values = expected_metrics(listed, outside, KS, ndcg_k=10)
        for metric in METRICS:
            out[metric][:, r] = values[metric]
    return out


def noise_variance(
    world: World,
    posterior: np.ndarray,
    queries: np.ndarray,
    rng: np.random.Generator,
    draws: int = NOISE_DRAWS,
) -> dict[str, np.ndarray]:
    """Per metric, ``queries`` x runs: the variance of each run's metric over labellings drawn
    from the pairs' ``posterior`` (Monte Carlo, ``draws`` labellings a query): how much the
    human values themselves could move under label noise."""
    queries = np.asarray(queries, dtype=np.int64)
    runs = world.pool.run_count
    if queries.size == 0:
        return {metric: np.zeros((0, runs)) for metric in METRICS}
    posterior = np.asarray(posterior, dtype=np.float64)
    drawn = [
        query_metrics(world, (rng.random(posterior.size) < posterior).astype(np.float64), queries)
        for _ in range(draws)
    ]
    return {
        metric: np.var(np.stack([values[metric] for values in drawn]), axis=0, ddof=1)
        for metric in METRICS
    }


def true_scores(world: World) -> dict[str, dict[str, float]]:
    """Each run's mean of every metric over all queries under the world's true labels."""
    values = query_metrics(world, world.labels.astype(np.float64))
    return {
        name: {metric: float(values[metric][:, r].mean()) for metric in METRICS}
        for r, name in enumerate(world.run_names)
    }


def world_intervals(world: World, outcome: Outcome, draws: int = 1000) -> dict:
    """Each run's 95% intervals (:mod:`retrieval.scoring.score_intervals`) from a policy's
    outcome: posteriors for label noise, the pool's unlabelled pairs as unjudged. The world's
    pairs are items 0..n-1, each caption's own video item n + its query."""
    n = len(world.pool)
    queries = world.known_positive.shape[0]
    own = n + np.arange(queries)[:, None]
    runs = {
        name: np.where(
            world.pair_at[:, r] >= 0,
            world.pair_at[:, r],
            np.where(world.known_positive[:, r], own, -1),
        )
        for r, name in enumerate(world.run_names)
    }
    labelled = np.flatnonzero(np.bincount(outcome.pair, minlength=n) > 0)
    relevance = np.maximum(outcome.status[labelled].astype(np.int64), -1)  # pending: -1
    judged = score_intervals.JudgedPairs.of(
        world.layout.query_of[labelled], labelled, relevance, outcome.posterior[labelled]
    )
    unlabelled = np.setdiff1d(np.arange(n), labelled)
    return score_intervals.score_intervals(
        runs,
        judged,
        (np.arange(queries), n + np.arange(queries)),
        unjudged=(world.layout.query_of[unlabelled], unlabelled),
        draws=draws,
    )
