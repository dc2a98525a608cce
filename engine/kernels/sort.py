"""Sorting kernels: order-preserving integer keys for every storage type,
bytewise string comparison and dense string ranks, string gathering."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.kernels.strings import _cmp_one as compare_strings  # noqa: F401 (used by aggregates)

_LOW32 = np.uint64(0xFFFFFFFF)


@njit(nogil=True, cache=True, inline="always")
def byte_at(w0, w1, heap, k):
    """Byte k of the string whose view is (w0, w1)."""
    if k < 4:
        return np.int64((w0 >> np.uint64(32 + 8 * k)) & np.uint64(0xFF))
    length = np.int64(w0 & np.uint64(0xFFFFFFFF))
    if length <= 12:
        return np.int64((w1 >> np.uint64(8 * (k - 4))) & np.uint64(0xFF))
    return np.int64(heap[np.int64(w1) + k])


@njit(nogil=True, cache=True)
def prefix_keys(views, heap, out):
    """First 8 bytes of each string, big endian (so integer order = byte order)."""
    for i in range(views.shape[0]):
        w0 = views[i, 0]
        w1 = views[i, 1]
        length = np.int64(w0 & np.uint64(0xFFFFFFFF))
        m = length if length < 8 else 8
        acc = np.uint64(0)
        for k in range(m):
            acc |= np.uint64(byte_at(w0, w1, heap, k)) << np.uint64(8 * (7 - k))
        out[i] = acc


@njit(nogil=True, cache=True)
def _merge_sort_run(idx, lo, hi, tmp, views, heap):
    width = 1
    n = hi - lo
    while width < n:
        start = lo
        while start < hi:
            mid = min(start + width, hi)
            end = min(start + 2 * width, hi)
            a, b, k = start, mid, start
            while a < mid and b < end:
                ia = idx[a]
                ib = idx[b]
                if compare_strings(views[ib, 0], views[ib, 1], heap,
                                   views[ia, 0], views[ia, 1], heap) < 0:
                    tmp[k] = ib
                    b += 1
                else:
                    tmp[k] = ia
                    a += 1
                k += 1
            while a < mid:
                tmp[k] = idx[a]
                a += 1
                k += 1
            while b < end:
                tmp[k] = idx[b]
                b += 1
                k += 1
            start = end
        for k in range(lo, hi):
            idx[k] = tmp[k]
        width *= 2


@njit(nogil=True, cache=True)
def refine_and_rank(order, keys, views, heap, ranks):
    """order sorts rows by prefix key (stable); sort runs of equal prefix by
    full comparison, then write dense ranks (equal strings, equal rank)."""
    n = order.shape[0]
    tmp = np.empty(n, np.int64)
    i = 0
    while i < n:
        j = i + 1
        while j < n and keys[order[j]] == keys[order[i]]:
            j += 1
        if j - i > 1:
            _merge_sort_run(order, i, j, tmp, views, heap)
        i = j
    r = 0
    for k in range(n):
        if k > 0:
            p = order[k - 1]
            c = order[k]
            if keys[p] != keys[c] or compare_strings(views[p, 0], views[p, 1], heap,
                                                     views[c, 0], views[c, 1], heap) != 0:
                r += 1
        ranks[order[k]] = r


def string_ranks(views: np.ndarray, heap: np.ndarray | None) -> np.ndarray:
    """Dense int64 ranks of strings in bytewise order."""
    views = np.ascontiguousarray(views, dtype=np.uint64).reshape(-1, 2)
    heap = np.zeros(0, np.uint8) if heap is None else np.ascontiguousarray(heap, np.uint8)
    n = len(views)
    keys = np.empty(n, np.uint64)
    prefix_keys(views, heap, keys)
    order = np.argsort(keys, kind="stable").astype(np.int64)
    ranks = np.empty(n, np.int64)
    refine_and_rank(order, keys, views, heap, ranks)
    return ranks


def float_sort_keys(data: np.ndarray) -> np.ndarray:
    """float -> uint64 whose unsigned order is the float order (NaN greatest,
    -0.0 == 0.0)."""
    f = data.astype(np.float64) + 0.0
    f[np.isnan(f)] = np.nan
    bits = f.view(np.uint64)
    neg = (bits >> np.uint64(63)) == 1
    return np.where(neg, ~bits, bits | np.uint64(1 << 63))


def float_from_sort_keys(keys: np.ndarray) -> np.ndarray:
    top = (keys >> np.uint64(63)) == 1
    bits = np.where(top, keys ^ np.uint64(1 << 63), ~keys)
    return bits.view(np.float64)


# ---------------------------------------------------------------- gathering

@njit(nogil=True, cache=True)
def _gather_size(views, idx):
    total = 0
    for k in range(idx.shape[0]):
        ln = np.int64(views[idx[k], 0] & np.uint64(0xFFFFFFFF))
        if ln > 12:
            total += ln
    return total


@njit(nogil=True, cache=True)
def _gather_copy(views, heap, idx, out_views, out_heap):
    pos = 0
    for k in range(idx.shape[0]):
        w0 = views[idx[k], 0]
        w1 = views[idx[k], 1]
        ln = np.int64(w0 & np.uint64(0xFFFFFFFF))
        out_views[k, 0] = w0
        if ln > 12:
            off = np.int64(w1)
            for b in range(ln):
                out_heap[pos + b] = heap[off + b]
            out_views[k, 1] = np.uint64(pos)
            pos += ln
        else:
            out_views[k, 1] = w1


def gather_strings(views: np.ndarray, heap: np.ndarray | None, idx: np.ndarray):
    """Rows idx of a string column copied into a fresh compact heap."""
    views = np.ascontiguousarray(views, dtype=np.uint64).reshape(-1, 2)
    heap = np.zeros(0, np.uint8) if heap is None else np.ascontiguousarray(heap, np.uint8)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    size = _gather_size(views, idx)
    out_views = np.empty((len(idx), 2), np.uint64)
    out_heap = np.empty(size, np.uint8)
    _gather_copy(views, heap, idx, out_views, out_heap)
    return out_views, out_heap
