"""Optional campaign settings driven by a semantic proxy S(video, caption)
(Wray et al., CVPR 2021, §4.4 Eq. 5).

Both are off by default and recorded in the campaign's settings when applied:

- **queue order**: within each caption's block of pending, unlabelled pairs, the positions
  are permuted so higher-scoring pairs are judged first (ties keep their old order).
- **auto-label**: pending, unlabelled pairs scoring at least ``relevant_at`` become relevant
  and those at most ``irrelevant_at`` irrelevant, with no human label; ``Pair.auto_label``
  says which rule decided them (``"bow>=0.90"``) and every export shows it.

Pairs whose video or caption lies outside the proxy's split (NaN score) are left alone.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from django.db import transaction

from annotation.campaigns.service import campaign_split
from annotation.campaigns.settings import AutoLabel, QueueOrder
from annotation.judging import pair_state
from annotation.models import Campaign, Pair
from annotation.ordering.proxy import (
    NONE,
    auto_labels,
    check_thresholds,
    order_within_captions,
    rule_text,
)
from retrieval.label_sets.status import IRRELEVANT, RELEVANT


def _open_pairs(campaign: Campaign, proxy: str):
    """Pending pairs with no live label (nor admin or auto label), with their proxy scores."""
    # Imported here: the proxies pull in spaCy, which every caller need not load.
    from retrieval.proxies.service import ProxyOptions, proxy_relevance

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


def order_queue(campaign: Campaign, proxy: str) -> dict:
    """Permute pending pairs' positions within each caption by descending proxy score."""
    with transaction.atomic():
        table, scores = _open_pairs(campaign, proxy)
        moved = 0
        if len(table):
            new = order_within_captions(table[:, 1], table[:, 3], scores)
            changed = np.flatnonzero(new != table[:, 3])
            moved = pair_state.move({int(table[i, 0]): int(new[i]) for i in changed})
        result = {
            "proxy": proxy,
            "pairs_moved": moved,
            "pairs_scored": int((~np.isnan(scores)).sum()),
        }
        campaign.set_settings(replace(campaign.settings, queue_order=QueueOrder(**result)))
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
        free = (table[:, 4] == 0) & (table[:, 5] == 0)
        codes = np.where(free, auto_labels(scores, relevant_at, irrelevant_at), NONE)
        for code, status, threshold, op in (
            (RELEVANT, Pair.Status.RELEVANT, relevant_at, ">="),
            (IRRELEVANT, Pair.Status.IRRELEVANT, irrelevant_at, "<="),
        ):
            if threshold is not None:
                rule = rule_text(proxy, op, threshold)
                pair_state.auto_label(table[codes == code, 0].tolist(), status, rule)
        result = {
            "proxy": proxy,
            "relevant_at": relevant_at,
            "irrelevant_at": irrelevant_at,
            "relevant": int((codes == RELEVANT).sum()),
            "irrelevant": int((codes == IRRELEVANT).sum()),
        }
        campaign.set_settings(replace(campaign.settings, auto_label=AutoLabel(**result)))
    return result
