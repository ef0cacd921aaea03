"""Uploaded feature experts: one ``<video key>.npz`` per video with three 2-D float arrays,
``appearance`` (T x d), ``action`` (T x d) and ``objects`` (N x d), the sequences Zhu,
Bresson & Lim's correlation transformer reads. Each is checked from its header before its
data is read, then for finite values; every error names the file and the array."""

import zipfile
from pathlib import Path

import numpy as np

from retrieval.formats.embeddings import check_matrix_header, finite_float32, npy_header
from retrieval.formats.records import FormatError, check_size, max_upload_bytes

EXPERT_ARRAYS: tuple[str, ...] = ("appearance", "action", "objects")


def _read_member(archive: zipfile.ZipFile, name: str, shown: str) -> np.ndarray:
    info = archive.getinfo(f"{name}.npy")
    if info.file_size > max_upload_bytes():
        raise FormatError(shown, None, name, f"{info.file_size:,} bytes: over the upload limit")
    with archive.open(info) as handle:
        try:
            shape, fortran, dtype = npy_header(handle)
        except Exception as exc:  # numpy parses the header with ast and tokenize: many types
            raise FormatError(shown, None, name, f"not a readable .npy array ({exc})") from None
        if dtype.hasobject:
            raise FormatError(shown, None, name, "holds Python objects (pickled), not numbers")
        check_matrix_header(tuple(shape), dtype, shown, name)
        expected = int(np.prod(shape)) * dtype.itemsize
        data = handle.read(expected + 1)
    if len(data) != expected:
        raise FormatError(
            shown, None, name, f"header says shape {shape} of {dtype} but the data is "
            f"{len(data):,} bytes, not {expected:,} (truncated or corrupted)",
        )  # fmt: skip
    matrix = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    return finite_float32(matrix, shown, name)


def read_experts(path: Path) -> dict[str, np.ndarray]:
    """The three float32 arrays of one ``.npz`` file, by name; FormatError naming file and array."""
    path = Path(path)
    check_size(path, name=path.name)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise FormatError(path.name, None, None, f"not a readable .npz archive ({exc})") from None
    with archive:
        members = {info.filename for info in archive.infolist()}
        for name in EXPERT_ARRAYS:
            if f"{name}.npy" not in members:
                present = ", ".join(sorted(m.removesuffix(".npy") for m in members)) or "none"
                raise FormatError(
                    path.name, None, name, f"missing array (found: {present}); expected "
                    f"{', '.join(EXPERT_ARRAYS)}",
                )  # fmt: skip
        return {name: _read_member(archive, name, path.name) for name in EXPERT_ARRAYS}
