"""Compute a label set's stored figures (leaderboard, report, proxy table and what other apps
add to :data:`WARMERS`) in the job :func:`retrieval.label_sets.service.store_label_set`
queues, so no page view computes them: at FIRE's scale their first views took 4.6 s, 8.5 s
and +690 MB."""

from __future__ import annotations

import time
from collections.abc import Callable

from config.errors import UserError
from retrieval.label_sets.service import WARM_JOB
from retrieval.models import Dataset, LabelSet
from retrieval.proxies.service import stored_proxy_table
from retrieval.scoring.leaderboard_service import stored_leaderboard
from retrieval.scoring.reports import stored_report

JOB_KIND = WARM_JOB

WARMERS: dict[str, Callable[[Dataset, LabelSet | None], object]] = {
    "leaderboard": lambda dataset, label_set: stored_leaderboard(dataset, label_set),
    "report": lambda dataset, label_set: stored_report(dataset, label_set),
    "proxy table": lambda dataset, label_set: stored_proxy_table(dataset),
}
"""Each stored figure of a label set by name: the function that computes (or reads) it."""


def warm(dataset: Dataset, label_set: LabelSet | None, say=lambda text: None) -> dict:
    """Compute every figure of :data:`WARMERS` for ``label_set``; seconds per figure."""
    took, refused = {}, {}
    for name, compute in WARMERS.items():
        say(f"computing the {name}")
        started = time.perf_counter()
        try:
            compute(dataset, label_set)
        except UserError as exc:  # a figure this set cannot have (its page says why)
            refused[name] = str(exc)
            continue
        took[name] = round(time.perf_counter() - started, 3)
    return {
        "dataset": dataset.name,
        "labels": label_set.name if label_set else None,
        "seconds": took,
        "not computed": refused,
    }
