"""Trimming spaces off flat strings (offsets + bytes)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def trim_flat(offsets, data, left, right):
    """Strings without leading (left) and/or trailing (right) ' ' bytes."""
    n = len(offsets) - 1
    starts = np.empty(n, np.int64)
    ends = np.empty(n, np.int64)
    total = 0
    for i in range(n):
        s = offsets[i]
        e = offsets[i + 1]
        if left:
            while s < e and data[s] == 32:
                s += 1
        if right:
            while e > s and data[e - 1] == 32:
                e -= 1
        starts[i] = s
        ends[i] = e
        total += e - s
    out_off = np.empty(n + 1, np.int64)
    out = np.empty(total, np.uint8)
    pos = 0
    out_off[0] = 0
    for i in range(n):
        for j in range(starts[i], ends[i]):
            out[pos] = data[j]
            pos += 1
        out_off[i + 1] = pos
    return out_off, out
