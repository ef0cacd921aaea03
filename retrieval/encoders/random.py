"""The random baseline (JPoSE Table 2): a unit vector per item from a generator seeded by
(seed, kind, key), the same whatever else is encoded with it (captions keyed by their text)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .base import Encoder, VideoInputs, l2_normalise, stable_seed


class RandomEncoder(Encoder):
    """Seeded random unit vectors of size ``dim`` (256 by default)."""

    name = "random"

    def __init__(self, dim: int = 256, seed: int = 0) -> None:
        self._dim = int(dim)
        self.seed = int(seed)

    @property
    def dim(self) -> int:
        return self._dim

    def config(self) -> dict[str, Any]:
        return {"dim": self._dim, "seed": self.seed}

    def _encode(self, kind: str, keys: Sequence[str]) -> np.ndarray:
        """One unit vector per key (``kind`` is "caption" or "video")."""
        rows = [
            l2_normalise(
                np.random.default_rng(stable_seed(self.seed, kind, key)).standard_normal(self._dim)
            )
            for key in keys
        ]
        return np.array(rows, dtype=np.float32).reshape(len(keys), self._dim)

    def _encode_captions(
        self, texts: Sequence[str], device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        return self._encode("caption", texts)

    def _encode_videos(
        self, inputs: VideoInputs, device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        return self._encode("video", inputs.keys)
