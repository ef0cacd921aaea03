"""Which labelled pairs an active stage asks again (:mod:`.stages`): where the label noise of
the judged queries' values keeps a score's interval wide, the pairs that carry most of it."""

from __future__ import annotations

import numpy as np

from annotation.active.live import LiveCampaign
from annotation.simulation.estimates import noise_variance, query_metrics

NOISE_SHARE = 0.5
"""The share of a settled score's target variance its label noise may take before a stage asks
judged queries' unsure pairs again: the rest is the sampling's."""
SURE = 0.995
"""A pair at least this sure of its label is not asked again."""


def ask_again(
    live: LiveCampaign,
    judged: np.ndarray,
    settle: tuple[str, ...],
    target: float,
    cap: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Per pair, whether the stage asks for one more label: where the label noise of the
    judged queries' values alone takes more than :data:`NOISE_SHARE` of a settled score's
    target variance (drawing more queries cannot narrow that), the unsure labelled pairs
    (below :data:`SURE`, under the label cap) that carry most of it, each pair's part being
    ``p (1 - p) d^2`` per run and score, d what flipping its label moves the query's value
    (exact for C@K, AP and nDCG: a query's expected metric is multilinear in its pairs'
    probabilities), taken in order until what is left fits. Asking the unsure pairs of the
    noisiest queries instead spent 3,000 labels a stage for a tenth of a point live."""
    again = np.zeros(len(live.pair_ids), bool)
    rows = np.flatnonzero(judged)
    if not rows.size:
        return again
    noise = noise_variance(live.world, live.posterior, rows, rng)
    total = np.stack([noise[metric].sum(axis=0) for metric in settle], axis=1)  # runs x settled
    n = judged.size
    allowed = NOISE_SHARE * target * n**2
    if total.max(initial=0.0) <= allowed:
        return again
    certainty = np.maximum(live.posterior, 1 - live.posterior)
    eligible = live.labelled & ~live.fixed & (certainty < SURE) & (live.label_counts < cap)
    eligible &= np.isin(live.world.layout.query_of, rows)
    part = flip_parts(live, rows, settle, eligible)  # pairs x runs x settled
    excess = np.maximum(total - allowed, 0.0)
    weight = np.where(excess > 0, 1.0 / allowed, 0.0)
    order = np.argsort(-(part * weight).sum(axis=(1, 2)), kind="stable")
    order = order[eligible[order]]
    if not order.size:
        return again
    removed = np.cumsum(part[order], axis=0)
    fits = (total - removed <= allowed).all(axis=(1, 2))
    count = int(np.argmax(fits)) + 1 if fits.any() else order.size
    again[order[:count]] = True
    return again


def flip_parts(
    live: LiveCampaign, rows: np.ndarray, settle: tuple[str, ...], eligible: np.ndarray
) -> np.ndarray:
    """Pairs x runs x settled metrics: ``p (1 - p) d^2`` for the ``eligible`` pairs (0
    elsewhere), d the change in the query's value when the pair's label flips, every other
    pair at its posterior. One slot of every query at a time: two metric passes a slot."""
    world = live.world
    layout = world.layout
    parts = np.zeros((len(live.pair_ids), world.pool.run_count, len(settle)))
    slots = layout.pair_of[rows]
    for slot in range(slots.shape[1]):
        pairs = slots[:, slot]
        take = pairs >= 0
        take[take] = eligible[pairs[take]]
        if not take.any():
            continue
        chosen = pairs[take]
        high, low = live.posterior.copy(), live.posterior.copy()
        high[chosen], low[chosen] = 1.0, 0.0
        up = query_metrics(world, high, rows[take])
        down = query_metrics(world, low, rows[take])
        p = live.posterior[chosen][:, None]
        for m, metric in enumerate(settle):
            parts[chosen, :, m] = p * (1 - p) * (up[metric] - down[metric]) ** 2
    return parts
