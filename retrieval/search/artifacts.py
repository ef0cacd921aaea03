"""Where a model's weights, embeddings and index live, and how embeddings are stored."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings

from config.errors import UserError
from retrieval.models import RetrievalModel


class MissingEmbeddings(UserError):
    """A model without stored embeddings was asked for them (run ``embed`` first)."""


def model_dir(model: RetrievalModel) -> Path:
    """The model's private artifact directory (created on demand)."""
    path = resolve(f"dataset-{model.dataset_id}/model-{model.pk}")
    path.mkdir(parents=True, exist_ok=True)
    return path


def resolve(relative: str) -> Path:
    """Absolute path of an artifact path stored on a model."""
    return Path(settings.FIREPOOL_ARTIFACTS_DIR) / relative


def relative(path: Path) -> str:
    """An artifact path as stored on a model (relative to the artifacts directory)."""
    return str(path.relative_to(settings.FIREPOOL_ARTIFACTS_DIR))


@dataclass(frozen=True)
class StoredEmbeddings:
    """Caption and video embeddings keyed by primary key, rows aligned with the ids."""

    caption_ids: np.ndarray
    captions: np.ndarray
    video_ids: np.ndarray
    videos: np.ndarray


def save_embeddings(model: RetrievalModel, embeddings: StoredEmbeddings) -> None:
    """Write the embeddings next to the model and record their path on it."""
    path = model_dir(model) / "embeddings.npz"
    tmp = path.with_suffix(".part.npz")
    np.savez(
        tmp,
        caption_ids=embeddings.caption_ids.astype(np.int64),
        captions=embeddings.captions.astype(np.float32),
        video_ids=embeddings.video_ids.astype(np.int64),
        videos=embeddings.videos.astype(np.float32),
    )
    tmp.replace(path)
    model.embeddings = relative(path)
    model.save(update_fields=["embeddings", "updated_at"])


def load_embeddings(model: RetrievalModel) -> StoredEmbeddings:
    """The model's stored embeddings; a clear error when it has none."""
    if not model.embeddings:
        raise MissingEmbeddings(f"model {model.name!r} has no embeddings yet (run `embed` first)")
    with np.load(resolve(model.embeddings)) as data:
        return StoredEmbeddings(
            data["caption_ids"], data["captions"], data["video_ids"], data["videos"]
        )
