"""Uploaded embeddings: a directory with ``captions.npy``, ``videos.npy`` and their id lists.

``captions.npy`` is n_captions x d, ``videos.npy`` n_videos x d, and ``caption_ids.txt`` /
``video_ids.txt`` hold one key per line in row order. Everything is checked before anything
is registered: shapes, equal d, finite values, and ids that are unique and (by the caller)
known in the dataset.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval.formats.records import FormatError, read_lines

FILES = ("captions.npy", "videos.npy", "caption_ids.txt", "video_ids.txt")


@dataclass(frozen=True)
class Embeddings:
    """Caption and video embeddings with their keys, rows aligned with keys."""

    caption_keys: list[str]
    captions: np.ndarray
    video_keys: list[str]
    videos: np.ndarray


def read_ids(path: Path) -> list[str]:
    """Read one key per line; blank lines are errors (they would shift every later row)."""
    keys: list[str] = []
    seen: dict[str, int] = {}
    for number, line in read_lines(path):
        key = line.strip()
        if not key:
            raise FormatError(path.name, number, "id", "blank line (one id per row expected)")
        if key in seen:
            raise FormatError(
                path.name, number, "id", f"duplicate id {key!r} (first on line {seen[key]})"
            )
        seen[key] = number
        keys.append(key)
    if not keys:
        raise FormatError(path.name, None, None, "empty file")
    return keys


def read_matrix(path: Path) -> np.ndarray:
    """Load a 2-D float matrix without executing pickled objects."""
    try:
        matrix = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise FormatError(path.name, None, None, f"not a readable .npy array ({exc})") from exc
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise FormatError(
            path.name, None, None, f"expected a non-empty 2-D array, got shape {matrix.shape}"
        )
    if not np.issubdtype(matrix.dtype, np.number) or np.iscomplexobj(matrix):
        raise FormatError(path.name, None, None, f"expected real numbers, got dtype {matrix.dtype}")
    matrix = matrix.astype(np.float32, copy=False)
    bad = ~np.isfinite(matrix)
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        raise FormatError(
            path.name,
            row + 1,
            f"column {col}",
            "value is not finite (NaN or infinity)",
            where="row {}",
        )
    return matrix


def read_embeddings(directory: Path) -> Embeddings:
    """Read and validate an embeddings directory; raise FormatError naming the file."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FormatError(directory, None, None, "not a directory")
    for name in FILES:
        if not (directory / name).is_file():
            raise FormatError(directory / name, None, None, "missing file")
    captions = read_matrix(directory / "captions.npy")
    videos = read_matrix(directory / "videos.npy")
    if captions.shape[1] != videos.shape[1]:
        raise FormatError(
            "videos.npy",
            None,
            None,
            f"dimension {videos.shape[1]} differs from captions.npy's {captions.shape[1]}",
        )
    caption_keys = read_ids(directory / "caption_ids.txt")
    video_keys = read_ids(directory / "video_ids.txt")
    for name, keys, matrix in (
        ("caption_ids.txt", caption_keys, captions),
        ("video_ids.txt", video_keys, videos),
    ):
        if len(keys) != matrix.shape[0]:
            raise FormatError(
                name, None, None, f"{len(keys)} ids for {matrix.shape[0]} embedding rows"
            )
    return Embeddings(caption_keys, captions, video_keys, videos)
