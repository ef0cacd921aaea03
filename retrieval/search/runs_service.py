"""ORM-facing: store, load and export runs (a model's ranked videos per query caption), built
on :mod:`retrieval.search.runs`."""

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from django.db import transaction
from django.db.models import ProtectedError

from retrieval.formats import trec
from retrieval.models import Caption, Dataset, RetrievalModel, Run, Video
from retrieval.search.runs import RankedLists, descending_key_rank, trec_sort


class KeyIndex:
    """Dense lookups between primary keys and keys of a dataset's videos or captions."""

    def __init__(self, pks: np.ndarray, keys: Sequence[str]) -> None:
        order = np.argsort(pks, kind="stable")
        self.pks = np.asarray(pks, dtype=np.int64)[order]
        self.keys = [keys[i] for i in order]
        self.by_key = {key: int(pk) for key, pk in zip(self.keys, self.pks, strict=True)}
        self.tiebreak = descending_key_rank(self.keys)

    @classmethod
    def videos(cls, dataset: Dataset) -> "KeyIndex":
        return cls._of(Video, dataset)

    @classmethod
    def captions(cls, dataset: Dataset) -> "KeyIndex":
        return cls._of(Caption, dataset)

    @classmethod
    def _of(cls, table: type[Video] | type[Caption], dataset: Dataset) -> "KeyIndex":
        rows = list(table.objects.filter(dataset=dataset).values_list("pk", "key"))
        return cls(np.array([pk for pk, _ in rows], dtype=np.int64), [key for _, key in rows])

    def positions(self, pks: np.ndarray) -> np.ndarray:
        """Dense positions of ``pks`` (which must all be known; -1 stays -1)."""
        pos = np.searchsorted(self.pks, np.where(pks < 0, self.pks[0], pks))
        return np.where(pks < 0, -1, pos)

    def keys_of(self, pks: np.ndarray) -> list[str]:
        """Keys of ``pks``; padding (-1) has no key, so callers drop it first."""
        pks = np.asarray(pks)
        if (pks < 0).any():
            raise ValueError("padding (-1) has no key; drop it before looking keys up")
        return [self.keys[i] for i in self.positions(pks).tolist()]


@transaction.atomic
def store_run(
    model: RetrievalModel,
    name: str,
    lists: RankedLists,
    *,
    videos: KeyIndex | None = None,
    metadata: dict | None = None,
) -> Run:
    """Save ``lists`` (caption and video primary keys), each row in trec_eval's order (score
    descending, video key descending), as the run ``name`` of ``model``, replacing an earlier
    run of that name."""
    videos = videos or KeyIndex.videos(model.dataset)
    pos = videos.positions(lists.item_ids)
    tiebreak = np.where(pos < 0, 0, videos.tiebreak[np.where(pos < 0, 0, pos)])
    lists = RankedLists(lists.query_ids, *trec_sort(lists.item_ids, lists.scores, tiebreak))
    try:
        Run.objects.filter(dataset=model.dataset, name=name).delete()
    except ProtectedError:
        raise ValueError(
            f"run {name!r} of {model.dataset.name!r} is in use (pooled into a judging "
            "campaign), so it is kept and not replaced; register the model under a new "
            "name to search again"
        ) from None
    return Run.objects.create(
        model=model,
        dataset=model.dataset,
        name=name,
        depth=lists.depth,
        query_count=len(lists),
        arrays=lists.to_bytes(),
        metadata=metadata or {},
    )


def load_run(run: Run) -> RankedLists:
    """The run's arrays (caption pks, video pks, scores) in rank order."""
    return RankedLists.from_bytes(run.arrays)


def run_rankings(run: Run) -> dict[str, list[tuple[str, float]]]:
    """The run as ``{caption key: [(video key, score), ...]}`` in rank order."""
    lists = load_run(run)
    query_keys = KeyIndex.captions(run.dataset).keys_of(lists.query_ids)
    videos = KeyIndex.videos(run.dataset)
    return {
        qid: list(zip(videos.keys_of(ids[ids >= 0]), scores[ids >= 0].tolist(), strict=True))
        for qid, ids, scores in zip(query_keys, lists.item_ids, lists.scores, strict=True)
    }


def export_run(run: Run, destination: Path | str) -> int:
    """Write the run as a TREC run file; return the number of lines written."""
    rankings = run_rankings(run)
    trec.write_run(destination, run.name, rankings)
    return sum(len(ranking) for ranking in rankings.values())
