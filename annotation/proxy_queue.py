"""Optional campaign settings driven by a semantic proxy S(video, caption) (issue 7 §4).

Both are off by default and recorded in ``Campaign.options`` when applied:

- **queue order**: within each caption's block of pending, unlabelled pairs, the positions
  are permuted so higher-scoring pairs are judged first (ties keep their old order).
- **auto-label**: pending, unlabelled pairs scoring at least ``relevant_at`` become relevant
  and those at most ``irrelevant_at`` irrelevant, with no human label; ``Pair.auto_label``
  says which rule decided them (``"bow>=0.90"``) and every export shows it.

Pairs whose video or caption lies outside the proxy's split (NaN score) are left alone.
"""

from __future__ import annotations

import numpy as np
from django.db import transaction

from annotation.models import Campaign, Pair

BATCH = 5_000
"""Pairs per ``bulk_update`` query."""
NONE = -1
"""No automatic label (see :func:`auto_labels`)."""


class ProxyQueueError(ValueError):
    """A proxy setting that cannot be applied as asked."""


# Pure functions.


def order_within_captions(
    caption_ids: np.ndarray, positions: np.ndarray, scores: np.ndarray
) -> np.ndarray:
    """New positions: each caption's positions handed out by descending score.

    The positions a caption holds stay the same set; the highest-scoring pair gets the
    smallest. Ties keep their old order, and pairs with a NaN score keep their position
    (the others are permuted among the remaining positions of their caption).
    """
    caption_ids = np.asarray(caption_ids)
    positions = np.asarray(positions, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    if not (caption_ids.ndim == positions.ndim == scores.ndim == 1):
        raise ValueError("caption_ids, positions and scores must be 1-D")
    if not (len(caption_ids) == len(positions) == len(scores)):
        raise ValueError("caption_ids, positions and scores must have the same length")
    new = positions.copy()
    known = np.flatnonzero(~np.isnan(scores))
    if not len(known):
        return new
    captions, old, score = caption_ids[known], positions[known], scores[known]
    # Pairs in their new order (caption, descending score, old position) and the caption's
    # slots in ascending order: both group by caption with the same group sizes.
    by_score = np.lexsort((old, -score, captions))
    slots = np.lexsort((old, captions))
    new[known[by_score]] = old[slots]
    return new


def check_thresholds(relevant_at: float | None, irrelevant_at: float | None) -> None:
    """Raise ValueError unless ``0 <= irrelevant_at < relevant_at <= 1`` (None: that side off)."""
    if relevant_at is None and irrelevant_at is None:
        raise ValueError("give relevant_at, irrelevant_at or both")
    for name, value in (("relevant_at", relevant_at), ("irrelevant_at", irrelevant_at)):
        if value is not None and not (0.0 <= value <= 1.0):  # also rejects NaN
            raise ValueError(f"{name} must be between 0 and 1, got {value}")
    if relevant_at is not None and irrelevant_at is not None and not irrelevant_at < relevant_at:
        raise ValueError(
            f"need irrelevant_at < relevant_at, got irrelevant_at={irrelevant_at} "
            f"and relevant_at={relevant_at}"
        )


def auto_labels(
    scores: np.ndarray, relevant_at: float | None, irrelevant_at: float | None
) -> np.ndarray:
    """int8 per score: 1 when ``>= relevant_at``, 0 when ``<= irrelevant_at``, else -1.

    NaN scores get -1; a threshold of None turns that side off.
    """
    check_thresholds(relevant_at, irrelevant_at)
    scores = np.asarray(scores, dtype=np.float64)
    out = np.full(scores.shape, NONE, dtype=np.int8)
    with np.errstate(invalid="ignore"):
        if relevant_at is not None:
            out[scores >= relevant_at] = 1
        if irrelevant_at is not None:
            out[scores <= irrelevant_at] = 0
    return out


def rule_text(proxy: str, op: str, threshold: float) -> str:
    """The ``Pair.auto_label`` text, e.g. ``bow>=0.90`` (two decimals, more when needed)."""
    text = f"{threshold:.2f}"
    if float(text) != threshold:
        text = repr(float(threshold))
    return f"{proxy}{op}{text}"


# Services.


def campaign_split(campaign: Campaign) -> str:
    """The split of the campaign's videos, whose proxy matrices score its pairs."""
    split = Pair.objects.filter(campaign=campaign).values_list("video__split", flat=True).first()
    return split or "test"


def _open_pairs(campaign: Campaign, proxy: str):
    """Pending pairs with no live label (nor admin or auto label), with their proxy scores."""
    # Imported here: the proxies pull in spaCy, which every caller need not load.
    from retrieval.services.proxies import ProxyOptions, proxy_relevance

    options = ProxyOptions(proxy, split=campaign_split(campaign))  # ProxyError: bad proxy
    rows = list(
        Pair.objects.filter(
            campaign=campaign,
            status=Pair.Status.PENDING,
            label_count=0,
            adjudicated="",
            auto_label="",
        )
        .order_by("position", "pk")
        .values_list("pk", "caption_id", "video_id", "position", "leased", "held")
    )
    table = np.array(rows, dtype=np.int64).reshape(-1, 6)
    if not len(table):
        return table, np.zeros(0)
    relevance = proxy_relevance(campaign.dataset, options)
    return table, relevance.pair_scores(table[:, 1], table[:, 2])


def _record(campaign: Campaign, key: str, value: dict) -> None:
    campaign.options = {**(campaign.options or {}), key: value}
    campaign.save(update_fields=["options"])


def order_queue(campaign: Campaign, proxy: str) -> dict:
    """Permute pending pairs' positions within each caption by descending proxy score."""
    with transaction.atomic():
        table, scores = _open_pairs(campaign, proxy)
        moved = 0
        if len(table):
            new = order_within_captions(table[:, 1], table[:, 3], scores)
            changed = np.flatnonzero(new != table[:, 3])
            pairs = [Pair(pk=int(table[i, 0]), position=int(new[i])) for i in changed]
            Pair.objects.bulk_update(pairs, ["position"], batch_size=BATCH)
            moved = len(pairs)
        result = {
            "proxy": proxy,
            "pairs_moved": moved,
            "pairs_scored": int((~np.isnan(scores)).sum()),
        }
        _record(campaign, "queue_order", result)
    return result


def auto_label(
    campaign: Campaign, proxy: str, relevant_at: float | None, irrelevant_at: float | None
) -> dict:
    """Label confident pending pairs from the proxy alone; they leave the judging queue.

    Pairs an annotator holds a lease on, or that are escalated, are left to humans.
    """
    check_thresholds(relevant_at, irrelevant_at)
    with transaction.atomic():
        table, scores = _open_pairs(campaign, proxy)
        if len(table):
            free = (table[:, 4] == 0) & (table[:, 5] == 0)
            codes = np.where(free, auto_labels(scores, relevant_at, irrelevant_at), NONE)
        else:
            codes = np.zeros(0, dtype=np.int8)
        pairs = []
        for code, status, threshold, op in (
            (1, Pair.Status.RELEVANT, relevant_at, ">="),
            (0, Pair.Status.IRRELEVANT, irrelevant_at, "<="),
        ):
            if threshold is None:
                continue
            text = rule_text(proxy, op, threshold)
            pairs += [
                # needed 0 and open_slots 0 (no leases): the assignment never serves them.
                Pair(pk=int(pk), status=status, needed=0, open_slots=0, auto_label=text)
                for pk in table[codes == code, 0]
            ]
        Pair.objects.bulk_update(
            pairs, ["status", "needed", "open_slots", "auto_label"], batch_size=BATCH
        )
        result = {
            "proxy": proxy,
            "relevant_at": relevant_at,
            "irrelevant_at": irrelevant_at,
            "relevant": int((codes == 1).sum()),
            "irrelevant": int((codes == 0).sum()),
        }
        _record(campaign, "auto_label", result)
    return result
