"""Set overlap (IoU) between many word sets at once (Wray et al., CVPR 2021, §4.4 Eq. 6-8):
intersections are one sparse matrix product, unions |a| + |b| - |a ∩ b|, no loop over pairs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from scipy import sparse

VIDEO_WORD_SHARE = 0.25
"""A video with several captions keeps the words found in at least this share of them
(Wray et al., CVPR 2021, §5, for MSR-VTT's 20 captions per video)."""


def incidence(
    sets: Sequence[Iterable[str]], vocabulary: dict[str, int] | None = None
) -> tuple[sparse.csr_matrix, dict[str, int]]:
    """0/1 CSR matrix [sets, vocabulary]; the vocabulary grows with new words when given."""
    vocabulary = {} if vocabulary is None else vocabulary
    indptr = [0]
    indices: list[int] = []
    for members in sets:
        for word in set(members):
            indices.append(vocabulary.setdefault(word, len(vocabulary)))
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float32)
    matrix = sparse.csr_matrix(
        (data, np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
        shape=(len(indptr) - 1, max(len(vocabulary), 1)),
    )
    matrix.sort_indices()
    return matrix, vocabulary


def group_sets(
    captions: sparse.csr_matrix, group_of: np.ndarray, n_groups: int
) -> sparse.csr_matrix:
    """Each group's (video's) set: words in at least :data:`VIDEO_WORD_SHARE` of its captions."""
    group_of = np.asarray(group_of, dtype=np.int64)
    membership = sparse.csr_matrix(
        (np.ones(len(group_of), dtype=np.float32), (group_of, np.arange(len(group_of)))),
        shape=(n_groups, captions.shape[0]),
    )
    counts = (membership @ captions).tocsr()
    sizes = np.bincount(group_of, minlength=n_groups).astype(np.float64)
    rows = np.repeat(np.arange(n_groups), np.diff(counts.indptr))
    keep = counts.data >= VIDEO_WORD_SHARE * sizes[rows] - 1e-9
    kept = sparse.csr_matrix(
        (np.ones(int(keep.sum()), dtype=np.float32), (rows[keep], counts.indices[keep])),
        shape=counts.shape,
    )
    kept.sort_indices()
    return kept


def iou_matrix(a: sparse.csr_matrix, b: sparse.csr_matrix, *, block: int = 2048) -> np.ndarray:
    """float32 [len(a), len(b)]: |a_i ∩ b_j| / |a_i ∪ b_j|, 0 where the union is empty; ``block``
    rows at a time so the dense output is the only large allocation."""
    a, b = sparse.csr_matrix(a), sparse.csr_matrix(b)
    width = max(a.shape[1], b.shape[1])  # the same vocabulary, one possibly grown since
    a, b = (sparse.csr_matrix((m.data, m.indices, m.indptr), (m.shape[0], width)) for m in (a, b))
    out = np.zeros((a.shape[0], b.shape[0]), dtype=np.float32)
    size_b = np.diff(b.indptr).astype(np.float32)
    bt = b.T.tocsc()
    for start in range(0, a.shape[0], block):
        rows = a[start : start + block]
        inter = (rows @ bt).toarray().astype(np.float32)
        union = np.diff(rows.indptr).astype(np.float32)[:, None] + size_b[None, :] - inter
        np.divide(inter, union, out=out[start : start + len(inter)], where=union > 0)
    return out
