"""Turn a model's embeddings into a run: index the split's videos (all embedded ones when none
has a split), search its query captions; IVF and HNSW runs store their recall@k vs exact."""

import time
from dataclasses import dataclass

import numpy as np

from config.errors import UserError
from retrieval.ids import positions_of
from retrieval.models import Caption, RetrievalModel, Run, Video
from retrieval.search import index as faiss_index
from retrieval.search.artifacts import StoredEmbeddings, load_embeddings, model_dir, relative
from retrieval.search.runs import RankedLists
from retrieval.search.runs_service import store_run


class PredictError(UserError):
    """The model cannot be searched as asked (no embeddings, no queries)."""


@dataclass(frozen=True)
class Collection:
    """What one search covers: query caption rows and collection video rows of embeddings."""

    query_pks: np.ndarray
    query_vectors: np.ndarray
    video_pks: np.ndarray
    video_vectors: np.ndarray


def collection_for(model: RetrievalModel, embeddings: StoredEmbeddings, split: str) -> Collection:
    """Select the split's query captions and collection videos among the embedded rows."""
    dataset = model.dataset
    query_pks = _pks(Caption.objects.filter(dataset=dataset, split=split, is_query=True))
    if query_pks.size == 0:
        raise PredictError(f"dataset {dataset.name!r} has no query captions in split {split!r}")
    rows = positions_of(embeddings.caption_ids, query_pks)  # the ids are distinct
    if (rows < 0).any():
        raise PredictError(
            f"model {model.name!r} has no embedding for {(rows < 0).sum()} of {query_pks.size} query captions"
        )
    video_pks = _pks(Video.objects.filter(dataset=dataset, split=split))
    # Every embedded video where no video has this split.
    embedded = np.isin(embeddings.video_ids, video_pks) | (video_pks.size == 0)
    if not embedded.any():
        raise PredictError(f"model {model.name!r} has no embedding for any {split!r} video")
    return Collection(
        query_pks=query_pks,
        query_vectors=embeddings.captions[rows],
        video_pks=embeddings.video_ids[embedded],
        video_vectors=embeddings.videos[embedded],
    )


def _pks(rows) -> np.ndarray:
    """The primary keys of a queryset's rows, ascending."""
    return np.array(rows.order_by("pk").values_list("pk", flat=True), dtype=np.int64)


def build_exact_index(model: RetrievalModel, split: str = "test") -> int:
    """Build and save the exact index over the split's (new) embeddings; return its size."""
    collection = collection_for(model, load_embeddings(model), split)
    return int(exact_index(model, collection, split, rebuild=True).ntotal)


def exact_index(
    model: RetrievalModel, collection: Collection, split: str, *, rebuild: bool = False
):
    """The model's saved exact index for ``split`` if it covers this collection (by the video
    ids saved beside it), else a new one, saved; ``rebuild`` after new embeddings."""
    directory = model_dir(model)
    path, ids_path = directory / f"index-{split}.faiss", directory / f"index-{split}-ids.npy"
    if (
        not rebuild
        and path.exists()
        and ids_path.exists()
        and np.array_equal(np.load(ids_path), collection.video_pks)
    ):
        return faiss_index.load_index(path)
    index = faiss_index.build_index(collection.video_vectors, "exact")
    faiss_index.save_index(index, path)
    np.save(ids_path, collection.video_pks)
    model.index = relative(path)
    model.save(update_fields=["index", "updated_at"])
    return index


def predict(
    model: RetrievalModel,
    *,
    k: int = 20,
    split: str = "test",
    index_kind: faiss_index.IndexKind = "exact",
    nlist: int | None = None,
    nprobe: int | None = None,
    ef_search: int | None = None,
) -> Run:
    """Search the top ``k`` videos for every query caption and store the run."""
    if model.source == RetrievalModel.Source.RUN:
        raise PredictError(
            f"model {model.name!r} was registered from a run file; it has no embeddings"
        )
    collection = collection_for(model, load_embeddings(model), split)
    n_videos = len(collection.video_pks)  # settings it cannot honour are refused before building
    if nlist is not None and not 1 <= nlist <= n_videos:
        raise PredictError(f"nlist must be between 1 and {n_videos} (the video count), got {nlist}")
    for name, value in (("nprobe", nprobe), ("ef_search", ef_search)):
        if value is not None and value < 1:
            raise PredictError(f"{name} must be at least 1, got {value}")
    started = time.perf_counter()
    if index_kind == "exact":
        index = exact_index(model, collection, split)
    else:
        index = faiss_index.build_index(
            collection.video_vectors, index_kind, nlist=nlist, nprobe=nprobe, ef_search=ef_search
        )
    scores, rows = faiss_index.search(index, collection.query_vectors, k)
    metadata: dict = {
        "split": split,
        "index": index_kind,
        "collection_size": n_videos,
        "search_seconds": round(time.perf_counter() - started, 4),
    }
    if index_kind != "exact":
        exact = exact_index(model, collection, split)
        _, exact_rows = faiss_index.search(exact, collection.query_vectors, k)
        metadata["recall_at_k_vs_exact"] = faiss_index.recall_at_k(rows, exact_rows)
    item_ids = np.where(rows < 0, -1, collection.video_pks[np.where(rows < 0, 0, rows)])
    lists = RankedLists(collection.query_pks, item_ids, scores.astype(np.float64))
    return store_run(model, model.name, lists, metadata=metadata)
