"""The interface of built-in retrieval models (encoders): captions and videos into one space
where the dot product ranks videos (JPoSE §3.1), L2-normalised float32 out, no database."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

EpochCallback = Callable[[int, int, float], None]
"""Called after each training epoch with (epochs done, epochs in all, mean loss)."""

FORMAT = "firepool-encoder"
FORMAT_VERSION = 1


DEVICES = ("auto", "cpu", "cuda")
"""The devices work can be asked to run on; ``auto`` is CUDA when available."""
SEEDS = (0, 2**31 - 1)
"""Training seeds accepted, inclusive (every seeded generator takes them)."""
EPOCHS = (1, 10_000)
"""Training epochs that may be asked for, inclusive."""


def device_problem(device: str, *, gpu_elsewhere: bool = False) -> str | None:
    """Why work cannot run on ``device`` (one of :data:`DEVICES`), or None when it can;
    ``gpu_elsewhere``: the work goes to a GPU machine's worker, so CUDA is not needed here."""
    if device not in DEVICES:
        return f"unknown device {device!r} (choose one of {', '.join(DEVICES)})"
    if device == "cuda" and not gpu_elsewhere and not torch.cuda.is_available():
        return "torch has no CUDA device on this machine; choose auto or cpu"
    return None


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``"auto"`` (or None) means CUDA when available, else the CPU; anything else as given."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def l2_normalise(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Rows scaled to unit L2 norm (all-zero rows stay zero), as float32."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.maximum(norms, eps)).astype(np.float32)


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from ``parts`` that is the same in every process and on every machine."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode("utf-8"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


@dataclass(frozen=True)
class VideoInputs:
    """What an encoder may use of each video: its key, features (n x f float32), known
    captions (at query time its non-query captions only) and experts."""

    keys: Sequence[str]
    features: np.ndarray | None = None
    captions: Sequence[Sequence[str]] | None = None
    experts: Sequence[Any] | None = None
    """Per video its ``features.ExpertSequences`` (appearance, action, objects), for SRCT."""

    def __post_init__(self) -> None:
        n = len(self.keys)
        for value, what in (
            (self.features, "feature rows"),
            (self.experts, "expert sets"),
            (self.captions, "caption lists"),
        ):
            if value is not None and len(value) != n:
                raise ValueError(f"{len(value)} {what} for {n} videos")

    def __len__(self) -> int:
        return len(self.keys)


def thresholded(similarity: np.ndarray, threshold: float) -> np.ndarray:
    """Positives from a caption x video semantic similarity: S >= T (Wray et al., CVPR 2021,
    §4.3)."""
    return np.asarray(similarity) >= threshold


@dataclass
class TrainingData:
    """A training split: video features, captions and which video each caption describes;
    ``positives``: None (instance relevance) or bool captions x videos, S >= T (Wray et al.,
    CVPR 2021, §4.3). A caption's own video is always a positive."""

    video_features: np.ndarray
    captions: Sequence[str]
    caption_video: np.ndarray
    positives: np.ndarray | None = None
    video_keys: Sequence[str] | None = None
    video_experts: Sequence[Any] | None = None
    """Per video its ``features.ExpertSequences``, for encoders with ``uses_experts``."""

    def __post_init__(self) -> None:
        self.video_features = np.asarray(self.video_features, dtype=np.float32)
        self.caption_video = np.asarray(self.caption_video, dtype=np.int64)
        n_v = len(self.video_features)
        if self.video_experts is not None and len(self.video_experts) != n_v:
            raise ValueError(f"{len(self.video_experts)} expert sets for {n_v} videos")
        if self.video_features.ndim != 2:
            raise ValueError("video_features must be a 2-d array (videos x features)")
        if len(self.caption_video) != len(self.captions):
            raise ValueError(
                f"{len(self.caption_video)} video indices for {len(self.captions)} captions"
            )
        if len(self.captions) and (self.caption_video.min() < 0 or self.caption_video.max() >= n_v):
            raise ValueError("caption_video holds an index outside the videos")
        shape = (len(self.captions), n_v)
        if isinstance(self.positives, np.ndarray) and self.positives.shape != shape:
            raise ValueError(f"positives must be captions x videos, got {self.positives.shape}")

    @property
    def n_videos(self) -> int:
        return len(self.video_features)

    def positive_mask(self, caption_idx: np.ndarray, video_idx: np.ndarray) -> np.ndarray:
        """Bool [len(caption_idx), len(video_idx)]: relevant pairs (own video always)."""
        caption_idx, video_idx = np.asarray(caption_idx), np.asarray(video_idx)
        mask = self.caption_video[caption_idx][:, None] == video_idx[None, :]
        if self.positives is None:
            return mask
        return mask | self.positives[np.ix_(caption_idx, video_idx)]


class Encoder(ABC):
    """A retrieval model: captions and videos -> L2-normalised vectors of size ``dim``.
    Subclasses implement ``_encode_captions``, ``_encode_videos`` (and ``fit`` if trainable);
    ``uses_*`` say which fields of :class:`VideoInputs` (and TrainingData) they read."""

    name: ClassVar[str]
    trainable: ClassVar[bool] = False
    uses_features: ClassVar[bool] = False
    uses_captions: ClassVar[bool] = False
    uses_experts: ClassVar[bool] = False

    @property
    @abstractmethod
    def dim(self) -> int:
        """Size of the embedding vectors."""

    @abstractmethod
    def config(self) -> dict[str, Any]:
        """Plain (JSON-able) constructor arguments that rebuild this encoder."""

    def encode_captions(
        self,
        texts: Sequence[str],
        *,
        device: str | torch.device = "auto",
        batch_size: int = 256,
        progress: bool = False,
    ) -> np.ndarray:
        """Float32 [len(texts), dim], rows of unit norm."""
        return self._encode_captions(texts, resolve_device(device), batch_size, progress)

    def encode_videos(
        self,
        inputs: VideoInputs,
        *,
        device: str | torch.device = "auto",
        batch_size: int = 256,
        progress: bool = False,
    ) -> np.ndarray:
        """Float32 [len(inputs), dim], rows of unit norm (zero where nothing is known)."""
        return self._encode_videos(inputs, resolve_device(device), batch_size, progress)

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
        """Train on ``data``; returns the mean loss of each epoch (``trainable`` encoders)."""
        raise TypeError(f"the {self.name} encoder is not trainable")

    @abstractmethod
    def _encode_captions(
        self, texts: Sequence[str], device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        """:meth:`encode_captions` on a resolved ``device``."""

    @abstractmethod
    def _encode_videos(
        self, inputs: VideoInputs, device: torch.device, batch_size: int, progress: bool
    ) -> np.ndarray:
        """:meth:`encode_videos` on a resolved ``device``."""

    def state(self) -> dict[str, Any]:
        """Learned tensors to save (empty for encoders without learned weights)."""
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state` returned."""
        if state:
            raise ValueError(f"the {self.name} encoder has no learned state to load")

    def save(self, path: str | Path) -> None:
        """Write config and state as one torch file (``registry.load_encoder`` reads it back)."""
        payload = {"format": FORMAT, "version": FORMAT_VERSION, "name": self.name}
        torch.save(payload | {"config": self.config(), "state": self.state()}, str(path))

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Encoder:
        """Rebuild an encoder of this class from a loaded payload."""
        if payload.get("name") != cls.name:
            raise ValueError(f"file holds a {payload.get('name')!r} encoder, not {cls.name!r}")
        encoder = cls(**payload["config"])
        encoder.load_state(payload["state"])
        return encoder


def read_payload(path: str | Path) -> dict[str, Any]:
    """The saved dict of an encoder file, loaded safely (tensors and plain data only)."""
    payload = torch.load(str(path), map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not a firepool encoder file")
    if payload.get("version") != FORMAT_VERSION:
        raise ValueError(f"{path} has encoder file version {payload.get('version')}")
    return payload
