"""MME: the Multi-Modal Embedding baseline (Wray et al., CVPR 2021, §5;
Wray et al., ICCV 2019 (JPoSE), §3.1, MMEN(Caption)).

Two two-layer perceptrons map video features (``features.py``) and MiniLM caption
embeddings into one 256-d space, outputs L2-normalised, trained with the bidirectional
cross-modal and within-modal triplet losses of JPoSE Eq. 5 on in-batch triplets.
Positives are a caption's own video or, given a relevance provider, every pair with
semantic similarity >= T (Wray et al., CVPR 2021, §4.3).

Training: Adam, lr 1e-3 (JPoSE uses 1e-5 for 4000 iterations; our sets are tiny), batch
128 captions, margin 0.2, every in-batch triplet, dropout 0.3, 20 epochs: on the default
demo world (400 training videos, about 2,000 captions) more epochs or less dropout
overfit, and this takes well under a minute on 2 CPU cores with features precomputed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from .base import TrainingData
from .losses import batch_relevance, mmen_loss
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

        def step(batch: np.ndarray) -> torch.Tensor:
            video_idx = np.unique(data.caption_video[batch])
            relevance = batch_relevance(data, batch, video_idx, device)
            v = net.embed_videos(videos[torch.from_numpy(video_idx).to(device)])
            t = net.embed_texts(texts[torch.from_numpy(batch).to(device)])
            return mmen_loss(
                v, t, relevance, weights=self.weights, margin=self.margin, mining=self.mining
            )

        return net, step
