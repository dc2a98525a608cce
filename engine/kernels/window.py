"""Numba kernels of window functions, over rows already sorted by partition
and order keys.

Frames are half-open row ranges [start, end) in sorted order.  For every
supported frame both ends are non-decreasing in the row position (within a
partition the bounds move forward with the row; the next partition starts
after the previous one ends), which the sliding min/max kernel relies on.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def range_offset_bounds(vals, valid, lo, hi, peer_start, peer_end, delta, want_start, out):
    """RANGE frame bound of each row with an offset.

    vals: order key values, ascending within partitions (DESC keys negated);
    valid: 1 where the key is not NULL; lo/hi: the non-NULL rows of the row's
    partition.  A start bound is the first row whose value is >= v + delta, an
    end bound (exclusive) the first row whose value is > v + delta.  Rows
    with a NULL key frame their NULL peers.
    """
    n = len(vals)
    for i in range(n):
        if valid[i] == 0:
            out[i] = peer_start[i] if want_start else peer_end[i]
            continue
        target = vals[i] + delta
        a = lo[i]
        b = hi[i]
        while a < b:
            m = (a + b) >> 1
            if vals[m] < target or (not want_start and vals[m] == target):
                a = m + 1
            else:
                b = m
        out[i] = a


@njit(nogil=True, cache=True)
def sliding_extreme(keys, valid, starts, ends, want_max, out):
    """Row index of the minimum (maximum) valid key in each frame, -1 when
    the frame holds no valid row.  Monotonic deque; O(n) for frames whose
    bounds never move backwards."""
    n = len(keys)
    dq = np.empty(n, np.int64)
    head = 0
    tail = 0
    nxt = 0
    for i in range(n):
        s = starts[i]
        e = ends[i]
        if nxt < s:
            nxt = s
        while nxt < e:
            if valid[nxt]:
                k = keys[nxt]
                if want_max:
                    while tail > head and keys[dq[tail - 1]] < k:
                        tail -= 1
                else:
                    while tail > head and keys[dq[tail - 1]] > k:
                        tail -= 1
                dq[tail] = nxt
                tail += 1
            nxt += 1
        while tail > head and dq[head] < s:
            head += 1
        out[i] = dq[head] if tail > head else -1


@njit(nogil=True, cache=True)
def segment_sums(vals, starts, ends, out):
    """Float sums of vals[start:end] per row: a short frame summed directly,
    a longer one from a segment tree (O(log n) nodes).  Prefix-sum
    differences would be cheaper but wrong: inf - inf is NaN (sum('inf')
    OVER (PARTITION BY k) gave NaN where DuckDB gives inf), and a prefix
    that passed a huge value cancels the frame's small ones."""
    n = len(vals)
    size = 1
    while size < n:
        size *= 2
    tree = np.zeros(2 * size, np.float64)
    for i in range(n):
        tree[size + i] = vals[i]
    for i in range(size - 1, 0, -1):
        tree[i] = tree[2 * i] + tree[2 * i + 1]
    for i in range(n):
        s = starts[i]
        e = ends[i]
        if i > 0 and s == starts[i - 1] and e == ends[i - 1]:
            out[i] = out[i - 1]                 # the same frame (a whole partition)
        elif e - s <= 64:
            acc = 0.0
            for j in range(s, e):
                acc += vals[j]
            out[i] = acc
        else:
            left = 0.0
            right = 0.0
            lo = s + size
            hi = e + size
            while lo < hi:
                if lo & 1:
                    left += tree[lo]
                    lo += 1
                if hi & 1:
                    hi -= 1
                    right = tree[hi] + right
                lo >>= 1
                hi >>= 1
            out[i] = left + right
