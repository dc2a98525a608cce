"""Kernels of the join key filter (engine/filtering/join_keys.py): a
bitmap over the build side's key range, and the probe that ANDs "the key
may have a partner" into a scan's row mask."""

from __future__ import annotations

import numpy as np
from numba import njit

RANGE_ONLY, BITMAP, KEY_SET = 0, 1, 2       # what and_key_member tests past the range


@njit(nogil=True, cache=True)
def fill_key_bitmap(keys, nulls, has_nulls, lo, bits):
    """Set bit (key - lo) of ``bits`` for every non-NULL key."""
    for i in range(keys.shape[0]):
        if has_nulls and nulls[i]:
            continue
        v = np.int64(keys[i]) - lo
        bits[v >> 6] |= np.uint64(1) << np.uint64(v & 63)


@njit(nogil=True, cache=True, inline="always")
def _slot(v, shift):
    return np.int64((np.uint64(v) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(shift))


@njit(nogil=True, cache=True)
def fill_key_set(keys, nulls, has_nulls, shift, table, used):
    """Insert every non-NULL key into the open-addressing set ``table``
    (2**(64 - shift) slots, ``used`` marks the taken ones)."""
    mask = table.shape[0] - 1
    for i in range(keys.shape[0]):
        if has_nulls and nulls[i]:
            continue
        v = np.int64(keys[i])
        s = _slot(v, shift)
        while used[s] and table[s] != v:
            s = (s + 1) & mask
        table[s] = v
        used[s] = 1


@njit(nogil=True, cache=True)
def and_key_member(keys, nulls, has_nulls, lo, hi, mode, bits, shift, table, used, mask, first):
    """mask[i] = (first or mask[i]) and keys[i] is not NULL, in [lo, hi]
    and, by ``mode``, nothing more (RANGE_ONLY), its bit of ``bits`` set
    (BITMAP) or in the open-addressing set (``table``, ``used``, ``shift``:
    KEY_SET); the rows left."""
    wrap = table.shape[0] - 1
    kept = 0
    for i in range(keys.shape[0]):
        m = first or mask[i]
        if m:
            v = np.int64(keys[i])
            if (has_nulls and nulls[i]) or v < lo or v > hi:
                m = False
            elif mode == BITMAP:
                d = v - lo
                m = (bits[d >> 6] >> np.uint64(d & 63)) & np.uint64(1) != 0
            elif mode == KEY_SET:
                s = _slot(v, shift)
                m = False
                while used[s]:
                    if table[s] == v:
                        m = True
                        break
                    s = (s + 1) & wrap
        mask[i] = m
        kept += m
    return kept
