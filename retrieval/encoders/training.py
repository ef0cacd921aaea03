"""Building blocks, the training loop (Adam over seeded caption batches, bf16 autocast on
CUDA) and the base classes of the trained encoders (MME, JPoSE, SRCT)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import asdict
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from .base import Encoder, EpochCallback, TrainingData, VideoInputs, resolve_device
from .losses import MARGIN, BatchRelevance, LossWeights, batch_relevance


class Tower(nn.Module):
    """Linear -> ReLU -> dropout -> linear, then L2 normalisation (JPoSE §4.1.1)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, out_dim)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.net(x).float(), dim=-1)


class Standardiser(nn.Module):
    """Clipped z-scores with the training set's statistics (buffers in the state): hand-made
    features mix scales, so they are standardised instead of L2-normalised as JPoSE's TSN's."""

    def __init__(self, dim: int, clip: float = 6.0) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("std", torch.ones(dim))
        self.clip = clip

    def fit(self, x: torch.Tensor) -> None:
        self.mean.copy_(x.mean(0))
        self.std.copy_(x.std(0, unbiased=False).clamp_min(1e-3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / self.std).clamp(-self.clip, self.clip)


def autocast(device: torch.device):
    """bf16 autocast on CUDA; nothing elsewhere (CPU training stays in float32)."""
    if device.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return nullcontext()


def caption_batches(n: int, batch_size: int, generator: torch.Generator) -> list[np.ndarray]:
    """A seeded shuffle of caption indices cut into batches (a last batch of one is dropped)."""
    order = torch.randperm(n, generator=generator).numpy()
    batches = [order[i : i + batch_size] for i in range(0, n, batch_size)]
    return [b for b in batches if len(b) > 1]


Step = Callable[[np.ndarray, np.ndarray, BatchRelevance], torch.Tensor]
"""A batch of caption indices, their videos' sorted indices and relevant pairs -> its loss."""


class NetworkEncoder(Encoder):
    """A trainable encoder whose learned weights are one torch module, ``net``, built with
    its batch loss by ``_prepare``: state, the untrained refusal and the fitting loop."""

    trainable = True
    net: nn.Module | None
    lr: float
    weight_decay: float
    batch_size: int
    epochs: int

    def state(self) -> dict[str, Any]:
        return {} if self.net is None else {k: v.cpu() for k, v in self.net.state_dict().items()}

    def load_state(self, state: dict[str, Any]) -> None:
        if state:
            self._require().load_state_dict(state)

    def _require(self) -> nn.Module:
        if self.net is None:
            raise RuntimeError(f"the {self.name} encoder has not been trained (call fit first)")
        return self.net

    @torch.no_grad()
    def _in_batches(
        self,
        n: int,
        device: torch.device,
        batch_size: int,
        progress: bool,
        run: Callable[[nn.Module, slice], torch.Tensor],
    ) -> np.ndarray:
        """``run(net, window)`` over the ``n`` items, ``batch_size`` at a time, with the trained
        network in eval mode on ``device`` (back on the CPU afterwards); rows as float32."""
        net = self._require()
        net.to(device).eval()
        try:
            starts = tqdm(range(0, n, batch_size), self.name, disable=not progress, leave=False)
            windows = (slice(s, s + batch_size) for s in starts)
            return np.concatenate([run(net, w).float().cpu().numpy() for w in windows])
        finally:
            net.cpu()

    def _prepare(
        self, data: TrainingData, seed: int, device: torch.device, progress: bool
    ) -> tuple[nn.Module, Step]:
        """Build ``self.net`` afresh for ``data`` on ``device``; return it and its batch loss."""
        raise NotImplementedError

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
        """Adam over seeded caption batches (bf16 autocast on CUDA); each epoch's mean loss,
        also passed to ``on_epoch``."""
        device = resolve_device(device)
        torch.manual_seed(seed)
        net, step = self._prepare(data, seed, device, progress)
        epochs = self.epochs if epochs is None else epochs
        generator = torch.Generator().manual_seed(seed)
        optimiser = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        history: list[float] = []
        net.train()
        bar = tqdm(range(epochs), desc=self.name, disable=not progress, leave=False)
        for _ in bar:
            total, count = 0.0, 0
            for batch in caption_batches(len(data.captions), self.batch_size, generator):
                video_idx = np.unique(data.caption_video[batch])
                relevance = batch_relevance(data, batch, video_idx, device)
                optimiser.zero_grad(set_to_none=True)
                with autocast(device):
                    loss = step(batch, video_idx, relevance)
                loss.backward()
                optimiser.step()
                total += float(loss.detach()) * len(batch)
                count += len(batch)
            history.append(total / max(count, 1))
            bar.set_postfix(loss=f"{history[-1]:.4f}")
            if on_epoch is not None:
                on_epoch(len(history), epochs, history[-1])
        net.eval()
        net.cpu()
        return history


class TrainedEncoder(NetworkEncoder):
    """What MME and JPoSE share: settings (defaults :attr:`DROPOUT`, :attr:`EPOCHS`), the
    fitting preamble and encoding; subclasses give ``_build``, ``_text_features``, ``_prepare``."""

    uses_features = True
    DROPOUT: ClassVar[float]
    EPOCHS: ClassVar[int]

    def __init__(
        self,
        *,
        feature_dim: int | None = None,
        hidden: int = 512,
        embed_dim: int = 256,
        dropout: float | None = None,
        margin: float = MARGIN,
        mining: str = "all",
        weights: dict[str, float] | None = None,
        lr: float = 1e-3,
        weight_decay: float = 1e-5,
        batch_size: int = 128,
        epochs: int | None = None,
    ) -> None:
        self.feature_dim = feature_dim
        self.hidden, self.embed_dim = hidden, embed_dim
        self.dropout = self.DROPOUT if dropout is None else dropout
        self.margin, self.mining = margin, mining
        self.weights = LossWeights(**(weights or {}))
        self.lr, self.weight_decay = lr, weight_decay
        self.batch_size = batch_size
        self.epochs = self.EPOCHS if epochs is None else epochs
        self.net = None if feature_dim is None else self._build(feature_dim)

    def _build(self, feature_dim: int) -> nn.Module:
        raise NotImplementedError

    def _text_features(
        self, texts: Sequence[str], device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        raise NotImplementedError

    @property
    def dim(self) -> int:
        return self.embed_dim

    def config(self) -> dict[str, Any]:
        names = "feature_dim hidden embed_dim dropout margin mining weights lr weight_decay"
        config = {name: getattr(self, name) for name in (*names.split(), "batch_size", "epochs")}
        return config | {"weights": asdict(self.weights)}

    def _start_fit(
        self, data: TrainingData, device: torch.device
    ) -> tuple[nn.Module, torch.Tensor]:
        """Build a fresh network for the data's feature size and standardise the videos."""
        self.feature_dim = data.video_features.shape[1]
        net = self.net = self._build(self.feature_dim).to(device)
        videos = torch.from_numpy(data.video_features).to(device)
        net.standardise.fit(videos)
        return net, videos

    def _run(
        self, fn_name: str, x: np.ndarray, device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        """The trained network's ``fn_name`` over the rows of ``x`` (not empty), in batches."""
        rows = torch.from_numpy(np.ascontiguousarray(x, np.float32))
        return self._in_batches(
            len(x),
            device,
            batch_size,
            progress,
            lambda net, w: getattr(net, fn_name)(rows[w].to(device)),
        )

    def _encode_captions(
        self, texts: Sequence[str], device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        self._require()
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        features = self._text_features(texts, device, batch_size, progress)
        return self._run("embed_texts", features, device, batch_size, progress)

    def _encode_videos(
        self, inputs: VideoInputs, device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        self._require()
        if inputs.features is None:
            raise ValueError(f"the {self.name} encoder needs video features (VideoInputs.features)")
        if len(inputs) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._run("embed_videos", inputs.features, device, batch_size, progress)
