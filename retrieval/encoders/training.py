"""Building blocks, the training loop and the base classes of the trained encoders (MME,
JPoSE, SRCT).

Towers are the two-layer perceptrons of JPoSE §4.1.1 (ReLU, L2-normalised output);
training is Adam over shuffled caption batches with a seeded generator, bf16 autocast
on CUDA, and a tqdm bar that shows the running loss.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from .base import Encoder, EpochCallback, TrainingData, VideoInputs
from .losses import MARGIN, LossWeights


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
    """z-scores with the training set's statistics, clipped; kept as buffers in the state.

    Hand-made features mix scales (areas, angles, counts), so they are standardised
    instead of L2-normalised as JPoSE's TSN features are.
    """

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


def train(
    model: nn.Module,
    step: Callable[[np.ndarray], torch.Tensor],
    n_captions: int,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    seed: int,
    device: torch.device,
    progress: bool,
    desc: str,
    on_epoch: EpochCallback | None = None,
) -> list[float]:
    """Run ``epochs`` of Adam over caption batches; ``step`` maps a batch to its loss.

    Returns the mean loss of each epoch. The batch order depends only on ``seed``.
    ``on_epoch(epochs done, epochs in all, mean loss)`` follows along (a job's progress).
    """
    generator = torch.Generator().manual_seed(seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    history: list[float] = []
    model.train()
    bar = tqdm(range(epochs), desc=desc, disable=not progress, leave=False)
    for _ in bar:
        total, count = 0.0, 0
        for batch in caption_batches(n_captions, batch_size, generator):
            optimiser.zero_grad(set_to_none=True)
            with autocast(device):
                loss = step(batch)
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(batch)
            count += len(batch)
        history.append(total / max(count, 1))
        bar.set_postfix(loss=f"{history[-1]:.4f}")
        if on_epoch is not None:
            on_epoch(len(history), epochs, history[-1])
    model.eval()
    return history


@torch.no_grad()
def run_batched(
    fn: Callable[[torch.Tensor], torch.Tensor],
    x: np.ndarray,
    *,
    device: torch.device,
    batch_size: int,
    progress: bool = False,
    desc: str = "encode",
) -> np.ndarray:
    """Apply ``fn`` to rows of ``x`` in batches on ``device`` (float32); numpy float32 out."""
    out = []
    for start in tqdm(range(0, len(x), batch_size), desc=desc, disable=not progress, leave=False):
        chunk = torch.from_numpy(np.ascontiguousarray(x[start : start + batch_size], np.float32))
        out.append(fn(chunk.to(device)).float().cpu().numpy())
    if not out:
        return np.zeros((0, 0), dtype=np.float32)
    return np.concatenate(out).astype(np.float32)


Step = Callable[[np.ndarray], torch.Tensor]
"""A batch of caption indices -> its loss."""


class NetworkEncoder(Encoder):
    """A trainable encoder whose learned weights are one torch module, ``net``.

    Holds what every trained encoder (MME, JPoSE, SRCT) shares: saving and loading the
    module's state, refusing to encode before training, and the fitting loop. A subclass
    builds a fresh network for the data and the loss of a batch in ``_prepare``; ``fit``
    seeds torch, trains it with this encoder's settings (:func:`train`) and parks the
    weights on the CPU.
    """

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

    @contextmanager
    def _on(self, device: torch.device) -> Iterator[nn.Module]:
        """The trained network in eval mode on ``device``, back on the CPU afterwards."""
        net = self._require()
        net.to(device).eval()
        try:
            yield net
        finally:
            net.cpu()

    def _prepare(
        self, data: TrainingData, seed: int, device: torch.device, progress: bool
    ) -> tuple[nn.Module, Step]:
        """Build ``self.net`` afresh for ``data`` on ``device``; return it and its batch loss."""
        raise NotImplementedError

    def _fit(
        self,
        data: TrainingData,
        epochs: int | None,
        seed: int,
        device: torch.device,
        progress: bool,
        on_epoch: EpochCallback | None,
    ) -> list[float]:
        torch.manual_seed(seed)
        net, step = self._prepare(data, seed, device, progress)
        history = train(
            net,
            step,
            len(data.captions),
            epochs=self.epochs if epochs is None else epochs,
            batch_size=self.batch_size,
            lr=self.lr,
            weight_decay=self.weight_decay,
            seed=seed,
            device=device,
            progress=progress,
            desc=self.name,
            on_epoch=on_epoch,
        )
        net.cpu()
        return history


class TrainedEncoder(NetworkEncoder):
    """What MME and JPoSE share: their settings, the fitting preamble, and encoding.

    A subclass sets :attr:`DROPOUT` and :attr:`EPOCHS` (its defaults), builds its network
    with ``_build(feature_dim)`` (a module with a ``standardise`` layer, ``embed_videos``
    and ``embed_texts``), turns caption texts into the network's text input with
    ``_text_features``, and defines the batch loss in ``_prepare``.
    """

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
        w = self.weights
        return {
            "feature_dim": self.feature_dim,
            "hidden": self.hidden,
            "embed_dim": self.embed_dim,
            "dropout": self.dropout,
            "margin": self.margin,
            "mining": self.mining,
            "weights": {"vt": w.vt, "tv": w.tv, "vv": w.vv, "tt": w.tt},
            "lr": self.lr,
            "weight_decay": self.weight_decay,
            "batch_size": self.batch_size,
            "epochs": self.epochs,
        }

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
        with self._on(device) as net:
            return run_batched(
                getattr(net, fn_name), x, device=device, batch_size=batch_size, progress=progress
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
