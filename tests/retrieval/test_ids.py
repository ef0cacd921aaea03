"""Id lookups and pair keys: hand-computed cases, empty arrays, absent ids, the key limit."""

import numpy as np
import pytest

from retrieval.ids import KEY_LIMIT, PairKeys, contains, lookup, positions_of


def test_lookup_finds_positions_and_flags_absent_ids():
    at, found = lookup(np.array([2, 5, 9]), np.array([5, 2, 3, 9, 10, -1]))
    assert found.tolist() == [True, True, False, True, False, False]
    assert at[found].tolist() == [1, 0, 2]
    assert ((at >= 0) & (at < 3)).all()  # absent ids still get a usable index
    assert contains(np.array([2, 5, 9]), np.array([[9, 4], [2, 2]])).tolist() == [
        [True, False],
        [True, True],
    ]


def test_lookup_on_empty_arrays():
    at, found = lookup(np.zeros(0, np.int64), np.array([1, 2]))
    assert at.tolist() == [0, 0] and found.tolist() == [False, False]
    at, found = lookup(np.array([1, 2]), np.zeros(0, np.int64))
    assert at.shape == found.shape == (0,)


def test_positions_of_any_order():
    ids = np.array([40, 10, 30])
    assert positions_of(ids, np.array([10, 30, 40, 20])).tolist() == [1, 2, 0, -1]
    assert positions_of(ids, np.array([[30], [99]])).tolist() == [[2], [-1]]
    assert positions_of(np.zeros(0, np.int64), np.array([1, 2])).tolist() == [-1, -1]
    assert positions_of(ids, np.zeros(0, np.int64)).tolist() == []


def test_dense_pair_keys_pack_and_unpack():
    keys = PairKeys.fit(3, np.array([4, 0, 7]))
    assert keys.vocabulary is None and keys.span == 8
    packed = keys.pack(np.array([0, 2, 1]), np.array([7, 0, 4]))
    assert packed.tolist() == [7, 16, 12]
    rows, items = keys.unpack(packed)
    assert rows.tolist() == [0, 2, 1] and items.tolist() == [7, 0, 4]
    # Padding and ids beyond the span cannot be held: -1 from encode, a ValueError from pack.
    assert keys.encode(np.array([0, 1, 2]), np.array([-1, 8, 3])).tolist() == [-1, -1, 19]
    with pytest.raises(ValueError, match="item id 8"):
        keys.pack(np.array([0]), np.array([8]))
    with pytest.raises(ValueError, match=r"rows must lie in 0\.\.2"):
        keys.encode(np.array([3]), np.array([0]))


def test_huge_ids_are_numbered_and_keys_still_sort_by_row_then_item():
    big = 2**62
    keys = PairKeys.fit(2, np.array([big, 5, big + 1]))
    assert keys.vocabulary.tolist() == [5, big, big + 1] and keys.span == 3
    packed = keys.pack(np.array([1, 0, 0]), np.array([5, big + 1, big]))
    assert packed.tolist() == [3, 2, 1]
    rows, items = keys.unpack(packed)
    assert rows.tolist() == [1, 0, 0] and items.tolist() == [5, big + 1, big]
    assert keys.encode(np.array([0]), np.array([6])).tolist() == [-1]


def test_dense_limit_chooses_numbering():
    assert PairKeys.fit(10, np.array([99]), dense_limit=1000).vocabulary is None
    assert PairKeys.fit(10, np.array([99]), dense_limit=999).vocabulary.tolist() == [99]


def test_keys_at_the_limit_raise_a_clear_error():
    assert PairKeys(1, KEY_LIMIT).span == KEY_LIMIT  # the largest key is KEY_LIMIT - 1
    with pytest.raises(ValueError, match=r"2\*\*61"):
        PairKeys(2, KEY_LIMIT // 2 + 1)
    with pytest.raises(ValueError, match=r"2\*\*61"):
        PairKeys(1, KEY_LIMIT + 1)
    with pytest.raises(ValueError, match="non-negative"):
        PairKeys.fit(1, np.array([-3]))


def test_pair_keys_of_nothing():
    keys = PairKeys.fit(0, np.zeros(0, np.int64))
    assert keys.pack(np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []
    rows, items = keys.unpack(np.zeros(0, np.int64))
    assert rows.tolist() == items.tolist() == []
