"""Build, search, save and load faiss indexes over video embeddings: inner product on
L2-normalised float32 copies (cosine), hits by score descending then id ascending."""

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import faiss
import numpy as np

from retrieval.ids import PairKeys
from retrieval.search.runs import trec_sort

IndexKind = Literal["exact", "ivf", "hnsw"]

SEARCH_BATCH = 8192
"""Queries searched per faiss call, to bound the memory of normalised copies and results."""

BLAS_DATABASE_BLOCK = 4096
"""Indexed vectors per matrix product in exact search; faiss's default of 1024 is ~20% slower
here, and 4096 (by faiss's 4096-query blocks) needs 64 MiB of scratch."""

HNSW_EF_CONSTRUCTION = 80
DEFAULT_EF_SEARCH = 64


def default_nlist(n: int) -> int:
    """IVF lists for ``n`` vectors: about 4 sqrt(n), at most n / 39 (faiss's minimum training
    points per centroid), at least 1."""
    return max(1, min(round(4 * math.sqrt(n)), n // 39))


@contextmanager
def faiss_settings(threads: int | None, blas_block: int | None = None) -> Iterator[None]:
    """Run the block with faiss using ``threads`` OpenMP threads and ``blas_block`` indexed
    vectors per matrix product of exact search (both process-wide; None leaves one as it is),
    then restore both."""
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    previous = faiss.omp_get_max_threads(), faiss.cvar.distance_compute_blas_database_bs
    if threads is not None:
        faiss.omp_set_num_threads(threads)
    if blas_block is not None:
        faiss.cvar.distance_compute_blas_database_bs = blas_block
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous[0])
        faiss.cvar.distance_compute_blas_database_bs = previous[1]


def as_matrix(vectors: np.ndarray, *, normalize: bool = True, name: str = "vectors") -> np.ndarray:
    """A C-contiguous float32 copy of a 2-D array of finite numbers, L2-normalised if asked
    (zero rows stay zero)."""
    array = np.asarray(vectors)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {array.shape}")
    if array.shape[1] == 0:
        raise ValueError(f"{name} have no dimensions")
    matrix = np.array(array, dtype=np.float32, order="C", copy=True)
    if not np.isfinite(matrix).all():
        raise ValueError(f"{name} contain NaN or infinite values")
    if normalize and len(matrix):
        faiss.normalize_L2(matrix)
    return matrix


def build_index(
    vectors: np.ndarray,
    kind: IndexKind = "exact",
    *,
    normalize: bool = True,
    nlist: int | None = None,
    nprobe: int | None = None,
    hnsw_m: int = 32,
    ef_search: int | None = None,
    seed: int = 0,
    threads: int | None = None,
) -> faiss.Index:
    """Index the rows of ``vectors`` (row ``i`` gets id ``i``) for inner-product search:
    ``exact`` (IndexFlatIP), ``ivf`` (IndexIVFFlat, seeded spherical k-means; ``nlist``,
    ``nprobe``) or ``hnsw`` (IndexHNSWFlat; ``hnsw_m``, ``ef_search``), settings saved with it."""
    matrix = as_matrix(vectors, normalize=normalize)
    n, dim = matrix.shape
    if n == 0:
        raise ValueError("cannot index zero vectors")
    with faiss_settings(threads):
        if kind == "exact":
            index = faiss.IndexFlatIP(dim)
        elif kind == "ivf":
            nlist = default_nlist(n) if nlist is None else nlist
            if not 1 <= nlist <= n:
                raise ValueError(f"nlist must be between 1 and {n} (the vector count), got {nlist}")
            quantizer = faiss.IndexFlatIP(dim)
            index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
            index.cp.seed = seed
            index.cp.spherical = normalize
            # By default a 32nd of the lists, erring towards recall.
            index.nprobe = math.ceil(nlist / 32) if nprobe is None else min(nprobe, nlist)
            if index.nprobe < 1:
                raise ValueError(f"nprobe must be at least 1, got {nprobe}")
            index.train(matrix)
        elif kind == "hnsw":
            if hnsw_m < 2:
                raise ValueError(f"hnsw_m must be at least 2, got {hnsw_m}")
            index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            index.hnsw.efSearch = DEFAULT_EF_SEARCH if ef_search is None else ef_search
            if index.hnsw.efSearch < 1:
                raise ValueError(f"ef_search must be at least 1, got {ef_search}")
        else:
            raise ValueError(f"unknown index kind {kind!r}; expected 'exact', 'ivf' or 'hnsw'")
        index.add(matrix)
    return index


def search_parameters(
    index: faiss.Index, nprobe: int | None, ef_search: int | None
) -> faiss.SearchParameters | None:
    """Per-call overrides of an IVF index's ``nprobe`` or an HNSW index's ``efSearch``."""
    if nprobe is not None:
        if not isinstance(index, faiss.IndexIVF):
            raise ValueError("nprobe applies only to an IVF index")
        return faiss.SearchParametersIVF(nprobe=nprobe)
    if ef_search is not None:
        if not isinstance(index, faiss.IndexHNSW):
            raise ValueError("ef_search applies only to an HNSW index")
        return faiss.SearchParametersHNSW(efSearch=ef_search)
    return None


def sort_hits(scores: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order each row by score descending, then id ascending; missing hits (-1) go last."""
    ids = np.asarray(ids, dtype=np.int64)
    ids, scores = trec_sort(ids, np.where(ids < 0, -np.inf, scores).astype(np.float32), ids)
    return scores, ids


def search(
    index: faiss.Index,
    queries: np.ndarray,
    k: int,
    *,
    normalize: bool = True,
    nprobe: int | None = None,
    ef_search: int | None = None,
    batch_size: int = SEARCH_BATCH,
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The top ``k' = min(k, index.ntotal)`` videos per query row: ``(scores float32 [q, k'],
    ids int64 [q, k'])``, missing hits padded with id -1 and score -inf; ``nprobe`` and
    ``ef_search`` override the index's settings for this call."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    queries = np.asarray(queries)
    if queries.ndim != 2 or queries.shape[1] != index.d:
        raise ValueError(f"queries must have shape (q, {index.d}), got {queries.shape}")
    k = min(k, index.ntotal)
    q = len(queries)
    scores = np.empty((q, k), dtype=np.float32)
    ids = np.empty((q, k), dtype=np.int64)
    if q == 0 or k == 0:
        return scores, ids
    params = search_parameters(index, nprobe, ef_search)
    with faiss_settings(threads, BLAS_DATABASE_BLOCK):
        for start in range(0, q, batch_size):
            batch = as_matrix(
                queries[start : start + batch_size], normalize=normalize, name="queries"
            )
            found_scores, found_ids = index.search(batch, k, params=params)
            stop = start + len(batch)
            scores[start:stop], ids[start:stop] = sort_hits(found_scores, found_ids)
    return scores, ids


def recall_at_k(approx_ids: np.ndarray, exact_ids: np.ndarray) -> float:
    """Mean over queries of the share of the exact top-k ids (``[q, k]``, -1 never matches) that
    the approximate search found."""
    approx_ids = np.asarray(approx_ids, dtype=np.int64)
    exact_ids = np.asarray(exact_ids, dtype=np.int64)
    if approx_ids.ndim != 2 or exact_ids.ndim != 2 or len(approx_ids) != len(exact_ids):
        raise ValueError(
            f"expected two [q, k] arrays with the same q, got {approx_ids.shape} and {exact_ids.shape}"
        )
    if len(exact_ids) == 0:
        raise ValueError("recall needs at least one query")
    # One key per (row, id), so one isin call compares rows pairwise; padding is never found.
    exact_rows, exact_cols = np.nonzero(exact_ids >= 0)
    keys = PairKeys.fit(len(exact_ids), exact_ids[exact_rows, exact_cols])
    exact_keys = keys.pack(exact_rows, exact_ids[exact_rows, exact_cols])
    rows = np.arange(len(approx_ids), dtype=np.int64)[:, None]
    approx_keys = keys.encode(rows, approx_ids)
    found = np.isin(approx_keys, exact_keys).sum(axis=1)
    wanted = (exact_ids >= 0).sum(axis=1)
    return float(np.mean(found / np.maximum(wanted, 1)))


def save_index(index: faiss.Index, path: Path | str) -> None:
    """Write ``index`` to ``path`` through a temporary file, so a reader never sees half of it."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    try:
        faiss.write_index(index, str(partial))
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def load_index(path: Path | str) -> faiss.Index:
    """Read an index written by :func:`save_index`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no index file at {path}")
    return faiss.read_index(str(path))
