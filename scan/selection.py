"""Row selection by a boolean mask (numba), for the decoder and the engine.

numpy's boolean indexing (``a[mask]``) and ``np.compress`` branch on every
row: on masks that keep 15-50% of a block's rows at random they take 5-15x
longer than this branchless loop, which writes every row and advances the
output position by the mask bit (measured on 113k int64 rows: 291 and 525 us
for ``a[mask]`` at 15% and 50% kept, 33-34 us here).  ``out`` needs one slot
of slack past the rows kept.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# element size -> a same-size type the kernel is compiled for (one
# specialization per size, whatever the dtype)
_AS = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64, 16: np.complex128}

# the selection mask a selecting kernel is handed when it is told not to
# select (numba wants an array of the mask's type all the same)
NO_SEL = np.ones(1, np.uint8)


@njit(nogil=True, cache=True)
def _compress(data, mask, out):
    """Rows of ``data`` whose mask byte is 1 into ``out``; their count, or
    -1 when ``out`` is too small (never written past)."""
    cap = out.shape[0]
    j = 0
    for i in range(data.shape[0]):
        if j >= cap:
            return -1
        out[j] = data[i]
        j += mask[i]
    return j


def compress_rows(data: np.ndarray, mask: np.ndarray, kept: int | None = None) -> np.ndarray:
    """``data[mask]`` for a bool ``mask`` keeping ``kept`` rows (counted
    when not given): 1-D arrays of fixed-size elements and (n, 2) uint64
    string views; anything else (object arrays, other shapes) goes through
    np.compress."""
    if kept is None:
        kept = int(np.count_nonzero(mask))
    if data.ndim == 2 and data.shape[1] == 2 and data.dtype == np.uint64 \
            and data.flags.c_contiguous:
        rows = data.view(np.complex128).reshape(-1)
        return compress_rows(rows, mask, kept).view(np.uint64).reshape(-1, 2)
    if data.ndim != 1 or data.dtype == object or data.dtype.itemsize not in _AS \
            or len(mask) != len(data):
        return np.compress(mask, data, axis=0)
    as_type = _AS[data.dtype.itemsize]
    out = np.empty(kept + 1, data.dtype)
    j = _compress(data.view(as_type), mask.view(np.uint8), out.view(as_type))
    if j != kept:
        raise AssertionError(f"compress_rows kept {j} rows, expected {kept}")
    return out[:kept]
