"""nDCG with graded (proxy) relevance over whole similarity matrices (Wray et al., CVPR 2021).

Wray et al. (CVPR 2021, §4.2) evaluate semantic-similarity retrieval with this nDCG.

For each query every item of the other modality is ranked by the model's similarity;
item j at rank r adds gain(S_qj) / log2(r + 1); the sum stops at the query's number of
items with non-zero relevance, |R_q| (Eq. 2), and is divided by the same sum over the
relevances sorted best first (IDCG). Gain is the relevance itself, as in the authors'
released evaluation code, or 2^S - 1 (Eq. 2 as printed) with ``gain="exp"``. The model's
score is the mean of the video-to-text and the text-to-video means (Eq. 3). Items of
equal relevance may swap places without changing any score.

Run files rank only their top items: an item a run did not retrieve has similarity
-inf and earns nothing (no gain, no precision), whatever its relevance.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """nDCG of each row (query); NaN where the query has no relevant item.

    ``similarity`` and ``relevance`` are [queries, items]; -inf marks unretrieved items.
    """
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


def semantic_ndcg(
    video_text_similarity: np.ndarray | None,
    video_text_relevance: np.ndarray,
    *,
    gain: str = "linear",
    text_video_similarity: np.ndarray | None = None,
    text_rows: np.ndarray | None = None,
) -> DirectionalScore:
    """Eq. 3 from a [videos, texts] similarity; or text-to-video only from a run.

    Give ``video_text_similarity`` for a model with embeddings (both directions over the
    full matrix), or ``text_video_similarity`` [run queries, videos] with ``text_rows``
    (the text item of each row) for a run file (text-to-video only, -inf = unretrieved).
    """
    if video_text_similarity is not None:
        v2t, n_v = _mean(ndcg_per_query(video_text_similarity, video_text_relevance, gain=gain))
        t2v, n_t = _mean(ndcg_per_query(video_text_similarity.T, video_text_relevance.T, gain=gain))
        return DirectionalScore(v2t, t2v, n_v, n_t)
    if text_video_similarity is None or text_rows is None:
        raise ValueError("give a video-text similarity, or a run's similarity and its rows")
    relevance = video_text_relevance.T[text_rows]
    t2v, n_t = _mean(ndcg_per_query(text_video_similarity, relevance, gain=gain))
    return DirectionalScore(None, t2v, 0, n_t)


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
    if video_text_similarity is not None:
        v2t, n_v = _mean(average_precision_per_query(video_text_similarity, relevant))
        t2v, n_t = _mean(average_precision_per_query(video_text_similarity.T, relevant.T))
        return DirectionalScore(v2t, t2v, n_v, n_t)
    if text_video_similarity is None or text_rows is None:
        raise ValueError("give a video-text similarity, or a run's similarity and its rows")
    t2v, n_t = _mean(average_precision_per_query(text_video_similarity, relevant.T[text_rows]))
    return DirectionalScore(None, t2v, 0, n_t)
