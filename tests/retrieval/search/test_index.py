"""faiss indexes must agree with brute-force numpy search, and approximate ones come close."""

import faiss
import numpy as np
import pytest

from retrieval.search.index import (
    build_index,
    load_index,
    recall_at_k,
    save_index,
    search,
    sort_hits,
)


def normalised(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def brute_force(videos: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Cosine top-k in float64, ordered by score descending then id ascending."""
    scores = normalised(queries.astype(np.float64)) @ normalised(videos.astype(np.float64)).T
    ids = np.broadcast_to(np.arange(len(videos)), scores.shape)
    order = np.lexsort((ids, -scores), axis=-1)
    return np.take_along_axis(scores, order, axis=1), order


def clustered(rng: np.random.Generator, n: int, centres: np.ndarray, spread: float) -> np.ndarray:
    """Points around randomly chosen centres, like real (clustered) embeddings."""
    labels = rng.integers(len(centres), size=n)
    noise = rng.standard_normal((n, centres.shape[1])) * spread / np.sqrt(centres.shape[1])
    return (centres[labels] + noise).astype(np.float32)


@pytest.mark.parametrize(
    ("n", "d", "k"), [(1, 4, 1), (50, 8, 5), (1000, 32, 10), (3000, 64, 100), (2000, 512, 10)]
)
def test_exact_matches_brute_force(n, d, k):
    rng = np.random.default_rng(n + d + k)
    videos = rng.standard_normal((n, d)).astype(np.float32)
    queries = rng.standard_normal((40, d)).astype(np.float32)
    scores, ids = search(build_index(videos), queries, k, batch_size=16)
    expected_scores, expected_ids = brute_force(videos, queries, k + 1)
    assert scores.shape == ids.shape == (40, min(k, n))
    assert scores.dtype == np.float32 and ids.dtype == np.int64
    k = min(k, n)
    np.testing.assert_allclose(scores, expected_scores[:, :k], atol=1e-5)
    # Where a score is clear of its neighbours (and of the first score left out), the id
    # at that rank is determined and must match.
    padded = np.concatenate([[np.full(40, np.inf)], expected_scores.T, [np.full(40, -np.inf)]]).T
    gaps = np.minimum(
        padded[:, 1 : k + 1] - padded[:, 2 : k + 2], padded[:, :k] - padded[:, 1 : k + 1]
    )
    clear = gaps > 1e-5
    assert clear.mean() > 0.5
    np.testing.assert_array_equal(ids[clear], expected_ids[:, :k][clear])


def test_equal_scores_are_ordered_by_ascending_id():
    # Small integer vectors make every dot product exact, so ties are real ties.
    rng = np.random.default_rng(1)
    videos = rng.integers(0, 2, size=(60, 4)).astype(np.float32)
    queries = rng.integers(0, 2, size=(10, 4)).astype(np.float32) + np.eye(10, 4, dtype=np.float32)
    scores, ids = search(build_index(videos, normalize=False), queries, 60, normalize=False)
    assert len(np.unique(scores)) < 10
    for row_scores, row_ids in zip(scores.tolist(), ids.tolist(), strict=True):
        assert sorted(row_ids) == list(range(60))
        keys = [(-score, i) for score, i in zip(row_scores, row_ids, strict=True)]
        assert keys == sorted(keys)
    exact = queries @ videos.T
    np.testing.assert_array_equal(scores, np.take_along_axis(exact, ids, axis=1))


def test_k_larger_than_the_collection_is_clipped():
    rng = np.random.default_rng(2)
    videos = rng.standard_normal((5, 16))
    scores, ids = search(build_index(videos), rng.standard_normal((3, 16)), 10)
    assert ids.shape == scores.shape == (3, 5)
    assert all(sorted(row) == list(range(5)) for row in ids.tolist())
    assert np.all(np.diff(scores, axis=1) <= 0)


@pytest.mark.parametrize(
    ("kind", "options"),
    [("ivf", {"nlist": 64, "nprobe": 8}), ("ivf", {}), ("hnsw", {"ef_search": 64})],
)
def test_approximate_recall_on_clustered_data(kind, options):
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((100, 64))
    videos = clustered(rng, 8000, centres, spread=1.0)
    queries = clustered(rng, 300, centres, spread=1.0)
    _, exact_ids = search(build_index(videos), queries, 10)
    _, approx_ids = search(build_index(videos, kind, **options), queries, 10)
    assert recall_at_k(approx_ids, exact_ids) >= 0.9


def test_ivf_probing_every_list_is_exact():
    rng = np.random.default_rng(4)
    videos = rng.standard_normal((2000, 32))
    queries = rng.standard_normal((50, 32))
    index = build_index(videos, "ivf", nlist=20, nprobe=1)
    exact_scores, exact_ids = search(build_index(videos), queries, 10)
    scores, ids = search(index, queries, 10, nprobe=20)
    np.testing.assert_allclose(scores, exact_scores, atol=1e-5)
    assert recall_at_k(ids, exact_ids) == 1.0
    assert index.nprobe == 1, "a per-call nprobe must not change the index"


@pytest.mark.parametrize("kind", ["exact", "ivf", "hnsw"])
def test_save_and_load_give_identical_results(tmp_path, kind):
    rng = np.random.default_rng(5)
    videos = rng.standard_normal((1500, 24))
    queries = rng.standard_normal((30, 24))
    index = build_index(videos, kind, nlist=16, nprobe=3, ef_search=20)
    (tmp_path / "indexes").mkdir()
    path = tmp_path / "indexes" / f"{kind}.faiss"
    save_index(index, path)
    loaded = load_index(path)
    assert type(loaded) is type(index) and loaded.ntotal == 1500
    for expected, actual in zip(search(index, queries, 7), search(loaded, queries, 7), strict=True):
        np.testing.assert_array_equal(actual, expected)
    assert [p.name for p in path.parent.iterdir()] == [path.name], "no partial file is left"


def test_threads_and_blas_block_are_restored():
    rng = np.random.default_rng(6)
    videos = rng.standard_normal((500, 16))
    queries = rng.standard_normal((20, 16))
    before = faiss.omp_get_max_threads(), faiss.cvar.distance_compute_blas_database_bs
    index = build_index(videos, "ivf", nlist=8, threads=1)
    one = search(index, queries, 5, threads=1)
    assert (faiss.omp_get_max_threads(), faiss.cvar.distance_compute_blas_database_bs) == before
    for expected, actual in zip(one, search(index, queries, 5), strict=True):
        np.testing.assert_array_equal(actual, expected)


def test_recall_at_k_counts_overlap_per_query():
    exact = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    approx = np.array([[3, 2, 9, 8], [4, 5, 6, -1]])
    assert recall_at_k(approx, exact) == pytest.approx((2 / 4 + 3 / 4) / 2)
    assert recall_at_k(exact, exact) == 1.0


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        (np.zeros(4), "2-D"),
        (np.zeros((0, 4)), "zero vectors"),
        (np.array([[1.0, np.nan]]), "NaN"),
    ],
)
def test_bad_vectors_are_rejected(vectors, message):
    with pytest.raises(ValueError, match=message):
        build_index(vectors)


def test_bad_arguments_are_rejected():
    videos = np.random.default_rng(7).standard_normal((100, 8))
    index = build_index(videos)
    with pytest.raises(ValueError, match="unknown index kind"):
        build_index(videos, "lsh")
    with pytest.raises(ValueError, match="nlist"):
        build_index(videos, "ivf", nlist=500)
    with pytest.raises(ValueError, match="shape"):
        search(index, np.zeros((2, 9)), 3)
    with pytest.raises(ValueError, match="IVF"):
        search(index, np.zeros((2, 8)), 3, nprobe=2)


def test_sort_hits_puts_missing_hits_last_whatever_the_id_dtype():
    """A missing hit (-1) sorts after every real one, even one scored -inf, also when the ids
    come as int32 (the int64 sentinel must not wrap to -1)."""
    for dtype in (np.int32, np.int64):
        scores, ids = sort_hits(
            np.array([[0.0, -np.inf]], np.float32), np.array([[-1, 4]], dtype=dtype)
        )
        assert ids.tolist() == [[4, -1]], dtype
