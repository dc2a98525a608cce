"""compress_rows (scan/selection.py) against numpy's boolean
indexing: every element size, string views, object arrays, empty and full
masks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scan.selection import compress_rows

DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.float32,
          np.int64, np.uint64, np.float64, np.complex128, "datetime64[D]"]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3000), st.floats(0, 1), st.integers(0, 2**31 - 1))
def test_matches_boolean_indexing(n, keep, seed):
    rng = np.random.default_rng(seed)
    mask = rng.random(n) < keep
    kept = int(mask.sum())
    for dtype in DTYPES:
        data = rng.integers(-1000, 1000, n).astype(dtype)
        got = compress_rows(data, mask, kept)
        assert got.dtype == data.dtype and np.array_equal(got, data[mask]), dtype
    views = rng.integers(0, 2**63, (n, 2), dtype=np.uint64)
    assert np.array_equal(compress_rows(views, mask, kept), views[mask])
    objects = np.array([10**30 + i for i in range(n)], dtype=object)
    assert list(compress_rows(objects, mask, kept)) == list(objects[mask])


def test_slices_and_a_wrong_count():
    data = np.arange(100, dtype=np.int64)[::2]            # strided view
    mask = np.arange(50) % 3 == 0
    assert np.array_equal(compress_rows(data, mask, int(mask.sum())), data[mask])
    with pytest.raises(AssertionError):
        compress_rows(np.arange(10), np.ones(10, bool), 3)
