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
def fill_key_set(keys, nulls, has_nulls, shift, table, used, tags, tag_shift):
    """Insert every non-NULL key into the open-addressing set ``table``
    (2**(64 - shift) slots, ``used`` marks the taken ones) and set its tag
    bit (the top 64 - tag_shift bits of the same hash) in ``tags``."""
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
        t = _slot(v, tag_shift)
        tags[t >> 6] |= np.uint64(1) << np.uint64(t & 63)


@njit(nogil=True, cache=True)
def and_key_member(keys, nulls, has_nulls, lo, hi, mode, bits, shift, table, used, tag_shift,
                   mask, first):
    """mask[i] = (first or mask[i]) and keys[i] is not NULL, in [lo, hi]
    and, by ``mode``, nothing more (RANGE_ONLY), its bit of ``bits`` set
    (BITMAP) or in the open-addressing set (``table``, ``used``, ``shift``;
    KEY_SET: ``bits`` holds the keys' tag bits, fill_key_set's, tested
    first, and the set is probed only where the tag is set); the rows left.  Each mode is its own branch-free loop
    (the set's probe aside): the keys of a scan block pass or fail at
    random, so a branch per row was a misprediction per few rows."""
    if mode == BITMAP:
        return _and_bitmap(keys, nulls, has_nulls, lo, hi, bits, mask, first)
    span = np.uint64(hi - lo) if hi >= lo else np.uint64(0)
    empty = hi < lo
    wrap = table.shape[0] - 1
    kept = 0
    for i in range(keys.shape[0]):
        v = np.int64(keys[i])
        m = (np.uint64(v - lo) <= span) and not empty
        if has_nulls:
            m = m and nulls[i] == 0
        if not first:
            m = m and mask[i]
        if m and mode == KEY_SET:
            t = _slot(v, tag_shift)
            if (bits[t >> 6] >> np.uint64(t & 63)) & np.uint64(1) == 0:
                m = False
            else:
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


@njit(nogil=True, cache=True)
def _and_bitmap(keys, nulls, has_nulls, lo, hi, bits, mask, first):
    """and_key_member's BITMAP mode: bit (key - lo) of ``bits`` (a key
    outside [lo, hi] reads bit 0 and is masked out)."""
    span = np.uint64(hi - lo)
    kept = 0
    for i in range(keys.shape[0]):
        d = np.uint64(np.int64(keys[i]) - lo)
        inside = d <= span
        at = d if inside else np.uint64(0)
        m = inside & (((bits[at >> np.uint64(6)] >> (at & np.uint64(63))) & np.uint64(1)) != 0)
        if has_nulls:
            m = m & (nulls[i] == 0)
        if not first:
            m = m & mask[i]
        mask[i] = m
        kept += m
    return kept
