"""Numba kernels of stats/columns.py: string bytes copied out of views and
values scattered into slots.  A module of their own so that importing the
statistics (the planner does, for every query) loads no numba."""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.memops import copy_bytes


@njit(nogil=True, cache=True)
def copy_view_bytes(views, heap, offsets, data):
    """data[offsets[i]:offsets[i + 1]] = the bytes of view i."""
    for i in range(views.shape[0]):
        w0 = views[i, 0]
        w1 = views[i, 1]
        n = np.int64(w0 & np.uint64(0xFFFFFFFF))
        o = offsets[i]
        if n > 12:
            copy_bytes(data, o, heap, np.int64(w1), n)
            continue
        lo = (w0 >> np.uint64(32)) | (w1 << np.uint64(32))      # bytes 0..7
        hi = w1 >> np.uint64(32)                                  # bytes 8..11
        for k in range(n):
            word = lo if k < 8 else hi
            data[o + k] = np.uint8((word >> np.uint64(8 * (k & 7))) & np.uint64(0xFF))


@njit(nogil=True, cache=True)
def scatter_value_bytes(src, src_offsets, slots, dst_offsets, dst):
    """Value i of (src, src_offsets) to value slots[i] of (dst, dst_offsets)."""
    for i in range(slots.shape[0]):
        a = src_offsets[i]
        o = dst_offsets[slots[i]]
        copy_bytes(dst, o, src, a, src_offsets[i + 1] - a)
