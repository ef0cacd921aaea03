"""Pure: a run's expected per-query metric values when each pooled pair is relevant with a
probability, independently of the others: the predictions ``f`` that
:mod:`retrieval.scoring.active_inference` corrects with human values. The expectations are exact
under that independence (no plug-in), so a query judged in full (probabilities 0 or 1) gets
exactly what :func:`retrieval.scoring.metrics.evaluate` gives it; metrics follow its
definitions (binary gains, R over every pooled pair, 0 when R is 0)."""

from collections.abc import Sequence

import numpy as np

from retrieval.scoring import metrics

CELLS_PER_CHUNK = 1 << 22  # the most array cells one block of queries works on at once


def _probabilities(name: str, values: np.ndarray, rows: int | None) -> np.ndarray:
    p = np.asarray(values, dtype=np.float64)
    if p.ndim != 2 or (rows is not None and p.shape[0] != rows):
        raise ValueError(f"{name} must be a queries x items array, one row per query")
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError(f"{name} must be probabilities in [0, 1]")
    return p


def _compact(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's non-zero probabilities moved to the front, in order, with their 1-based
    columns; trailing columns that are zero in every row dropped (zeros count for nothing)."""
    order = np.argsort(p == 0, axis=1, kind="stable")
    width = int(np.count_nonzero(p, axis=1).max(initial=0))
    order = order[:, :width]
    return np.take_along_axis(p, order, axis=1), order + 1


def expected_metrics(
    listed: np.ndarray,
    outside: np.ndarray | None = None,
    ks: Sequence[int] = metrics.DEFAULT_KS,
    *,
    ndcg_k: int = 10,
) -> dict[str, np.ndarray]:
    """Expected C@K for each K, AP and nDCG@``ndcg_k`` per query (keys as
    :func:`metrics.evaluate`'s). ``listed`` (queries x depth) holds the probability of relevance
    of the run's ranked items, 0 for items outside the pool and for padding; ``outside`` (queries
    x anything, zero-padded) the probabilities of the query's other pooled pairs, which count in R
    (the number of relevant items, whose expectation is the sum of both). Under independence:

    * C@K = 1 - prod over the top K of (1 - p), exactly.
    * AP = (1/R) sum_k rel_k (hits in the top k)/k (FIRE §2.1 Eq. 2) is not linear in the labels,
      and a plug-in of E[R] would bias it; its exact expectation uses
      E[1/(c + S)] = int_0^1 t^(c-1) E[t^S] dt for a sum S of independent Bernoullis, so that
      E[AP] = int_0^1 G(t) sum_k (a_k/k) (1 + t sum_{j<k} a_j) dt, with G(t) = prod over every
      pooled pair of (1 - p + p t) and a_i = p_i / (1 - p_i + p_i t). The integrand is a
      polynomial of degree below n (the pairs with p > 0), so Gauss-Legendre quadrature with
      n/2 + 1 nodes is exact: O(n^2) per query.
    * nDCG@k = DCG / IDCG(min(R, k)): DCG is linear, but the ideal depends on R; exactly,
      E = sum_{i<=k} d_i p_i E[1 / IDCG(min(1 + S_-i, k))] with S_-i the relevant pairs other
      than item i, whose distribution (truncated at k - 1) comes from one pass over the pairs:
      O(n k^2) per query."""
    listed = _probabilities("listed", listed, None)
    rows = listed.shape[0]
    outside = np.zeros((rows, 0)) if outside is None else _probabilities("outside", outside, rows)
    ks = tuple(ks)
    if any(int(k) != k or k < 1 for k in (*ks, ndcg_k)):
        raise ValueError("cutoffs must be positive integers")
    miss_so_far, width = np.cumprod(1 - listed, axis=1), listed.shape[1]
    expected = {
        f"C@{k}": 1 - miss_so_far[:, min(k, width) - 1] if width else np.zeros(rows) for k in ks
    }
    ap, ndcg = np.zeros(rows), np.zeros(rows)
    per_row = max(width + outside.shape[1], 1) ** 2
    step = max(CELLS_PER_CHUNK // per_row, 1)
    for start in range(0, rows, step):
        block = slice(start, start + step)
        ap[block] = _expected_ap(listed[block], outside[block])
        ndcg[block] = _expected_ndcg(listed[block], outside[block], ndcg_k)
    expected["AP"] = ap
    expected[f"nDCG@{ndcg_k}"] = ndcg
    return expected


def _expected_ap(listed: np.ndarray, outside: np.ndarray) -> np.ndarray:
    """E[AP] per query by exact Gauss-Legendre quadrature of the integral in
    :func:`expected_metrics`."""
    p, ranks = _compact(listed)
    rest, _ = _compact(outside)
    if p.shape[1] == 0:
        return np.zeros(listed.shape[0])
    degree = int((np.count_nonzero(p, axis=1) + np.count_nonzero(rest, axis=1)).max())
    nodes, weights = np.polynomial.legendre.leggauss(degree // 2 + 1)
    t, w = (nodes + 1) / 2, weights / 2  # from [-1, 1] to [0, 1]
    factor = 1 - p[:, None, :] + p[:, None, :] * t[None, :, None]  # queries x nodes x items
    a = p[:, None, :] / factor
    log_g = np.log(factor).sum(axis=2)
    if rest.shape[1]:
        log_g += np.log(1 - rest[:, None, :] + rest[:, None, :] * t[None, :, None]).sum(axis=2)
    before = np.cumsum(a, axis=2) - a  # sum of a_j over the listed items above item k
    inner = ((a / ranks[:, None, :]) * (1 + t[None, :, None] * before)).sum(axis=2)
    return (np.exp(log_g) * inner) @ w


def _expected_ndcg(listed: np.ndarray, outside: np.ndarray, k: int) -> np.ndarray:
    """E[nDCG@k] per query: for each of the top k items, the distribution of the other pairs'
    relevant count, truncated (the last bin holds k - 1 or more), built one pair at a time."""
    top = listed[:, :k]
    rows, width = top.shape
    discount = 1.0 / np.log2(np.arange(2, width + 2, dtype=np.float64))
    ideal = np.cumsum(1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64)))
    inverse_ideal = 1.0 / ideal  # for 1 + S_-i = 1 .. k relevant
    others, _ = _compact(np.concatenate([listed[:, k:], outside], axis=1))
    counts = np.zeros((rows, width, k))
    counts[:, :, 0] = 1.0
    pairs = [top[:, j : j + 1] * (np.arange(width) != j) for j in range(width)]
    pairs += [others[:, j : j + 1] * np.ones(width) for j in range(others.shape[1])]
    for q in pairs:  # q: queries x top items, the pair's probability (0 for the item itself)
        q = q[:, :, None]
        shifted = np.concatenate([np.zeros((rows, width, 1)), counts[:, :, :-1]], axis=2)
        shifted[:, :, -1] += counts[:, :, -1]  # the last bin keeps what passes k - 1
        counts = counts * (1 - q) + shifted * q
    return ((counts @ inverse_ideal) * top) @ discount
