"""Kernels of the joins without equality keys (engine/operators/nljoin.py).

The build side's rows that can match are sorted on one int64 order key
(``sorted1``, ascending; rows whose key is NULL are left out).  A probe row's
inequality conditions on that key become a range [lo, hi) of sorted
positions (binary search); a second inequality on another build key (``k2``,
in the same sorted order) is checked per candidate.  A cross join is the
range [0, m) for every probe row.

Bound codes, a condition on a build key b against a probe value v:
    0 none,  1 b > v,  2 b >= v,  3 b < v,  4 b <= v

Every kernel that walks candidate pairs stops after ``budget`` candidates
(or when its output is full) and records where it stopped in ``state``
(probe row, sorted position), so a caller between two calls sees the
query's stop request and bounds what it holds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

NONE, GT, GE, LT, LE = 0, 1, 2, 3, 4
MIRRORED = {GT: LT, GE: LE, LT: GT, LE: GE}


@njit(nogil=True, cache=True, inline="always")
def _lower(keys, v):
    """First position whose key is >= v."""
    a, b = 0, len(keys)
    while a < b:
        m = (a + b) >> 1
        if keys[m] < v:
            a = m + 1
        else:
            b = m
    return a


@njit(nogil=True, cache=True, inline="always")
def _upper(keys, v):
    """First position whose key is > v."""
    a, b = 0, len(keys)
    while a < b:
        m = (a + b) >> 1
        if keys[m] <= v:
            a = m + 1
        else:
            b = m
    return a


@njit(nogil=True, cache=True, inline="always")
def _holds(b, v, code):
    if code == 1:
        return b > v
    if code == 2:
        return b >= v
    if code == 3:
        return b < v
    if code == 4:
        return b <= v
    return True


@njit(nogil=True, cache=True)
def probe_ranges(sorted1, va, code_a, vb, code_b, valid, lo, hi):
    """[lo, hi) of sorted positions whose key satisfies both bounds (code_a
    against va[i], code_b against vb[i]; code 0: no bound); empty where
    valid[i] == 0 (a NULL probe key)."""
    m = len(sorted1)
    for i in range(len(lo)):
        if valid[i] == 0:
            lo[i] = 0
            hi[i] = 0
            continue
        a, b = 0, m
        for t in range(2):
            code = code_a if t == 0 else code_b
            if code == 0:
                continue
            v = va[i] if t == 0 else vb[i]
            if code == 1:
                a = max(a, _upper(sorted1, v))
            elif code == 2:
                a = max(a, _lower(sorted1, v))
            elif code == 3:
                b = min(b, _lower(sorted1, v))
            else:
                b = min(b, _upper(sorted1, v))
        lo[i] = a
        hi[i] = max(a, b)


@njit(nogil=True, cache=True)
def range_pairs(lo, hi, perm, identity, k2, v2, code2, skip, has_skip, state,
                out_p, out_b, store, budget):
    """The next candidate pairs (probe row i, build row) over the ranges,
    probe row by probe row, each row's candidates in sorted order; those
    failing the second condition (k2[pos] code2 v2[i]) are skipped, as are
    probe rows with skip[i] (has_skip).  Writes up to len(out_p) pairs
    (only counts them unless ``store``); returns their number.  state =
    [probe row, position] to resume from; state[0] == len(lo) when all
    rows are done.  Stops after ``budget`` candidates."""
    n = len(lo)
    i = state[0]
    k = state[1]
    cap = len(out_p)
    cnt = 0
    work = 0
    while i < n:
        if has_skip and skip[i] != 0:
            i += 1
            k = -1
            continue
        if k < lo[i]:
            k = lo[i]
        end = hi[i]
        if code2 == 0:
            take = end - k
            if store:
                take = min(take, cap - cnt)
            take = min(take, budget - work)
            if take > 0:
                if store:
                    for t in range(take):
                        out_p[cnt + t] = i
                        out_b[cnt + t] = k + t if identity else perm[k + t]
                cnt += take
                work += take
                k += take
            if k < end:
                state[0] = i
                state[1] = k
                return cnt
        else:
            v = v2[i]
            while k < end:
                if (store and cnt == cap) or work >= budget:
                    state[0] = i
                    state[1] = k
                    return cnt
                work += 1
                if _holds(k2[k], v, code2):
                    if store:
                        out_p[cnt] = i
                        out_b[cnt] = k if identity else perm[k]
                    cnt += 1
                k += 1
        i += 1
        k = -1
    state[0] = n
    state[1] = -1
    return cnt


@njit(nogil=True, cache=True)
def range_exists(lo, hi, k2, v2, code2, state, matched, budget):
    """matched[i] = 1 when some candidate of row i satisfies the second
    condition (code2 == 0: when its range is not empty).  Resumable like
    range_pairs; returns True when every row is done."""
    n = len(lo)
    i = state[0]
    k = state[1]
    work = 0
    while i < n:
        if k < lo[i]:
            k = lo[i]
        if code2 == 0:
            matched[i] = 1 if hi[i] > lo[i] else 0
        else:
            v = v2[i]
            found = 0
            end = hi[i]
            while k < end:
                if work >= budget:
                    state[0] = i
                    state[1] = k
                    return False
                work += 1
                if _holds(k2[k], v, code2):
                    found = 1
                    break
                k += 1
            matched[i] = found
        work += 1
        i += 1
        k = -1
    state[0] = n
    state[1] = -1
    return True


@njit(nogil=True, cache=True)
def widths(k1, k2):
    """(max(k2 - k1), max(k1 - k2), ok) over the rows; ok is False when a
    difference overflows int64 (then no range can be narrowed by them)."""
    up = np.int64(-(1 << 62))
    down = np.int64(-(1 << 62))
    for j in range(len(k1)):
        a = k1[j]
        b = k2[j]
        if (a >= 0) != (b >= 0):
            # opposite signs: the difference may overflow
            if a >= 0 and b < 0 and a > np.int64(0x7FFFFFFFFFFFFFFF) + b:
                return up, down, False
            if a < 0 and b >= 0 and b > np.int64(0x7FFFFFFFFFFFFFFF) + a:
                return up, down, False
        d = b - a
        if d > up:
            up = d
        if -d > down:
            down = -d
    return up, down, True
