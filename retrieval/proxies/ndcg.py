"""nDCG with graded (proxy) relevance over whole similarity matrices (Wray et al., CVPR 2021). Per
query (§4.2, Eq. 2) items of the other modality are ranked by similarity, item j at rank r adding
gain(S_qj) / log2(r + 1) down to rank |R_q| (the query's items with S > 0), over the ideal sum; gain
is S as in the authors' code, or 2^S - 1 with ``gain="exp"``. A model's score is the mean of both
directions (Eq. 3). An item a run did not retrieve (similarity -inf) earns nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

GAINS = ("linear", "exp")
BLOCK = 512


def _gain(values: np.ndarray, gain: str) -> np.ndarray:
    if gain == "linear":
        return values
    if gain == "exp":
        return np.exp2(values) - 1.0
    raise ValueError(f"unknown gain {gain!r}: use one of {', '.join(GAINS)}")


def _ranking(similarity: np.ndarray, top: int) -> np.ndarray:
    """Column indices of each row's ``top`` best items, best first (ties: lower index)."""
    n = similarity.shape[1]
    if top >= n // 8:
        return np.argsort(-similarity, axis=1, kind="stable")[:, :top]
    part = np.argpartition(-similarity, top - 1, axis=1)[:, :top]
    values = np.take_along_axis(similarity, part, axis=1)
    order = np.lexsort((part, -values), axis=1)
    return np.take_along_axis(part, order, axis=1)


def ndcg_per_query(
    similarity: np.ndarray,
    relevance: np.ndarray,
    *,
    gain: str = "linear",
) -> np.ndarray:
    """nDCG of each row (query); NaN where the query has no relevant item. ``similarity`` and
    ``relevance`` are [queries, items]; -inf marks unretrieved items."""
    similarity = np.asarray(similarity, dtype=np.float32)
    relevance = np.asarray(relevance, dtype=np.float64)
    if similarity.shape != relevance.shape:
        raise ValueError(f"similarity {similarity.shape} and relevance {relevance.shape} differ")
    n_queries, n_items = relevance.shape
    out = np.full(n_queries, np.nan)
    if n_items == 0:
        return out
    discount = 1.0 / np.log2(np.arange(2, n_items + 2, dtype=np.float64))
    for start in range(0, n_queries, BLOCK):
        rel = relevance[start : start + BLOCK]
        k = (rel > 0).sum(axis=1)
        top = int(k.max(initial=0))
        if top == 0:
            continue
        block = similarity[start : start + BLOCK]
        ranked = _ranking(block, top)
        retrieved = np.isfinite(np.take_along_axis(block, ranked, axis=1))
        gains = _gain(np.take_along_axis(rel, ranked, axis=1), gain) * retrieved
        ideal = _gain(-np.sort(-rel, axis=1)[:, :top], gain)
        ranks = np.arange(top)
        inside = ranks[None, :] < k[:, None]
        dcg = gains * discount[:top] * inside
        idcg = (ideal * discount[:top] * inside).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + len(rel)] = np.where(k > 0, dcg.sum(axis=1) / idcg, np.nan)
    return out


def average_precision_per_query(similarity: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """AP of each row against a 0/1 relevance; NaN where the query has no relevant item."""
    similarity = np.asarray(similarity, dtype=np.float32)
    relevant = np.asarray(relevant, dtype=bool)
    n_queries, n_items = relevant.shape
    out = np.full(n_queries, np.nan)
    for start in range(0, n_queries, BLOCK):
        rel = relevant[start : start + BLOCK]
        total = rel.sum(axis=1)
        if not total.any() or n_items == 0:
            continue
        block = similarity[start : start + BLOCK]
        ranked = _ranking(block, n_items)
        hits = np.take_along_axis(rel, ranked, axis=1)
        hits &= np.isfinite(np.take_along_axis(block, ranked, axis=1))
        precision = np.cumsum(hits, axis=1) / np.arange(1, n_items + 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ap = (precision * hits).sum(axis=1) / total
        out[start : start + len(rel)] = np.where(total > 0, ap, np.nan)
    return out


@dataclass(frozen=True)
class DirectionalScore:
    """A metric over both retrieval directions (Eq. 3); None where a direction is absent."""

    v2t: float | None
    t2v: float | None
    v2t_queries: int
    t2v_queries: int

    @property
    def mean(self) -> float | None:
        present = [x for x in (self.v2t, self.t2v) if x is not None]
        return float(np.mean(present)) if present else None


def _mean(values: np.ndarray) -> tuple[float | None, int]:
    valid = values[~np.isnan(values)]
    return (float(valid.mean()) if len(valid) else None), int(len(valid))


def _directional(
    per_query: Callable[[np.ndarray, np.ndarray], np.ndarray],
    video_text_similarity: np.ndarray | None,
    relevance: np.ndarray,
    text_video_similarity: np.ndarray | None,
    text_rows: np.ndarray | None,
) -> DirectionalScore:
    """Both directions' means of ``per_query`` from a [videos, texts] similarity, or
    text-to-video only from a run's [queries, videos] similarity and its ``text_rows``."""
    if video_text_similarity is not None:
        v2t, n_v = _mean(per_query(video_text_similarity, relevance))
        t2v, n_t = _mean(per_query(video_text_similarity.T, relevance.T))
        return DirectionalScore(v2t, t2v, n_v, n_t)
    if text_video_similarity is None or text_rows is None:
        raise ValueError("give a video-text similarity, or a run's similarity and its rows")
    t2v, n_t = _mean(per_query(text_video_similarity, relevance.T[text_rows]))
    return DirectionalScore(None, t2v, 0, n_t)


def semantic_ndcg(
    video_text_similarity: np.ndarray | None,
    video_text_relevance: np.ndarray,
    *,
    gain: str = "linear",
    text_video_similarity: np.ndarray | None = None,
    text_rows: np.ndarray | None = None,
) -> DirectionalScore:
    """Eq. 3 from a model's [videos, texts] similarity (both directions), or text-to-video
    only from a run (``text_video_similarity`` with ``text_rows``, -inf = unretrieved)."""
    return _directional(
        partial(ndcg_per_query, gain=gain),
        video_text_similarity,
        video_text_relevance,
        text_video_similarity,
        text_rows,
    )


def thresholded_map(
    video_text_similarity: np.ndarray | None,
    video_text_relevance: np.ndarray,
    threshold: float,
    *,
    text_video_similarity: np.ndarray | None = None,
    text_rows: np.ndarray | None = None,
) -> DirectionalScore:
    """mAP with relevance S >= ``threshold`` counted as relevant, in both directions."""
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must lie in (0, 1], got {threshold}")
    relevant = video_text_relevance >= threshold
    return _directional(
        average_precision_per_query,
        video_text_similarity,
        relevant,
        text_video_similarity,
        text_rows,
    )
