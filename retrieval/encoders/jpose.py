"""JPoSE: Joint Part-of-Speech Embedding (Wray et al., ICCV 2019): one MMEN per part of speech
(§3.2), concatenated (Eq. 6) into a PCA-initialised joint layer (§3.3, §4.1.1), trained with
Eq. 7 (L^k on bag relevance, L̂ on the task's, semantic with Wray et al., CVPR 2021, §4.3).
As MME but dropout 0.1 and 10 epochs (the best of 10-60 on the demo world; hardest-negative
mining converged several times slower than every in-batch triplet).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .base import TrainingData
from .losses import BagRelevance, BatchRelevance, mmen_loss
from .text import MINILM_DIM, POS_GROUPS, pos_features, split_pos
from .training import Standardiser, Step, Tower, TrainedEncoder

PCA_SAMPLES = 10_000
"""Videos and captions (each at most) whose PoS embeddings initialise the joint layer."""


class JPoSENet(nn.Module):
    """PoS-MMENs (f^k, g^k) and the shared joint layer f̂ = ĝ."""

    def __init__(
        self,
        video_dim: int,
        text_dim: int,
        groups: Sequence[str],
        hidden: int,
        dim: int,
        dropout: float,
    ) -> None:
        super().__init__()
        self.groups = tuple(groups)
        self.standardise = Standardiser(video_dim)
        self.video = nn.ModuleDict({g: Tower(video_dim, hidden, dim, dropout) for g in self.groups})
        self.text = nn.ModuleDict({g: Tower(text_dim, hidden, dim, dropout) for g in self.groups})
        self.joint = nn.Linear(dim * len(self.groups), dim)

    def pos_videos(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        z = self.standardise(x)
        return {g: self.video[g](z) for g in self.groups}

    def pos_texts(self, parts: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {g: self.text[g](parts[g]) for g in self.groups}

    def combine(self, parts: dict[str, torch.Tensor]) -> torch.Tensor:
        """e_v / e_t (concatenation, Eq. 6) then the shared joint layer, L2-normalised."""
        return F.normalize(
            self.joint(torch.cat([parts[g] for g in self.groups], -1)).float(), dim=-1
        )

    def embed_videos(self, x: torch.Tensor) -> torch.Tensor:
        return self.combine(self.pos_videos(x))

    def embed_texts(self, stacked: torch.Tensor) -> torch.Tensor:
        """Caption PoS features stacked along the last axis ([n, K * text_dim])."""
        parts = dict(zip(self.groups, stacked.chunk(len(self.groups), dim=-1), strict=True))
        return self.combine(self.pos_texts(parts))

    @torch.no_grad()
    def init_joint_pca(self, videos: torch.Tensor, texts: dict[str, torch.Tensor]) -> None:
        """Initialise the joint layer with the principal axes of the PoS embeddings (§4.1.1)."""
        v = torch.cat(list(self.pos_videos(videos).values()), -1)
        t = torch.cat(list(self.pos_texts(texts).values()), -1)
        x = torch.cat([v, t]).double()
        mean = x.mean(0)
        _, _, vh = torch.linalg.svd(x - mean, full_matrices=False)
        k = min(vh.shape[0], self.joint.out_features)
        vh = vh[:k]
        signs = torch.sign(vh[:, vh.abs().argmax(1)].diagonal())  # deterministic orientation
        vh = vh * torch.where(signs == 0, 1.0, signs)[:, None]
        weight = self.joint.weight.clone()
        weight[:k] = vh.to(weight)
        self.joint.weight.copy_(weight)
        self.joint.bias.copy_(-(weight @ mean.to(weight)))


class JPoSEEncoder(TrainedEncoder):
    """JPoSE(Verb, Noun) over hand-made video features and MiniLM lemma vectors; beyond MME's
    settings the PoS ``groups`` and their loss weights ``alpha`` (α_k of Eq. 7, default 1)."""

    name = "jpose"
    DROPOUT = 0.1
    EPOCHS = 10

    def __init__(
        self,
        *,
        groups: Sequence[str] = POS_GROUPS,
        alpha: dict[str, float] | None = None,
        **settings: Any,
    ) -> None:
        self.groups = tuple(groups)
        unknown = set(self.groups) - set(POS_GROUPS)
        if unknown:
            raise ValueError(f"unknown PoS groups {sorted(unknown)}; known: {POS_GROUPS}")
        self.alpha = {g: 1.0 for g in self.groups} | dict(alpha or {})
        super().__init__(**settings)

    def _build(self, feature_dim: int) -> JPoSENet:
        return JPoSENet(
            feature_dim, MINILM_DIM, self.groups, self.hidden, self.embed_dim, self.dropout
        )

    def config(self) -> dict[str, Any]:
        return super().config() | {"groups": list(self.groups), "alpha": dict(self.alpha)}

    def _text_features(
        self, texts: Sequence[str], device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        parts = pos_features(texts, device=device, batch_size=batch_size)
        return np.concatenate([parts[g] for g in self.groups], axis=1)

    def _prepare(
        self, data: TrainingData, seed: int, device: torch.device, progress: bool
    ) -> tuple[JPoSENet, Step]:
        net, videos = self._start_fit(data, device)
        splits = split_pos(data.captions)
        parts = pos_features(data.captions, device=device, splits=splits)
        texts = {g: torch.from_numpy(parts[g]).to(device) for g in self.groups}
        pos_relevance = {
            g: BagRelevance([s.group(g) for s in splits], data.caption_video, data.n_videos)
            for g in self.groups
        }
        net.eval()
        sample = torch.randperm(len(data.captions), generator=torch.Generator().manual_seed(seed))
        sample = sample[:PCA_SAMPLES].to(device)
        net.init_joint_pca(videos[:PCA_SAMPLES], {g: texts[g][sample] for g in self.groups})
        loss_args = {"weights": self.weights, "margin": self.margin, "mining": self.mining}

        def step(batch: np.ndarray, video_idx: np.ndarray, joint: BatchRelevance) -> torch.Tensor:
            rows = torch.from_numpy(batch).to(device)
            v_parts = net.pos_videos(videos[torch.from_numpy(video_idx).to(device)])
            t_parts = net.pos_texts({g: texts[g][rows] for g in self.groups})
            loss = mmen_loss(net.combine(v_parts), net.combine(t_parts), joint, **loss_args)
            for g in self.groups:
                relevance = pos_relevance[g].batch(batch, video_idx, device)
                loss = loss + self.alpha[g] * mmen_loss(
                    v_parts[g], t_parts[g], relevance, **loss_args
                )
            return loss

        return net, step
