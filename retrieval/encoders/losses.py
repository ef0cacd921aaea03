"""Triplet (max-margin ranking) losses of a multi-modal embedding and their relevance sets.

Wray et al., ICCV 2019 (JPoSE), §3.1, train each Multi-Modal Embedding Network (MMEN) with
two cross-modal and two within-modal triplet losses (Eq. 1-4) weighted by λ (Eq. 5); Wray
et al., CVPR 2021, §4.3, pick the triplets' positives as the pairs whose semantic similarity
reaches a threshold. Triplets are formed inside a batch: every positive pair against every
in-batch negative.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .base import TrainingData

MARGIN = 0.2
"""Cosine margin γ; JPoSE does not state its value, 0.2 is the usual VSE choice."""


@dataclass(frozen=True)
class LossWeights:
    """λ of Eq. 5; defaults are JPoSE §4.1.1: λ_vt = λ_tv = 1, λ_vv = λ_tt = 0.1."""

    vt: float = 1.0
    tv: float = 1.0
    vv: float = 0.1
    tt: float = 0.1


@dataclass(frozen=True)
class BatchRelevance:
    """Which in-batch pairs are relevant: captions x videos, captions x captions, videos x videos.

    ``text_valid`` marks captions that take part at all (a caption with an empty PoS bag
    says nothing in that PoS space and is left out of its losses).
    """

    tv: torch.Tensor
    tt: torch.Tensor
    vv: torch.Tensor
    text_valid: torch.Tensor | None = None


def triplet_loss(
    anchors: torch.Tensor,
    items: torch.Tensor,
    positive: torch.Tensor,
    *,
    margin: float = MARGIN,
    mining: str = "all",
    anchor_valid: torch.Tensor | None = None,
    item_valid: torch.Tensor | None = None,
    same_set: bool = False,
) -> torch.Tensor:
    """Mean hinge max(0, γ - s(a, p) + s(a, n)) over in-batch triplets (JPoSE Eq. 1-4).

    ``positive`` is bool [anchors, items]; every other valid item is a negative. With
    ``mining="all"`` every in-batch triplet counts (JPoSE §4.1.1 samples random triplets);
    with ``"hard"`` each (anchor, positive) pair meets only its hardest negative (VSE++).
    ``"all"`` builds an anchors x items x items tensor: keep batches to a few hundred.
    ``same_set`` drops the diagonal (within-modal).
    Embeddings are unit vectors, so s is the cosine and d = 2 - 2s (Eq. 1 up to scale).
    """
    sim = anchors.float() @ items.float().T
    positive = positive.bool()
    negative = ~positive
    if item_valid is not None:
        positive = positive & item_valid[None, :]
        negative = negative & item_valid[None, :]
    if anchor_valid is not None:
        positive = positive & anchor_valid[:, None]
    if same_set:
        eye = torch.eye(len(anchors), dtype=torch.bool, device=sim.device)
        positive, negative = positive & ~eye, negative & ~eye
    has_negative = negative.any(1, keepdim=True)
    positive = positive & has_negative
    if not bool(positive.any()):
        return sim.sum() * 0.0
    if mining == "hard":
        hardest = sim.masked_fill(~negative, float("-inf")).amax(1, keepdim=True)
        hinge = torch.relu(margin - sim + hardest)
        return hinge[positive].mean()
    if mining == "all":
        hinge = torch.relu(margin - sim.unsqueeze(2) + sim.unsqueeze(1))  # [a, p, n]
        valid = positive.unsqueeze(2) & negative.unsqueeze(1)
        return hinge[valid].mean()
    raise ValueError(f"unknown mining {mining!r}: use 'hard' or 'all'")


def mmen_loss(
    videos: torch.Tensor,
    texts: torch.Tensor,
    relevance: BatchRelevance,
    *,
    weights: LossWeights = LossWeights(),
    margin: float = MARGIN,
    mining: str = "all",
) -> torch.Tensor:
    """Eq. 5: λ_vt L_vt + λ_tv L_tv + λ_vv L_vv + λ_tt L_tt on one batch."""
    valid = relevance.text_valid
    common = {"margin": margin, "mining": mining}
    loss = weights.vt * triplet_loss(videos, texts, relevance.tv.T, item_valid=valid, **common)
    loss = loss + weights.tv * triplet_loss(
        texts, videos, relevance.tv, anchor_valid=valid, **common
    )
    if weights.vv:
        loss = loss + weights.vv * triplet_loss(
            videos, videos, relevance.vv, same_set=True, **common
        )
    if weights.tt:
        loss = loss + weights.tt * triplet_loss(
            texts,
            texts,
            relevance.tt,
            anchor_valid=valid,
            item_valid=valid,
            same_set=True,
            **common,
        )
    return loss


def batch_relevance(
    data: TrainingData, caption_idx: np.ndarray, video_idx: np.ndarray, device: torch.device
) -> BatchRelevance:
    """PoS-agnostic relevance inside a batch, from ``data.positive_mask``.

    Two captions are relevant when they describe the same video or each is relevant to the
    other's video; two videos are relevant when a caption of each (in the batch) is
    relevant to the other. With instance relevance only a caption's own video counts.
    """
    tv = data.positive_mask(caption_idx, video_idx)
    origin = data.caption_video[caption_idx]
    column = np.searchsorted(video_idx, origin)
    own = np.zeros_like(tv)
    own[np.arange(len(origin)), column] = True
    cross = tv[:, column]  # caption i relevant to caption k's video
    tt = (origin[:, None] == origin[None, :]) | (cross & cross.T)
    reach = (own.T.astype(np.float32) @ tv.astype(np.float32)) > 0  # video j's captions -> l
    vv = reach & reach.T
    return BatchRelevance(
        tv=torch.from_numpy(tv).to(device),
        tt=torch.from_numpy(tt).to(device),
        vv=torch.from_numpy(vv).to(device),
    )


class BagRelevance:
    """PoS-aware relevance (JPoSE §3.2) from the lemma bags of one part of speech.

    EPIC defines it by verb or noun classes (§4.1); without classes we use the bags: a
    caption is relevant to a video when its bag is contained in the union of the bags of
    that video's captions, to a caption whose bag contains its own, and two videos are
    relevant when their bag unions overlap with Jaccard >= ``video_jaccard``. Captions
    with an empty bag take no part. The ``vocabulary`` most frequent lemmas are kept.
    """

    def __init__(
        self,
        bags: list[tuple[str, ...]],
        caption_video: np.ndarray,
        n_videos: int,
        *,
        vocabulary: int = 4096,
        video_jaccard: float = 0.5,
    ) -> None:
        counts: dict[str, int] = {}
        for bag in bags:
            for word in set(bag):
                counts[word] = counts.get(word, 0) + 1
        words = sorted(counts, key=lambda w: (-counts[w], w))[:vocabulary]
        index = {w: i for i, w in enumerate(words)}
        self.captions = np.zeros((len(bags), max(1, len(words))), dtype=bool)
        for i, bag in enumerate(bags):
            for word in bag:
                if word in index:
                    self.captions[i, index[word]] = True
        self.videos = np.zeros((n_videos, self.captions.shape[1]), dtype=bool)
        np.logical_or.at(self.videos, caption_video, self.captions)
        self.caption_video = caption_video
        self.video_jaccard = video_jaccard

    def batch(
        self, caption_idx: np.ndarray, video_idx: np.ndarray, device: torch.device
    ) -> BatchRelevance:
        c = torch.from_numpy(self.captions[caption_idx]).to(device, torch.float32)
        v = torch.from_numpy(self.videos[video_idx]).to(device, torch.float32)
        origin = torch.from_numpy(self.caption_video[caption_idx]).to(device)
        vids = torch.from_numpy(video_idx).to(device)
        own = origin[:, None] == vids[None, :]
        tv = ((c @ (1 - v).T) == 0) | own
        same = origin[:, None] == origin[None, :]
        tt = ((c @ (1 - c).T) == 0) | same
        inter = v @ v.T
        union = v.sum(1, keepdim=True) + v.sum(1) - inter
        vv = inter >= self.video_jaccard * union.clamp_min(1)
        valid = c.sum(1) > 0
        return BatchRelevance(tv=tv, tt=tt, vv=vv & (union > 0), text_valid=valid)
