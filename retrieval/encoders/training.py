"""Building blocks and the training loop shared by the trained encoders (MME, JPoSE).

Towers are the two-layer perceptrons of JPoSE §4.1.1 (ReLU, L2-normalised output);
training is Adam over shuffled caption batches with a seeded generator, bf16 autocast
on CUDA, and a tqdm bar that shows the running loss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from .base import Encoder, EpochCallback, TrainingData, VideoInputs, resolve_device


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


class TrainedEncoder(Encoder):
    """What MME and JPoSE share: learned weights, the fitting preamble, and encoding.

    A subclass builds its network with ``_build(feature_dim)`` (a module with a
    ``standardise`` layer, ``embed_videos`` and ``embed_texts``), turns caption texts into
    the network's text input with ``_text_features``, and defines the batch loss in ``fit``.
    """

    trainable = True
    uses_features = True
    net: nn.Module | None
    embed_dim: int
    feature_dim: int | None
    lr: float
    weight_decay: float
    batch_size: int
    epochs: int

    def _build(self, feature_dim: int) -> nn.Module:
        raise NotImplementedError

    def _text_features(
        self, texts: Sequence[str], device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        raise NotImplementedError

    @property
    def dim(self) -> int:
        return self.embed_dim

    def state(self) -> dict[str, Any]:
        return {} if self.net is None else {k: v.cpu() for k, v in self.net.state_dict().items()}

    def load_state(self, state: dict[str, Any]) -> None:
        if state:
            self._require().load_state_dict(state)

    def _require(self) -> nn.Module:
        if self.net is None:
            raise RuntimeError(f"the {self.name} encoder has not been trained (call fit first)")
        return self.net

    def _start_fit(
        self, data: TrainingData, seed: int, device: str | torch.device
    ) -> tuple[torch.device, nn.Module, torch.Tensor]:
        """Seed, build a fresh network for the data's feature size, standardise the videos."""
        dev = resolve_device(device)
        torch.manual_seed(seed)
        self.feature_dim = data.video_features.shape[1]
        net = self.net = self._build(self.feature_dim).to(dev)
        videos = torch.from_numpy(data.video_features).to(dev)
        net.standardise.fit(videos)
        return dev, net, videos

    def _train(
        self,
        net: nn.Module,
        step: Callable[[np.ndarray], torch.Tensor],
        n_captions: int,
        *,
        epochs: int | None,
        seed: int,
        device: torch.device,
        progress: bool,
        on_epoch: EpochCallback | None = None,
    ) -> list[float]:
        """Run :func:`train` with this encoder's settings, then park the weights on the CPU."""
        history = train(
            net,
            step,
            n_captions,
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

    def _run(
        self, fn_name: str, x: np.ndarray, device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        net = self._require()
        net.to(device).eval()
        try:
            return run_batched(
                getattr(net, fn_name), x, device=device, batch_size=batch_size, progress=progress
            )
        finally:
            net.cpu()

    def encode_captions(
        self,
        texts: Sequence[str],
        *,
        device: str | torch.device = "auto",
        batch_size: int = 256,
        progress: bool = False,
    ) -> np.ndarray:
        self._require()
        dev = resolve_device(device)
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        features = self._text_features(texts, dev, batch_size, progress)
        return self._run("embed_texts", features, dev, batch_size, progress)

    def encode_videos(
        self,
        inputs: VideoInputs,
        *,
        device: str | torch.device = "auto",
        batch_size: int = 256,
        progress: bool = False,
    ) -> np.ndarray:
        self._require()
        if inputs.features is None:
            raise ValueError(f"the {self.name} encoder needs video features (VideoInputs.features)")
        if len(inputs) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._run(
            "embed_videos", inputs.features, resolve_device(device), batch_size, progress
        )
