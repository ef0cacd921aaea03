"""Building blocks and the training loop shared by the trained encoders (MME, JPoSE).

Towers are the two-layer perceptrons of JPoSE §4.1.1 (ReLU, L2-normalised output);
training is Adam over shuffled caption batches with a seeded generator, bf16 autocast
on CUDA, and a tqdm bar that shows the running loss.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm


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
) -> list[float]:
    """Run ``epochs`` of Adam over caption batches; ``step`` maps a batch to its loss.

    Returns the mean loss of each epoch. The batch order depends only on ``seed``.
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
