"""Pure: which pairs decide a reported score, and what one more label on each is worth.

A pair *decides* run m's Correct@K (FIRE §2.1) when it is in the run's top K and no other
positive is; its *impact* counts those (run, K) cells plus its summed reciprocal rank (AP's
weight), and one more label is worth the chance its current label is wrong times its
impact. Arrays are queries x slots (x runs) as :class:`annotation.ordering.orders.Layout`
lays out a pool (``ranks`` 1-based, 0 none; ``known_rank`` queries x runs, 0 none).
"""

from collections.abc import Sequence

import numpy as np

from annotation.policy import rules as policy

_NEVER = np.iinfo(np.int64).max // 4


def _other_first_hit(ranks: np.ndarray, relevant, known_rank) -> np.ndarray:
    """Queries x slots x runs: the rank of each run's first positive other than the pair itself
    (known positives count; ``_NEVER`` when none)."""
    in_run = ranks > 0
    known = np.asarray(known_rank, dtype=np.int64)
    known = np.where(known > 0, known, _NEVER)[:, None, :]
    hit = np.where(in_run & np.asarray(relevant, dtype=bool)[:, :, None], ranks, _NEVER)
    padded = np.concatenate([hit, np.full_like(hit[:, :1], _NEVER)], axis=1)
    two = np.partition(padded, 1, axis=1)[:, :2, :]
    first, second = two[:, :1, :], two[:, 1:2, :]
    return np.minimum(np.where(hit == first, second, first), known)


def _decides(ranks: np.ndarray, relevant, known_rank, ks: Sequence[int]):
    """Per K of ``ks``, queries x slots x runs: whether each pair decides each run's C@K."""
    ranks = np.asarray(ranks, dtype=np.int64)
    in_run = ranks > 0
    other = _other_first_hit(ranks, relevant, known_rank)
    for k in ks:
        yield in_run & (ranks <= int(k)) & (other > int(k))


def deciding_cells(
    ranks: np.ndarray, relevant: np.ndarray, known_rank: np.ndarray, ks: Sequence[int]
) -> np.ndarray:
    """Queries x slots: how many (run, K) Correct@K cells each pair decides, given each
    pair's current label (``relevant``, bool) and the known positives."""
    cells = np.zeros(np.shape(ranks)[:2], dtype=np.int64)
    for decides in _decides(ranks, relevant, known_rank, ks):
        cells += decides.sum(axis=2)
    return cells


def wanted(
    ranks: np.ndarray,
    relevant: np.ndarray,
    known_rank: np.ndarray,
    labels: np.ndarray,
    posterior: np.ndarray,
    *,
    confidence: float,
    cap: int,
    ks: Sequence[int],
    metric_aware: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """(wanted, value), queries x slots: whether the adaptive policy asks for one more label on
    each pair now (:func:`policy.adaptive_needed`; with ``metric_aware`` only on pairs that
    decide some C@K; never on padding), and what that label is worth."""
    labels = np.asarray(labels, dtype=np.int64)
    ranks = np.asarray(ranks, dtype=np.int64)
    valid = (ranks > 0).any(axis=2)
    needed = policy.adaptive_needed(labels, posterior, confidence, cap) > 0
    cells = deciding_cells(ranks, relevant, known_rank, ks)
    reciprocal = np.where(ranks > 0, 1.0 / np.maximum(ranks, 1), 0.0).sum(axis=2)
    worth = (1.0 - policy.certainty(posterior)) * (cells + reciprocal)  # chance wrong x impact
    if metric_aware:
        needed &= cells > 0
    wanted_now = needed & valid
    return wanted_now, np.where(wanted_now, worth, -np.inf)


def queue(
    ranks: np.ndarray,
    relevant: np.ndarray,
    known_rank: np.ndarray,
    labels: np.ndarray,
    posterior: np.ndarray,
    fixed: np.ndarray,
    turn: np.ndarray,
    queries: int,
    *,
    confidence: float,
    cap: int,
    ks: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:
    """(wanted, position), queries x slots: the adaptive policy's metric-aware queue. ``fixed``
    pairs are never asked for and count as judged; within a query tasks go by value, across
    queries round-robin as :func:`annotation.ordering.orders.queue_positions`
    (``(judged + place) x queries + turn``); -1 where not wanted."""
    fixed = np.asarray(fixed, dtype=bool)
    want, value = wanted(
        ranks, relevant, known_rank, labels, posterior, confidence=confidence, cap=cap, ks=ks
    )
    want &= ~fixed
    value = np.where(want, value, -np.inf)
    judged = ((np.asarray(labels) > 0) | fixed).sum(axis=1)
    order = np.argsort(-value, axis=1, kind="stable")
    place = np.empty_like(order)
    np.put_along_axis(place, order, np.broadcast_to(np.arange(order.shape[1]), order.shape), axis=1)
    turn = np.asarray(turn, dtype=np.int64).reshape(-1, 1)
    position = (judged[:, None] + place) * int(queries) + turn
    return want, np.where(want, position, -1)


def settled_correct_at(
    ranks: np.ndarray,
    relevant: np.ndarray,
    known_rank: np.ndarray,
    labels: np.ndarray,
    posterior: np.ndarray,
    fixed: np.ndarray,
    *,
    confidence: float,
    ks: Sequence[int],
) -> np.ndarray:
    """Runs x ks: the share of queries whose Correct@K is settled: every pair deciding it has
    labels and a posterior of at least ``confidence``, or is ``fixed``."""
    sure = (np.asarray(labels) > 0) & (policy.certainty(posterior) >= confidence)
    shaky = ~(sure | np.asarray(fixed, dtype=bool))
    shares = np.ones((np.shape(ranks)[2], len(ks)))
    if not np.shape(ranks)[0]:
        return shares
    for j, decides in enumerate(_decides(ranks, relevant, known_rank, ks)):
        unsettled = (decides & shaky[:, :, None]).any(axis=1)  # queries x runs
        shares[:, j] = 1.0 - unsettled.mean(axis=0)
    return shares
