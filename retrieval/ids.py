"""Pure: where ids sit in an id array, and (row, item) pairs packed into one sortable int64 key,
vectorised (one ``searchsorted`` per call) and with one checked limit, :data:`KEY_LIMIT`."""

from dataclasses import dataclass

import numpy as np

#: Every pair key is below 2**61, so a key shifted left by two bits (a 2-bit tag in the low
#: bits, as :func:`retrieval.scoring.metrics.judgements_from_arrays` uses) still fits in int64.
KEY_LIMIT = 1 << 61


def lookup(sorted_ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position of each wanted id in ascending ``sorted_ids`` (a valid index even where absent),
    and a mask of those found."""
    sorted_ids = np.asarray(sorted_ids)
    wanted = np.asarray(wanted)
    if sorted_ids.size == 0:
        return np.zeros(wanted.shape, dtype=np.intp), np.zeros(wanted.shape, dtype=bool)
    at = np.minimum(np.searchsorted(sorted_ids, wanted), sorted_ids.size - 1)
    return at, sorted_ids[at] == wanted


def contains(sorted_ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Whether each wanted id occurs in ascending ``sorted_ids``."""
    return lookup(sorted_ids, wanted)[1]


def positions_of(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Index of each wanted id in ``ids`` (any order, distinct), -1 where absent."""
    ids = np.asarray(ids, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    at, found = lookup(ids[order], np.asarray(wanted, dtype=np.int64))
    if not ids.size:
        return np.full(at.shape, -1, dtype=np.int64)
    return np.where(found, order[at], -1)


@dataclass(frozen=True)
class PairKeys:
    """(row, item) pairs as int64 keys ``row * span + code`` that sort by row, then item;
    ``code`` is the item id, or its position in ``vocabulary`` (sorted distinct items) where
    ids are sparse or huge. ``max(n_rows, 1) * span`` never exceeds :data:`KEY_LIMIT`."""

    n_rows: int
    span: int
    vocabulary: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.n_rows < 0 or self.span < 1:
            raise ValueError("pair keys need n_rows >= 0 and span >= 1")
        if max(self.n_rows, 1) * self.span > KEY_LIMIT:
            raise ValueError(
                f"{self.n_rows} rows x {self.span} items do not fit below the pair-key limit "
                f"2**61; number the items first (PairKeys.fit)"
            )

    @classmethod
    def fit(cls, n_rows: int, items: np.ndarray, dense_limit: int = KEY_LIMIT) -> "PairKeys":
        """Keys for pairs over ``n_rows`` rows and the non-negative ``items``: the ids themselves
        when ``n_rows x (largest item + 1)`` fits ``dense_limit``, else numbered."""
        items = np.asarray(items, dtype=np.int64)
        if items.size and items.min() < 0:
            raise ValueError("item ids must be non-negative")
        span = int(items.max()) + 1 if items.size else 1
        if max(n_rows, 1) * span <= min(dense_limit, KEY_LIMIT):
            return cls(n_rows, span)
        vocabulary = np.unique(items)
        return cls(n_rows, int(vocabulary.size), vocabulary)

    def encode(self, rows: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Keys of arbitrary pairs (rows in ``0..n_rows - 1``, else a ValueError); -1 for a pair
        whose item these keys cannot hold (padding, beyond the span or the vocabulary)."""
        rows = np.asarray(rows, dtype=np.int64)
        items = np.asarray(items, dtype=np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= self.n_rows):
            raise ValueError(f"pair rows must lie in 0..{self.n_rows - 1}")
        if self.vocabulary is None:
            known = (items >= 0) & (items < self.span)
            return np.where(known, rows * self.span + items, -1)
        codes, known = lookup(self.vocabulary, items)
        return np.where(known, rows * self.span + codes, -1)

    def pack(self, rows: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Keys of pairs whose items these keys hold; a ValueError names the first that is not."""
        keys = self.encode(rows, items)
        if keys.size and keys.min() < 0:
            bad = np.asarray(items, dtype=np.int64).ravel()[int(np.argmin(keys.ravel()))]
            raise ValueError(f"item id {bad} is outside the ids these pair keys were fit to")
        return keys

    def unpack(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows and item ids of packed keys."""
        rows, codes = np.divmod(np.asarray(keys, dtype=np.int64), self.span)
        return rows, codes if self.vocabulary is None else self.vocabulary[codes]
