"""MME, the Multi-Modal Embedding baseline (Wray et al., CVPR 2021, §5; JPoSE §3.1,
MMEN(Caption)): two towers into one 256-d space, trained with JPoSE Eq. 5 on in-batch triplets.
Adam lr 1e-3 (JPoSE: 1e-5 for 4000 iterations), batch 128, margin 0.2, dropout 0.3, 20 epochs:
on the demo world more epochs or less dropout overfit, and this takes under a minute on 2 CPUs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from .base import TrainingData
from .losses import BatchRelevance, mmen_loss
from .text import MINILM_DIM, embed_sentences
from .training import Standardiser, Step, Tower, TrainedEncoder


class MMENet(nn.Module):
    """Video tower f and caption tower g of one MMEN (JPoSE §3.1)."""

    def __init__(
        self, video_dim: int, text_dim: int, hidden: int, dim: int, dropout: float
    ) -> None:
        super().__init__()
        self.standardise = Standardiser(video_dim)
        self.video = Tower(video_dim, hidden, dim, dropout)
        self.text = Tower(text_dim, hidden, dim, dropout)

    def embed_videos(self, x: torch.Tensor) -> torch.Tensor:
        return self.video(self.standardise(x))

    def embed_texts(self, t: torch.Tensor) -> torch.Tensor:
        return self.text(t)


class MMEEncoder(TrainedEncoder):
    """MME over hand-made video features and MiniLM captions (defaults: 512 hidden, 256 out)."""

    name = "mme"
    DROPOUT = 0.3
    EPOCHS = 20

    def _build(self, feature_dim: int) -> MMENet:
        return MMENet(feature_dim, MINILM_DIM, self.hidden, self.embed_dim, self.dropout)

    def _text_features(
        self, texts: Sequence[str], device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        return embed_sentences(texts, device=device, batch_size=batch_size, progress=progress)

    def _prepare(
        self, data: TrainingData, seed: int, device: torch.device, progress: bool
    ) -> tuple[MMENet, Step]:
        net, videos = self._start_fit(data, device)
        texts = torch.from_numpy(embed_sentences(data.captions, device=device, progress=progress))
        texts = texts.to(device)

        def step(batch: np.ndarray, video_idx: np.ndarray, pairs: BatchRelevance) -> torch.Tensor:
            v = net.embed_videos(videos[torch.from_numpy(video_idx).to(device)])
            t = net.embed_texts(texts[torch.from_numpy(batch).to(device)])
            return mmen_loss(
                v, t, pairs, weights=self.weights, margin=self.margin, mining=self.mining
            )

        return net, step
