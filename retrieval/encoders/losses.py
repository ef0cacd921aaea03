"""In-batch triplet losses of a multi-modal embedding (Wray et al., ICCV 2019 (JPoSE), §3.1,
Eq. 1-5) and their relevance sets (positives S >= T: Wray et al., CVPR 2021, §4.3)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import partial

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
    """Relevant in-batch pairs (captions x videos, captions x captions, videos x videos);
    ``text_valid``: captions that take part (not those with an empty PoS bag)."""

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
    """Mean hinge max(0, γ - s(a, p) + s(a, n)) over in-batch triplets (JPoSE Eq. 1-4), s the
    cosine; ``positive`` bool [anchors, items]. ``mining`` "all" (every triplet: an a x i x i
    tensor) or "hard" (hardest negative, VSE++); ``same_set`` drops the diagonal."""
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
    triplets = partial(triplet_loss, margin=margin, mining=mining)
    loss = weights.vt * triplets(videos, texts, relevance.tv.T, item_valid=valid)
    loss = loss + weights.tv * triplets(texts, videos, relevance.tv, anchor_valid=valid)
    if weights.vv:
        loss = loss + weights.vv * triplets(videos, videos, relevance.vv, same_set=True)
    if weights.tt:
        within = {"anchor_valid": valid, "item_valid": valid, "same_set": True}
        loss = loss + weights.tt * triplets(texts, texts, relevance.tt, **within)
    return loss


def batch_relevance(
    data: TrainingData, caption_idx: np.ndarray, video_idx: np.ndarray, device: torch.device
) -> BatchRelevance:
    """PoS-agnostic relevance inside a batch from ``data.positive_mask``: captions of one
    video or each relevant to the other's video; videos with captions relevant both ways."""
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
    """PoS-aware relevance (JPoSE §3.2; EPIC's classes, §4.1, replaced by lemma bags): bag
    contained in the video's bag union or in the other caption's bag; videos whose unions
    overlap with Jaccard >= ``video_jaccard``. Keeps the ``vocabulary`` commonest lemmas."""

    def __init__(
        self,
        bags: list[tuple[str, ...]],
        caption_video: np.ndarray,
        n_videos: int,
        *,
        vocabulary: int = 4096,
        video_jaccard: float = 0.5,
    ) -> None:
        counts = Counter(word for bag in bags for word in set(bag))
        words = sorted(counts, key=lambda w: (-counts[w], w))[:vocabulary]
        index = {w: i for i, w in enumerate(words)}
        self.captions = np.zeros((len(bags), max(1, len(words))), dtype=bool)
        for i, bag in enumerate(bags):
            self.captions[i, [index[word] for word in bag if word in index]] = True
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
