"""JPoSE: Joint Part-of-Speech Embedding (Wray et al., ICCV 2019).

One MMEN per part of speech (verb, noun) embeds the video features and that PoS's bag of
lemma vectors (§3.2); the PoS embeddings are concatenated (e_v, e_t, Eq. 6) and a single
linear layer shared by both modalities, initialised with PCA, maps them to the final
256-d space (§3.3, §4.1.1). All are trained jointly with Eq. 7,
L = L̂ + Σ_k α_k L^k, α_k = 1, each term Eq. 5 with λ_vt = λ_tv = 1, λ_vv = λ_tt = 0.1
(§4.1.1): PoS-aware relevance for L^k (``losses.BagRelevance``), the task's relevance
for L̂. ``encode_*`` return embeddings of the final (joint) space.

With semantic training (Wray et al., CVPR 2021, §4.3, ``TrainingData.positives`` = S >= T from a
proxy) the proxy's positives are the task's relevance: they drive L̂ in the joint space
through ``losses.batch_relevance``, as in MME; the verb and noun losses L^k keep their
bag relevance, which is already PoS-semantic and which a PoS-agnostic S does not refine.

As in MME: Adam lr 1e-3, batch 128, margin 0.2, every in-batch triplet (§4.1.1 samples
random triplets; hardest-negative mining converged several times slower here), dropout
0.1, 10 epochs (the best of 10-60 on the default demo world; later epochs overfit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .base import EpochCallback, TrainingData
from .losses import MARGIN, BagRelevance, LossWeights, batch_relevance, mmen_loss
from .text import MINILM_DIM, POS_GROUPS, pos_features, split_pos
from .training import Standardiser, Tower, TrainedEncoder

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
        """Initialise the joint layer with the principal axes of the concatenated PoS
        embeddings of the training videos and captions (§4.1.1)."""
        v = torch.cat([p for p in self.pos_videos(videos).values()], -1)
        t = torch.cat([p for p in self.pos_texts(texts).values()], -1)
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
    """JPoSE(Verb, Noun) over hand-made video features and MiniLM lemma vectors."""

    name = "jpose"

    def __init__(
        self,
        *,
        feature_dim: int | None = None,
        groups: Sequence[str] = POS_GROUPS,
        hidden: int = 512,
        embed_dim: int = 256,
        dropout: float = 0.1,
        margin: float = MARGIN,
        mining: str = "all",
        weights: dict[str, float] | None = None,
        alpha: dict[str, float] | None = None,
        lr: float = 1e-3,
        weight_decay: float = 1e-5,
        batch_size: int = 128,
        epochs: int = 10,
    ) -> None:
        self.feature_dim = feature_dim
        self.groups = tuple(groups)
        unknown = set(self.groups) - set(POS_GROUPS)
        if unknown:
            raise ValueError(f"unknown PoS groups {sorted(unknown)}; known: {POS_GROUPS}")
        self.hidden, self.embed_dim, self.dropout = hidden, embed_dim, dropout
        self.margin, self.mining = margin, mining
        self.weights = LossWeights(**(weights or {}))
        self.alpha = {g: 1.0 for g in self.groups} | dict(alpha or {})
        self.lr, self.weight_decay = lr, weight_decay
        self.batch_size, self.epochs = batch_size, epochs
        self.net: JPoSENet | None = None
        if feature_dim is not None:
            self.net = self._build(feature_dim)

    def _build(self, feature_dim: int) -> JPoSENet:
        return JPoSENet(
            feature_dim, MINILM_DIM, self.groups, self.hidden, self.embed_dim, self.dropout
        )

    def config(self) -> dict[str, Any]:
        w = self.weights
        return {
            "feature_dim": self.feature_dim,
            "groups": list(self.groups),
            "hidden": self.hidden,
            "embed_dim": self.embed_dim,
            "dropout": self.dropout,
            "margin": self.margin,
            "mining": self.mining,
            "weights": {"vt": w.vt, "tv": w.tv, "vv": w.vv, "tt": w.tt},
            "alpha": dict(self.alpha),
            "lr": self.lr,
            "weight_decay": self.weight_decay,
            "batch_size": self.batch_size,
            "epochs": self.epochs,
        }

    def _text_features(
        self, texts: Sequence[str], device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        parts = pos_features(texts, device=device, batch_size=batch_size)
        return np.concatenate([parts[g] for g in self.groups], axis=1)

    def fit(
        self,
        data: TrainingData,
        *,
        epochs: int | None = None,
        seed: int = 0,
        device: str | torch.device = "auto",
        progress: bool = False,
        on_epoch: EpochCallback | None = None,
    ) -> list[float]:
        dev, net, videos = self._start_fit(data, seed, device)
        splits = split_pos(data.captions)
        parts = pos_features(data.captions, device=dev, splits=splits)
        texts = {g: torch.from_numpy(parts[g]).to(dev) for g in self.groups}
        pos_relevance = {
            g: BagRelevance([s.group(g) for s in splits], data.caption_video, data.n_videos)
            for g in self.groups
        }
        net.eval()
        sample = torch.randperm(len(data.captions), generator=torch.Generator().manual_seed(seed))
        sample = sample[:PCA_SAMPLES].to(dev)
        net.init_joint_pca(videos[:PCA_SAMPLES], {g: texts[g][sample] for g in self.groups})
        loss_args = {"weights": self.weights, "margin": self.margin, "mining": self.mining}

        def step(batch: np.ndarray) -> torch.Tensor:
            video_idx = np.unique(data.caption_video[batch])
            rows = torch.from_numpy(batch).to(dev)
            v_parts = net.pos_videos(videos[torch.from_numpy(video_idx).to(dev)])
            t_parts = net.pos_texts({g: texts[g][rows] for g in self.groups})
            joint = batch_relevance(data, batch, video_idx, dev)
            loss = mmen_loss(net.combine(v_parts), net.combine(t_parts), joint, **loss_args)
            for g in self.groups:
                relevance = pos_relevance[g].batch(batch, video_idx, dev)
                loss = loss + self.alpha[g] * mmen_loss(
                    v_parts[g], t_parts[g], relevance, **loss_args
                )
            return loss

        return self._train(
            net,
            step,
            len(data.captions),
            epochs=epochs,
            seed=seed,
            device=dev,
            progress=progress,
            on_epoch=on_epoch,
        )
