"""Which ranked videos of a run are positives: each caption's own video (FIRE §2.1), or the
synthetic dataset's exhaustive ground truth."""

import numpy as np

from config.batches import rows_in
from retrieval.datasets.demo.service import DemoError, ground_truth_relevance
from retrieval.models import Caption, Run
from retrieval.search.runs import RankedLists
from retrieval.search.runs_service import KeyIndex, load_run


def original_hits(run: Run, lists: RankedLists | None = None) -> np.ndarray:
    """Bool queries x depth: the ranked video is the caption's own video."""
    lists = lists or load_run(run)
    captions = Caption.objects.values_list("pk", "video_id")
    origin = dict(rows_in(captions, "pk", lists.query_ids.tolist()))
    own = np.array([origin[int(pk)] for pk in lists.query_ids], dtype=np.int64)
    return lists.item_ids == own[:, None]


def ground_truth_hits(run: Run) -> np.ndarray:
    """Bool queries x depth under the dataset's exhaustive ground truth (demo world); a query
    or video without stored ground truth is refused, since its hits cannot be known."""
    lists = load_run(run)
    caption_keys, video_keys, relevant = ground_truth_relevance(
        run.dataset, caption_ids=lists.query_ids.tolist()
    )
    row_of_key = {key: i for i, key in enumerate(caption_keys)}
    col_of_key = {key: j for j, key in enumerate(video_keys)}
    videos = KeyIndex.videos(run.dataset)
    if len(row_of_key) < len(lists.query_ids) or len(col_of_key) < len(videos.keys):
        raise DemoError(
            f'Dataset "{run.dataset.name}" has captions or videos without stored ground truth.'
        )
    rows = np.array(
        [row_of_key[key] for key in KeyIndex.captions(run.dataset).keys_of(lists.query_ids)],
        dtype=np.int64,
    )
    column = np.array([col_of_key[key] for key in videos.keys], dtype=np.int64)
    pos = videos.positions(lists.item_ids)
    cols = column[np.where(pos < 0, 0, pos)]
    return (pos >= 0) & relevant[rows[:, None], cols]
