"""A text-only baseline (like JPoSE Table 3's Features row): all-MiniLM-L6-v2 for captions, and
for a video the normalised mean of its known captions' (zero without any)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .base import Encoder, VideoInputs, l2_normalise
from .text import MINILM_DIM, embed_sentences


class MiniLMEncoder(Encoder):
    """Captions -> MiniLM (384-d); videos -> mean MiniLM of their known captions."""

    name = "minilm"
    uses_captions = True

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def config(self) -> dict[str, Any]:
        return {}

    def _encode_captions(
        self, texts: Sequence[str], device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        return embed_sentences(texts, device=device, batch_size=batch_size, progress=progress)

    def _encode_videos(
        self, inputs: VideoInputs, device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        if inputs.captions is None:
            raise ValueError("the minilm encoder describes videos by their captions: none given")
        counts = np.array([len(c) for c in inputs.captions], dtype=np.int64)
        flat = [text for captions in inputs.captions for text in captions]
        embedded = embed_sentences(flat, device=device, batch_size=batch_size, progress=progress)
        owner = np.repeat(np.arange(len(counts)), counts)
        sums = np.zeros((len(counts), MINILM_DIM), dtype=np.float64)
        np.add.at(sums, owner, embedded)
        return l2_normalise(sums)
