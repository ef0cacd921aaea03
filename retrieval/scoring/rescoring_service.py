"""ORM-facing: a dataset's runs, label set and ground truth gathered into arrays and re-scored by
:mod:`retrieval.scoring.rescoring`; rows are the answered query captions (pk order), items video
pks, intervals (:mod:`retrieval.scoring.score_intervals`) computed when first read."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
from django.db.models import Count, Max

from config.batches import rows_in
from config.errors import UserError
from jobs import figures
from retrieval.datasets.demo.service import ground_truth_relevance
from retrieval.ids import positions_of
from retrieval.label_sets import judged as judged_values
from retrieval.label_sets.service import load_judged, load_pool_state
from retrieval.models import Caption, Dataset, LabelSet, Run, Video
from retrieval.scoring import estimation, score_intervals
from retrieval.scoring.metrics import align_rows
from retrieval.scoring.rescoring import Qrels, Rescoring, rescore
from retrieval.search.runs_service import load_run


class RescoreError(UserError):
    """The request cannot be scored (no runs, unknown names...)."""


@dataclass
class DatasetRescoring:
    """The scores plus what report figures need about the query rows."""

    result: Rescoring
    caption_ids: np.ndarray
    caption_lengths: np.ndarray
    runs: dict[str, np.ndarray]
    original: Qrels
    corrected: Qrels
    true: Qrels | None


def rescore_dataset(
    dataset: Dataset,
    label_set: LabelSet | None = None,
    run_names: Sequence[str] | None = None,
    *,
    only_labelled: bool = False,
) -> DatasetRescoring:
    """Score the dataset's runs (all, or ``run_names``) under every available positive set."""
    runs = _runs(dataset, run_names)
    loaded = {run.name: load_run(run) for run in runs}
    caption_ids = np.unique(np.concatenate([lists.query_ids for lists in loaded.values()]))
    pairs = load_judged(label_set) if label_set is not None else None
    if only_labelled and pairs is not None:
        caption_ids = np.intersect1d(caption_ids, pairs.caption_ids)
    if len(caption_ids) == 0:
        raise RescoreError("no query caption is both answered by the runs and labelled")
    item_ids = {
        name: align_rows(lists.query_ids, lists.item_ids, caption_ids)
        for name, lists in loaded.items()
    }

    captions = Caption.objects.values_list("pk", "video_id", "text")
    info = {pk: (own, text) for pk, own, text in rows_in(captions, "pk", caption_ids.tolist())}
    original = Qrels.of(
        range(len(caption_ids)), [info[int(pk)][0] for pk in caption_ids], [1] * len(caption_ids)
    )
    corrected = original
    if pairs is not None:
        # Originals last: a caption's own video stays relevant whatever the set says.
        corrected = _label_qrels(pairs, caption_ids).union(original)

    pooled, depth = _pooled(dataset, label_set, loaded, caption_ids)
    true, true_notes = _true_qrels(dataset, caption_ids) if dataset.has_ground_truth else (None, [])
    result = rescore(
        item_ids,
        corrected,
        original=original if pairs is not None else None,
        true=true,
        pooled=pooled,
        pool_depth=depth,
    )
    result.notes.extend(true_notes)
    if pairs is None:
        result.notes.append("no label set: scores use the original positives only")
    else:
        state = load_pool_state(label_set)
        _judging_kinds(result, state, caption_ids, item_ids, corrected)
        result.interval_source = _interval_source(
            result, pairs, state, caption_ids, item_ids, original, label_set.metadata
        )
    lengths = np.array([len(info[int(pk)][1].split()) for pk in caption_ids], dtype=np.int64)
    return DatasetRescoring(result, caption_ids, lengths, item_ids, original, corrected, true)


def _interval_source(
    result: Rescoring,
    pairs: judged_values.Judged,
    state: estimation.PoolState | None,
    caption_ids: np.ndarray,
    item_ids: dict[str, np.ndarray],
    original: Qrels,
    metadata: dict | None = None,
) -> Callable[[], dict]:
    """The corrected scores' intervals, computed when first read: label noise, the unjudged pooled
    pairs' envelope, and :func:`_judging_kinds`' sampled estimates widened by the noise; the
    campaign's active estimates, stored with the set, where they are over the same queries."""
    rows = positions_of(caption_ids, pairs.caption_ids)
    keep = rows >= 0
    confidence = None if pairs.confidence is None else pairs.confidence[keep]
    labels = score_intervals.JudgedPairs.of(
        rows[keep], pairs.video_ids[keep], pairs.relevance[keep], confidence
    )
    unjudged = None
    if state is not None and len(state.unjudged[0]):
        at = positions_of(caption_ids, state.unjudged[0])
        unjudged = (at[at >= 0], np.asarray(state.unjudged[1], np.int64)[at >= 0])
    return partial(
        score_intervals.score_intervals,
        item_ids,
        labels,
        (original.rows, original.items),
        unjudged=unjudged,
        estimates={  # the 95% intervals of the scores estimated from a sample
            run: {m: (s.low, s.high) for m, s in scores.items() if s.kind == estimation.ESTIMATE}
            for run, scores in result.kinds.items()
        },
        active=score_intervals.stored_active(
            (metadata or {}).get(score_intervals.ACTIVE_METADATA), caption_ids
        ),
    )


def _judging_kinds(
    result: Rescoring,
    state: estimation.PoolState | None,
    caption_ids: np.ndarray,
    item_ids: dict[str, np.ndarray],
    corrected: Qrels,
) -> None:
    """Whether each corrected C@K and AP is exact, bounded or estimated (judging stopped early)."""
    if state is None or not (len(state.unjudged[0]) or len(state.sampled[0])):
        return
    rows = len(caption_ids)
    positive = {name: s.judgements.relevant for name, s in result.blocks["corrected"].items()}
    relevant = corrected.rel > 0
    keys = caption_ids[corrected.rows[relevant]] * (1 << 32) + corrected.items[relevant]
    sampled = state.sampled[0].astype(np.int64) * (1 << 32) + state.sampled[1].astype(np.int64)
    in_sample = np.isin(keys, sampled)
    n_sampled = np.bincount(corrected.rows[relevant][in_sample], minlength=rows)
    result.kinds = estimation.score_runs(
        item_ids, caption_ids, positive, corrected.positives_per_row(rows), n_sampled, state
    )
    unjudged = len(state.unjudged[0])
    result.notes.append(
        f"judging stopped with {unjudged:,} pooled pairs unjudged: each corrected C@K and AP is "
        "exact, open (unjudged pairs can still move it: its interval holds every value they "
        "allow) or an estimate from a random sample of queries, as the report's \"How "
        'settled each corrected score is" says (kinds, in the JSON)'
    )


def _runs(dataset: Dataset, names: Sequence[str] | None) -> list[Run]:
    runs = list(dataset.runs.order_by("name"))
    if names:
        by_name = {run.name: run for run in runs}
        missing = [name for name in names if name not in by_name]
        if missing:
            known = ", ".join(by_name) or "none"
            raise RescoreError(
                f"dataset {dataset.name!r} has no run named {', '.join(map(repr, missing))} "
                f"(known: {known})"
            )
        runs = [by_name[name] for name in names]
    if not runs:
        raise RescoreError(f"dataset {dataset.name!r} has no runs to score")
    return runs


def _label_qrels(pairs, caption_ids: np.ndarray) -> Qrels:
    """The label set's decided pairs on the scored rows (disagreements are not judgements)."""
    row_of = positions_of(caption_ids, pairs.caption_ids)
    keep = (pairs.relevance != judged_values.DISAGREEMENT) & (row_of >= 0)
    return Qrels(row_of[keep], pairs.video_ids[keep], pairs.relevance[keep].astype(np.int64))


def _pooled(
    dataset: Dataset, label_set: LabelSet | None, loaded: dict, caption_ids: np.ndarray
) -> tuple[dict[str, np.ndarray] | None, int | None]:
    """The pooled runs' item ids and pool depth, when the label set records them."""
    names = pooled_runs(label_set)
    depth = label_set.metadata.get("pool_depth") if label_set is not None else None
    if not names or not depth:
        return None, None
    pooled = {}
    for name in names:
        lists = loaded.get(name)
        if lists is None:
            run = dataset.runs.filter(name=name).first()
            if run is None:
                return None, None
            lists = load_run(run)
        pooled[name] = align_rows(lists.query_ids, lists.item_ids, caption_ids)
    return pooled, int(depth)


def pooled_runs(label_set: LabelSet | None) -> list[str] | None:
    """The runs ``label_set``'s campaign pooled, or None when it does not record them."""
    names = label_set.metadata.get("pooled_runs") if label_set is not None else None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return None
    return names


def _true_qrels(dataset: Dataset, caption_ids: np.ndarray) -> tuple[Qrels, list[str]]:
    """Exhaustive judgements over the queries' split, with notes on what they leave out (queries
    without stored ground truth, videos without a stored scene)."""
    captions = Caption.objects.values_list("pk", "split")
    splits = {split for _, split in rows_in(captions, "pk", caption_ids.tolist())}
    split = splits.pop() if len(splits) == 1 else None
    caption_keys, video_keys, matrix = ground_truth_relevance(
        dataset, caption_ids=caption_ids.tolist(), split=split
    )
    caption_pk = dict(
        rows_in(
            Caption.objects.filter(dataset=dataset).values_list("key", "pk"), "key", caption_keys
        )
    )
    videos = Video.objects.filter(dataset=dataset)
    video_pk = dict(videos.values_list("key", "pk"))
    row_of_pk = {int(pk): row for row, pk in enumerate(caption_ids.tolist())}
    rows = np.array([row_of_pk[caption_pk[key]] for key in caption_keys], dtype=np.int64)
    items = np.array([video_pk[key] for key in video_keys], dtype=np.int64)
    notes = []
    queries = len(caption_ids) - len(caption_keys)
    if queries:
        notes.append(
            f"{queries} {'query has' if queries == 1 else 'queries have'} no stored ground "
            f"truth and {'is' if queries == 1 else 'are'} left out of the true-label scores"
        )
    scenes = (videos.filter(split=split) if split is not None else videos).count() - len(items)
    if scenes:
        notes.append(
            f"{scenes} {'video has' if scenes == 1 else 'videos have'} no stored scene: "
            "the true labels count them not relevant"
        )
    true = Qrels(
        np.repeat(rows, len(items)), np.tile(items, len(rows)), matrix.ravel().astype(np.int64)
    )
    return true, notes


def rescoring_inputs(dataset: Dataset, label_set: LabelSet | None, *extra: object) -> str:
    """A fingerprint (:func:`jobs.figures.fingerprint`) of everything a re-score of ``dataset``
    reads (label set, runs and models, caption and video counts and last ids, ground truth), with
    ``extra`` (the figure's kind, version and options)."""
    runs = sorted(
        Run.objects.filter(dataset=dataset).values_list("pk", "name", "model__name", "created_at")
    )
    captions = Caption.objects.filter(dataset=dataset).aggregate(n=Count("pk"), last=Max("pk"))
    videos = Video.objects.filter(dataset=dataset).aggregate(n=Count("pk"), last=Max("pk"))
    labels = None
    if label_set is not None:
        labels = (
            label_set.pk,
            label_set.name,
            label_set.version,
            label_set.pair_count,
            label_set.created_at,
            label_set.metadata.get("pooled_runs"),
            label_set.metadata.get("pool_depth"),
        )
    return figures.fingerprint(
        dataset.pk,
        dataset.name,
        dataset.has_ground_truth,
        labels,
        runs,
        sorted(captions.items()),
        sorted(videos.items()),
        *extra,
    )
