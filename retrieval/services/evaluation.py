"""Which ranked videos of a run are positives, under the original or the exact relevance.

Original positives are each caption's own video, as MSR-VTT and MSVD count them (FIRE
§2.1); on a synthetic dataset the exhaustive ground truth says exactly which others are
relevant too.
"""

import numpy as np

from retrieval.models import Caption, Run, Video
from retrieval.runs import RankedLists
from retrieval.services.demo import ground_truth_relevance
from retrieval.services.runs import load_run


def original_hits(run: Run, lists: RankedLists | None = None) -> np.ndarray:
    """Bool queries x depth: the ranked video is the caption's own video."""
    lists = lists or load_run(run)
    origin = dict(
        Caption.objects.filter(pk__in=lists.query_ids.tolist()).values_list("pk", "video_id")
    )
    own = np.array([origin[int(pk)] for pk in lists.query_ids], dtype=np.int64)
    return lists.item_ids == own[:, None]


def ground_truth_hits(run: Run, lists: RankedLists | None = None) -> np.ndarray:
    """Bool queries x depth under the dataset's exhaustive ground truth (demo world)."""
    lists = lists or load_run(run)
    caption_keys, video_keys, relevant = ground_truth_relevance(
        run.dataset, caption_ids=lists.query_ids.tolist()
    )
    row_of_key = {key: i for i, key in enumerate(caption_keys)}
    pk_to_key = dict(
        Caption.objects.filter(pk__in=lists.query_ids.tolist()).values_list("pk", "key")
    )
    rows = np.array([row_of_key[pk_to_key[int(pk)]] for pk in lists.query_ids], dtype=np.int64)
    col_of_key = {key: j for j, key in enumerate(video_keys)}
    video_col = {
        pk: col_of_key[key]
        for pk, key in Video.objects.filter(dataset=run.dataset).values_list("pk", "key")
    }
    pks = np.fromiter(video_col, dtype=np.int64)
    order = np.argsort(pks)
    sorted_pks = pks[order]
    sorted_cols = np.fromiter(video_col.values(), dtype=np.int64)[order]
    pos = np.clip(np.searchsorted(sorted_pks, lists.item_ids), 0, len(sorted_pks) - 1)
    cols = np.where(sorted_pks[pos] == lists.item_ids, sorted_cols[pos], -1)
    return np.where(cols < 0, False, relevant[rows[:, None], np.where(cols < 0, 0, cols)])
