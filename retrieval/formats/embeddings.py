"""Uploaded embeddings: ``captions.npy`` (n_captions x d), ``videos.npy`` (n_videos x d) and
``caption_ids.txt`` / ``video_ids.txt`` (one key per line in row order), all checked (shapes,
equal d, finite values, unique ids) before anything is registered."""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
from numpy.lib import format as np_format

from retrieval.formats.records import KEY_MAX_LENGTH, FormatError, check_size, read_lines

FILES = ("captions.npy", "videos.npy", "caption_ids.txt", "video_ids.txt")
NPY_MAGIC = b"\x93NUMPY"


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
        if len(key) > KEY_MAX_LENGTH:
            raise FormatError(path.name, number, "id", f"longer than {KEY_MAX_LENGTH} characters")
        if key in seen:
            raise FormatError(
                path.name, number, "id", f"duplicate id {key!r} (first on line {seen[key]})"
            )
        seen[key] = number
        keys.append(key)
    if not keys:
        raise FormatError(path.name, None, None, "empty file")
    return keys


def read_npy_header(path: Path) -> tuple[tuple[int, ...], np.dtype]:
    """Check from its header alone that ``path`` is a plain ``.npy`` file whose data fills
    it exactly, so a zip, a pickle, a truncated file or a header claiming a terabyte is a
    FormatError naming the file, not a MemoryError or a half-read array."""
    size = check_size(path, name=path.name)
    try:
        with open(path, "rb") as handle:
            start = handle.read(len(NPY_MAGIC))
            if start != NPY_MAGIC:
                raise FormatError(path.name, None, None, _not_npy(start))
            handle.seek(0)
            shape, _, dtype = npy_header(handle)
            offset = handle.tell()
    except FormatError:
        raise
    except Exception as exc:  # numpy parses the header with ast and tokenize: many types
        raise FormatError(
            path.name, None, None, f"not a readable .npy array (bad header: {exc})"
        ) from None
    if dtype.hasobject:
        raise FormatError(path.name, None, None, "holds Python objects (pickled), not numbers")
    expected = math.prod(shape) * dtype.itemsize
    if expected != size - offset:
        message = (
            f"header says shape {shape} of {dtype} ({expected:,} bytes of data) but the file "
            f"holds {size - offset:,} (truncated or corrupted)"
        )
        raise FormatError(path.name, None, None, message)
    return tuple(shape), dtype


def npy_header(handle: BinaryIO) -> tuple[tuple[int, ...], bool, np.dtype]:
    """``(shape, fortran order, dtype)`` from the ``.npy`` header ``handle`` starts at."""
    version = np_format.read_magic(handle)
    if version == (1, 0):
        return np_format.read_array_header_1_0(handle)
    return np_format.read_array_header_2_0(handle)


def _not_npy(start: bytes) -> str:
    """Why a file that lacks the ``.npy`` magic is not one, naming what it looks like."""
    if start.startswith(b"PK"):
        return "not a readable .npy array: a zip archive (.npz?); save it with numpy.save"
    if start[:1] == b"\x80":
        return "not a readable .npy array: a pickle; save the matrix with numpy.save"
    return "not a readable .npy array (no numpy magic header)"


def check_matrix_header(
    shape: tuple[int, ...], dtype: np.dtype, name: str, field: str | None = None
) -> None:
    """Refuse anything but a non-empty 2-D array of real numbers (``field``: which array)."""
    if len(shape) != 2 or shape[0] == 0 or shape[1] == 0:
        raise FormatError(name, None, field, f"expected a non-empty 2-D array, got shape {shape}")
    if dtype.fields is not None or not np.issubdtype(dtype, np.number) or dtype.kind == "c":
        raise FormatError(name, None, field, f"expected real numbers, got dtype {dtype}")


def finite_float32(matrix: np.ndarray, name: str, field: str | None = None) -> np.ndarray:
    """``matrix`` as float32, or a FormatError naming the first non-finite cell."""
    with np.errstate(over="ignore", invalid="ignore"):
        matrix = matrix.astype(np.float32, copy=False)
    bad = ~np.isfinite(matrix)
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        where = "row {}" if field is None else f"{field!r} row {{}}"
        message = "value is not finite (NaN or infinity, or too large for float32)"
        raise FormatError(name, row + 1, f"column {col}", message, where=where)
    return matrix


def read_matrix(path: Path) -> np.ndarray:
    """Load a non-empty 2-D matrix of real numbers as float32, never unpickling anything."""
    shape, dtype = read_npy_header(path)
    check_matrix_header(shape, dtype, path.name)
    try:
        matrix = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise FormatError(path.name, None, None, f"not a readable .npy array ({exc})") from None
    return finite_float32(matrix, path.name)


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
        message = f"dimension {videos.shape[1]} differs from captions.npy's {captions.shape[1]}"
        raise FormatError("videos.npy", None, None, message)
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
