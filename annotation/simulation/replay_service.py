"""ORM-facing: gather a dataset's runs and complete labels into a replay world, and replay a
judging order on it (the loop is :mod:`annotation.simulation.replay`).

Queries are pooled at ``depth`` as a campaign would be (each caption's own video a known
positive); complete labels come from the demo ground truth or a label set, and queries with
a pooled pair neither decides are dropped and counted.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from annotation.campaigns.pooling import pool
from annotation.ordering.orders import STRATEGIES
from annotation.simulation.model import World
from annotation.simulation.replay import Replay, budget_steps, replay
from config.batches import rows_in
from config.errors import UserError
from jobs import figures
from retrieval.datasets.demo.service import ground_truth_relevance
from retrieval.ids import PairKeys, lookup
from retrieval.label_sets import judged as judged_values
from retrieval.label_sets.service import load_judged
from retrieval.models import Caption, Dataset, LabelSet, Run, Video
from retrieval.scoring.metrics import align_rows
from retrieval.scoring.rescoring_service import rescoring_inputs
from retrieval.search.runs_service import load_run


class ReplayError(UserError):
    """The replay cannot run as asked (unknown runs or strategy, no complete labels...)."""


def replay_dataset(
    dataset: Dataset,
    strategy: str,
    *,
    run_names: Sequence[str] | None = None,
    label_set: LabelSet | None = None,
    depth: int = 10,
    budget: int | None = None,
    seeds: int = 1,
    steps: int = 10,
    progress: Callable[[int], Callable[[], None]] | None = None,
) -> tuple[Replay, int]:
    """Replay ``strategy`` on the dataset's runs (all when ``run_names`` is None) against the
    label set, or the ground truth when none is given, and how many queries were left out for
    want of labels; ``progress(total)`` gives a tick."""
    if strategy not in STRATEGIES:
        raise ReplayError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    if seeds < 1 or depth < 1 or steps < 1 or (budget is not None and budget < 1):
        raise ReplayError("depth, seeds, steps and budget must be positive")
    world, dropped = replay_world(dataset, run_names, depth, label_set)
    counts = budget_steps(len(world.pool), budget, steps)
    tick = progress(seeds * len(counts)) if progress is not None else None
    return replay(world, strategy, counts, seeds=seeds, progress=tick), dropped


@dataclass(frozen=True)
class OrderComparison:
    """Every judging order replayed on one dataset's complete labels, for the report page."""

    dataset: str
    label_set: str | None
    queries: int
    dropped_queries: int
    replays: tuple[Replay, ...]

    def judged_for(self, replay: Replay, share: float = 0.9) -> int | None:
        """The first step at which ``share`` of the pool's positives were found."""
        target = share * replay.pool_positives
        return next((s.judged for s in replay.steps if s.positives_found >= target), None)


def compare_orders(
    dataset: Dataset,
    *,
    label_set: LabelSet | None = None,
    depth: int = 10,
    steps: int = 20,
) -> OrderComparison:
    """Replay every strategy once (seed 0) on the dataset's runs against complete labels."""
    world, dropped = replay_world(dataset, None, depth, label_set)
    counts = budget_steps(len(world.pool), None, steps)
    replays = tuple(replay(world, strategy, counts) for strategy in STRATEGIES)
    return OrderComparison(
        dataset.name,
        label_set.name if label_set else None,
        int(world.layout.pair_of.shape[0]),
        dropped,
        replays,
    )


ORDERS_FIGURE = "judging-orders"
ORDERS_FIGURE_VERSION = 1
"""Bump when what :func:`compare_orders` computes changes, so stored comparisons are redone."""


def stored_comparison(
    dataset: Dataset, label_set: LabelSet | None = None
) -> figures.Figure[OrderComparison]:
    """:func:`compare_orders` computed once per set of inputs and stored: replaying the seven
    orders took 8.5 s of the page's 9.9 s at FIRE's scale on every view."""
    subject = f"dataset {dataset.pk} labels {label_set.pk if label_set else 'truth'}"
    inputs = rescoring_inputs(dataset, label_set, ORDERS_FIGURE, ORDERS_FIGURE_VERSION)
    return figures.exact(
        ORDERS_FIGURE, subject, inputs, lambda: compare_orders(dataset, label_set=label_set)
    )


def replay_world(
    dataset: Dataset, run_names: Sequence[str] | None, depth: int, label_set: LabelSet | None
) -> tuple[World, int]:
    """The pooled runs with complete labels, and how many queries had to be dropped."""
    if label_set is None and not dataset.has_ground_truth:
        raise ReplayError(f"dataset {dataset.name!r} has no ground truth: name a label set")
    runs = _runs(dataset, run_names)
    lists = [load_run(run).truncated(depth) for run in runs]
    queries = np.unique(np.concatenate([r.query_ids for r in lists]))
    is_query = Caption.objects.filter(is_query=True).values_list("pk", flat=True)
    queries = np.array(sorted(rows_in(is_query, "pk", queries.tolist())), dtype=np.int64)
    judged = load_judged(label_set) if label_set is not None else None
    if judged is not None:
        queries = np.intersect1d(queries, judged.caption_ids)
    own = dict(rows_in(Caption.objects.values_list("pk", "video_id"), "pk", queries.tolist()))
    origin = (queries, np.array([own[int(q)] for q in queries], dtype=np.int64))
    pooled = pool(lists, depth, origin=origin, queries=queries)
    if judged is None:
        labels, known = ground_truth(dataset, pooled.caption_ids, pooled.video_ids)
    else:
        labels, known = _labelled(judged, pooled)
    dropped_queries = np.unique(pooled.caption_ids[~known])
    if dropped_queries.size:
        keep = ~np.isin(pooled.caption_ids, dropped_queries)
        pooled = type(pooled)(pooled.caption_ids[keep], pooled.video_ids[keep], pooled.ranks[keep])
        labels = labels[keep]
    if not len(pooled):
        raise ReplayError("no query has a completely labelled pool to replay")
    rows = np.unique(pooled.caption_ids)
    own_video = np.array([own[int(q)] for q in rows], dtype=np.int64)
    known_positive = np.zeros((rows.size, len(lists), depth), dtype=bool)
    for r, lists_r in enumerate(lists):
        # A run may rank fewer than ``depth`` items: past its end no rank holds a positive.
        hit = align_rows(lists_r.query_ids, lists_r.item_ids, rows) == own_video[:, None]
        known_positive[:, r, : hit.shape[1]] = hit
    names = tuple(run.name for run in runs)
    world = World(pooled, labels, names, depth, known_positive, np.ones(rows.size, np.int64))
    return world, int(dropped_queries.size)


def _runs(dataset: Dataset, names: Sequence[str] | None) -> list[Run]:
    by_name = {run.name: run for run in dataset.runs.order_by("name")}
    names = list(by_name) if names is None else names
    if not names:
        raise ReplayError(f"dataset {dataset.name!r} has no runs")
    missing = [name for name in names if name not in by_name]
    if missing:
        raise ReplayError(
            f"dataset {dataset.name!r} has no run named {', '.join(map(repr, missing))} "
            f"(known: {', '.join(by_name) or 'none'})"
        )
    return [by_name[name] for name in names]


def _labelled(judged, pooled) -> tuple[np.ndarray, np.ndarray]:
    """Each pool pair's label from the label set, and whether the set decides it."""
    decided = judged.relevance != judged_values.DISAGREEMENT
    captions = np.unique(np.concatenate([judged.caption_ids, pooled.caption_ids]))
    keys = PairKeys.fit(captions.size, np.concatenate([judged.video_ids, pooled.video_ids]))

    def pack(caption_ids, video_ids):
        return keys.pack(np.searchsorted(captions, caption_ids), video_ids)

    labelled = pack(judged.caption_ids[decided], judged.video_ids[decided])
    order = np.argsort(labelled)
    at, found = lookup(labelled[order], pack(pooled.caption_ids, pooled.video_ids))
    relevance = judged.relevance[decided][order]
    if not relevance.size:  # nothing decided: no position to read (size - 1 would be -1)
        return np.zeros(len(pooled), bool), found
    return found & (relevance[np.minimum(at, relevance.size - 1)] > 0), found


def ground_truth(dataset: Dataset, caption_ids, video_ids) -> tuple[np.ndarray, np.ndarray]:
    """Each (caption id, video id) pair's ground-truth relevance and whether it has one."""
    return truth_table(dataset, caption_ids)(caption_ids, video_ids)


def truth_table(dataset: Dataset, caption_ids) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """The ground truth (the demo world's FIRE §3.1 rule) for these captions, as a function of
    caption ids and video ids giving each pair's relevance and whether it has one."""
    caption_keys, video_keys, matrix = ground_truth_relevance(
        dataset, caption_ids=np.unique(caption_ids).tolist()
    )
    caption_pk = dict(Caption.objects.filter(dataset=dataset).values_list("key", "pk"))
    video_pk = dict(Video.objects.filter(dataset=dataset).values_list("key", "pk"))
    row = {caption_pk[key]: i for i, key in enumerate(caption_keys)}
    column = {video_pk[key]: i for i, key in enumerate(video_keys)}

    def relevance(caption_ids, video_ids) -> tuple[np.ndarray, np.ndarray]:
        rows = np.array([row.get(int(c), -1) for c in caption_ids], dtype=np.int64)
        columns = np.array([column.get(int(v), -1) for v in video_ids], dtype=np.int64)
        known = (rows >= 0) & (columns >= 0)
        if not known.any():
            return known, known
        return known & matrix[np.maximum(rows, 0), np.maximum(columns, 0)].astype(bool), known

    return relevance
