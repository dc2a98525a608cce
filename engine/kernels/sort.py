"""Sorting kernels: order-preserving integer keys for every storage type,
bytewise string comparison and dense string ranks (MSD radix over 8-byte
chunks), a stable LSD radix sort of (key, index) pairs, string gathering."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.kernels.strings import compare_strings
from scan.memops import copy_bytes

_LOW32 = np.uint64(0xFFFFFFFF)
_BYTE = np.uint64(0xFF)


@njit(nogil=True, cache=True, inline="always")
def byte_at(w0, w1, heap, k):
    """Byte k of the string whose view is (w0, w1)."""
    if k < 4:
        return np.int64((w0 >> np.uint64(32 + 8 * k)) & np.uint64(0xFF))
    length = np.int64(w0 & np.uint64(0xFFFFFFFF))
    if length <= 12:
        return np.int64((w1 >> np.uint64(8 * (k - 4))) & np.uint64(0xFF))
    return np.int64(heap[np.int64(w1) + k])


@njit(nogil=True, cache=True, inline="always")
def chunk_at(w0, w1, heap, depth):
    """Bytes depth..depth+7 of a string, big endian, zero padded (so integer
    order is byte order)."""
    length = np.int64(w0 & _LOW32)
    end = min(length, depth + 8)
    acc = np.uint64(0)
    for k in range(depth, end):
        acc |= np.uint64(byte_at(w0, w1, heap, k)) << np.uint64(8 * (7 - k + depth))
    return acc


@njit(nogil=True, cache=True)
def radix_sort_pairs(keys, idx, tmp_keys, tmp_idx):
    """Stable sort of (keys, idx) by the uint64 keys (LSD, 8-bit digits,
    digits equal in every row skipped); the result is left in keys/idx."""
    n = keys.shape[0]
    if n < 2:
        return
    counts = np.zeros((8, 256), np.int64)
    for i in range(n):
        k = keys[i]
        for d in range(8):
            counts[d, np.int64((k >> np.uint64(8 * d)) & _BYTE)] += 1
    src_k, src_i, dst_k, dst_i = keys, idx, tmp_keys, tmp_idx
    swapped = False
    offsets = np.empty(256, np.int64)
    for d in range(8):
        shift = np.uint64(8 * d)
        if counts[d, np.int64((keys[0] >> shift) & _BYTE)] == n:
            continue
        total = 0
        for b in range(256):
            offsets[b] = total
            total += counts[d, b]
        for i in range(n):
            k = src_k[i]
            b = np.int64((k >> shift) & _BYTE)
            p = offsets[b]
            dst_k[p] = k
            dst_i[p] = src_i[i]
            offsets[b] = p + 1
        src_k, src_i, dst_k, dst_i = dst_k, dst_i, src_k, src_i
        swapped = not swapped
    if swapped:
        keys[:] = tmp_keys
        idx[:] = tmp_idx


@njit(nogil=True, cache=True)
def _insertion_sort(order, lo, hi, views, heap):
    for i in range(lo + 1, hi):
        r = order[i]
        j = i - 1
        while j >= lo and compare_strings(views[r, 0], views[r, 1], heap,
                                          views[order[j], 0], views[order[j], 1], heap) < 0:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = r


@njit(nogil=True, cache=True)
def string_sort_ranks(views, heap):
    """Dense int64 ranks of strings in bytewise order.  MSD radix: rows are
    sorted by bytes 0..7, then every group tying there by bytes 8..15, and
    so on; groups of strings that all ended tie up to trailing zero bytes
    and are ordered by length; groups of one view (a dictionary entry) are
    done; small groups are insertion-sorted."""
    n = views.shape[0]
    order = np.arange(n)
    keys = np.empty(n, np.uint64)
    tmp_keys = np.empty(n, np.uint64)
    tmp_order = np.empty(n, np.int64)
    new = np.zeros(n, np.bool_)          # sorted row k differs from row k - 1
    if n:
        new[0] = True
    stack = [(0, n, 0)]
    while len(stack):
        lo, hi, depth = stack.pop()
        if hi - lo <= 16:
            _insertion_sort(order, lo, hi, views, heap)
            for k in range(lo + 1, hi):
                a = order[k - 1]
                b = order[k]
                new[k] = compare_strings(views[a, 0], views[a, 1], heap,
                                         views[b, 0], views[b, 1], heap) != 0
            continue
        first = order[lo]
        same = True                      # one view (e.g. one dictionary entry)
        for k in range(lo + 1, hi):
            r = order[k]
            if views[r, 0] != views[first, 0] or views[r, 1] != views[first, 1]:
                same = False
                break
        if same:
            continue
        ended = True
        for k in range(lo, hi):
            r = order[k]
            w0 = views[r, 0]
            if np.int64(w0 & _LOW32) > depth:
                ended = False
            keys[k] = chunk_at(w0, views[r, 1], heap, depth)
        if ended:                        # equal but for trailing zero bytes
            for k in range(lo, hi):
                keys[k] = views[order[k], 0] & _LOW32
        radix_sort_pairs(keys[lo:hi], order[lo:hi], tmp_keys[lo:hi], tmp_order[lo:hi])
        a = lo
        while a < hi:
            b = a + 1
            while b < hi and keys[b] == keys[a]:
                b += 1
            if a > lo:
                new[a] = True
            if b - a > 1 and not ended:
                stack.append((a, b, depth + 8))
            a = b
    ranks = np.empty(n, np.int64)
    r = -1
    for k in range(n):
        if new[k]:
            r += 1
        ranks[order[k]] = r
    return ranks


def string_ranks(views: np.ndarray, heap: np.ndarray | None) -> np.ndarray:
    """Dense int64 ranks of strings in bytewise order."""
    views = np.ascontiguousarray(views, dtype=np.uint64).reshape(-1, 2)
    heap = np.zeros(0, np.uint8) if heap is None else np.ascontiguousarray(heap, np.uint8)
    return string_sort_ranks(views, heap)


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
            copy_bytes(out_heap, pos, heap, off, ln)
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
