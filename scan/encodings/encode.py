"""Encoding kernels of the writer (scan/writer.py): the RLE/bit-packed
hybrid, PLAIN byte arrays, dictionary building, string gathering from
views and per-page minima and maxima of byte strings.

All are numba ``@njit(nogil=True, cache=True)`` over numpy arrays, so the
row groups of one COPY encode in parallel threads."""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.memops import copy_bytes


@njit(nogil=True, cache=True, inline="always")
def _uleb(out, pos, n):
    while n > 0x7F:
        out[pos] = (n & 0x7F) | 0x80
        pos += 1
        n >>= 7
    out[pos] = n
    return pos + 1


@njit(nogil=True, cache=True)
def _hybrid_kernel(vals, bit_width, out):
    """The RLE/bit-packed hybrid encoding of ``vals`` (non-negative ints
    below 2**bit_width) into ``out``; returns the bytes written.  Runs of 8
    or more equal values are RLE runs, everything between them bit-packed
    groups of 8 (the last group padded with zeros)."""
    n = vals.shape[0]
    byte_width = (bit_width + 7) // 8
    pos = 0
    i = 0
    while i < n:
        v = vals[i]
        j = i + 1
        while j < n and vals[j] == v:
            j += 1
        if j - i >= 8:
            pos = _uleb(out, pos, (j - i) << 1)
            for b in range(byte_width):
                out[pos] = (v >> (8 * b)) & 0xFF
                pos += 1
            i = j
            continue
        # a literal run: up to where 8 equal values start
        k = i
        while k < n:
            if k + 8 <= n:
                w = vals[k]
                same = True
                for t in range(1, 8):
                    if vals[k + t] != w:
                        same = False
                        break
                if same:
                    break
            k += 1
        count = k - i
        groups = (count + 7) // 8
        pos = _uleb(out, pos, (groups << 1) | 1)
        acc = np.uint64(0)
        nbits = 0
        for t in range(groups * 8):
            x = np.uint64(0)
            if i + t < n:
                x = np.uint64(vals[i + t])
            acc |= x << np.uint64(nbits)
            nbits += bit_width
            while nbits >= 8:
                out[pos] = np.uint8(acc & np.uint64(0xFF))
                pos += 1
                acc >>= np.uint64(8)
                nbits -= 8
        if nbits > 0:                      # groups of 8 values end on a byte
            out[pos] = np.uint8(acc & np.uint64(0xFF))
            pos += 1
        i = min(i + groups * 8, n)
    return pos


def encode_hybrid(vals: np.ndarray, bit_width: int) -> bytes:
    """RLE/bit-packed hybrid bytes of ``vals`` (no length prefix)."""
    n = len(vals)
    if n == 0:
        return b""
    out = np.empty(n * (bit_width + 10) // 8 + 64, np.uint8)
    return out[:_hybrid_kernel(vals, bit_width, out)].tobytes()


def bit_width(max_value: int) -> int:
    return int(max_value).bit_length()


# ---- byte arrays ---------------------------------------------------------------

@njit(nogil=True, cache=True)
def _gather_views_kernel(views, heap, valid, offsets, out):
    """The bytes of the strings ``valid`` (row numbers) of ``views`` into
    ``out`` at ``offsets``."""
    for j in range(valid.shape[0]):
        i = valid[j]
        w0 = views[i, 0]
        length = np.int64(w0 & np.uint64(0xFFFFFFFF))
        p = offsets[j]
        if length <= 12:
            for b in range(length):
                if b < 4:
                    out[p + b] = np.uint8((w0 >> np.uint64(32 + 8 * b)) & np.uint64(0xFF))
                else:
                    out[p + b] = np.uint8((views[i, 1] >> np.uint64(8 * (b - 4))) & np.uint64(0xFF))
        else:
            copy_bytes(out, p, heap, np.int64(views[i, 1]), length)


def gather_views(views: np.ndarray, heap, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets int64 of len(valid) + 1, bytes uint8) of the strings at rows
    ``valid`` of the (n, 2) string views."""
    lengths = (views[valid, 0] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    offsets = np.zeros(len(valid) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    out = np.empty(int(offsets[-1]), np.uint8)
    if heap is None:
        heap = np.zeros(0, np.uint8)
    _gather_views_kernel(views, heap, valid.astype(np.int64), offsets, out)
    return offsets, out


@njit(nogil=True, cache=True)
def _plain_bytes_kernel(offsets, data, start, stop, out):
    pos = 0
    base = offsets[start]
    for i in range(start, stop):
        a = offsets[i]
        n = offsets[i + 1] - a
        out[pos] = n & 0xFF
        out[pos + 1] = (n >> 8) & 0xFF
        out[pos + 2] = (n >> 16) & 0xFF
        out[pos + 3] = (n >> 24) & 0xFF
        pos += 4
        copy_bytes(out, pos, data, a, n)
        pos += n
    return pos


def plain_byte_array(offsets: np.ndarray, data: np.ndarray, start: int, stop: int) -> np.ndarray:
    """PLAIN BYTE_ARRAY encoding (4-byte length, bytes) of values start..stop."""
    size = int(offsets[stop] - offsets[start]) + 4 * (stop - start)
    out = np.empty(size, np.uint8)
    _plain_bytes_kernel(offsets, data, start, stop, out)
    return out


# ---- dictionaries ----------------------------------------------------------------

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(nogil=True, cache=True, inline="always")
def _log2(cap):
    bits = 0
    while cap > 1:
        cap >>= 1
        bits += 1
    return bits


@njit(nogil=True, cache=True)
def dictionary_u64(keys, limit, codes):
    """Dictionary-code ``keys`` (uint64 bit patterns) into ``codes`` (int32);
    returns (distinct count, first row of each distinct key), or (-1, ...)
    as soon as there are more than ``limit`` distinct keys."""
    n = keys.shape[0]
    want = min(limit, n) + 1
    cap = 16
    while cap < 2 * want:
        cap <<= 1
    shift = np.uint64(64 - _log2(cap))
    mask = cap - 1
    slots = np.full(cap, -1, np.int32)
    firsts = np.empty(want, np.int64)
    uniq = np.empty(want, np.uint64)
    count = 0
    for i in range(n):
        k = keys[i]
        h = np.int64((k * _GOLDEN) >> shift)
        while True:
            s = slots[h]
            if s < 0:
                if count >= limit:
                    return -1, firsts[:0]
                slots[h] = count
                uniq[count] = k
                firsts[count] = i
                codes[i] = count
                count += 1
                break
            if uniq[s] == k:
                codes[i] = s
                break
            h = (h + 1) & mask
    return count, firsts[:count]


@njit(nogil=True, cache=True, inline="always")
def _bytes_hash(data, a, b):
    h = np.uint64(14695981039346656037) ^ np.uint64(b - a)
    for p in range(a, b):
        h = (h ^ np.uint64(data[p])) * np.uint64(1099511628211)
    return h


@njit(nogil=True, cache=True, inline="always")
def _bytes_equal(data, a, b, c, d):
    if b - a != d - c:
        return False
    for t in range(b - a):
        if data[a + t] != data[c + t]:
            return False
    return True


@njit(nogil=True, cache=True)
def dictionary_bytes(offsets, data, limit, max_bytes, codes):
    """dictionary_u64 for byte strings (value i = data[offsets[i]:offsets[i+1]]);
    also gives up when the distinct strings pass ``max_bytes`` bytes."""
    n = offsets.shape[0] - 1
    want = min(limit, n) + 1
    cap = 16
    while cap < 2 * want:
        cap <<= 1
    shift = np.uint64(64 - _log2(cap))
    mask = cap - 1
    slots = np.full(cap, -1, np.int32)
    firsts = np.empty(want, np.int64)
    count = 0
    total = 0
    for i in range(n):
        a = offsets[i]
        b = offsets[i + 1]
        h = np.int64((_bytes_hash(data, a, b) * _GOLDEN) >> shift)
        while True:
            s = slots[h]
            if s < 0:
                total += b - a + 4
                if count >= limit or total > max_bytes:
                    return -1, firsts[:0]
                slots[h] = count
                firsts[count] = i
                codes[i] = count
                count += 1
                break
            f = firsts[s]
            if _bytes_equal(data, a, b, offsets[f], offsets[f + 1]):
                codes[i] = s
                break
            h = (h + 1) & mask
    return count, firsts[:count]


# ---- minima and maxima -----------------------------------------------------------

@njit(nogil=True, cache=True, inline="always")
def _bytes_less(data, a, b, c, d):
    """data[a:b] < data[c:d], bytes compared unsigned."""
    m = min(b - a, d - c)
    for t in range(m):
        x = data[a + t]
        y = data[c + t]
        if x != y:
            return x < y
    return (b - a) < (d - c)


@njit(nogil=True, cache=True)
def bytes_minmax_segments(offsets, data, bounds, out_min, out_max):
    """For each segment s (values bounds[s]..bounds[s+1]), the index of its
    least and greatest byte string (-1 for an empty segment)."""
    for s in range(bounds.shape[0] - 1):
        lo = -1
        hi = -1
        for i in range(bounds[s], bounds[s + 1]):
            if lo < 0:
                lo = i
                hi = i
                continue
            if _bytes_less(data, offsets[i], offsets[i + 1], offsets[lo], offsets[lo + 1]):
                lo = i
            if _bytes_less(data, offsets[hi], offsets[hi + 1], offsets[i], offsets[i + 1]):
                hi = i
        out_min[s] = lo
        out_max[s] = hi


@njit(nogil=True, cache=True)
def codes_minmax_segments(codes, ranks, bounds, out_min, out_max):
    """Per segment of dictionary ``codes``: the code of least and greatest
    rank (``ranks``: each code's position in value order), -1 when empty."""
    for s in range(bounds.shape[0] - 1):
        lo = -1
        hi = -1
        for i in range(bounds[s], bounds[s + 1]):
            c = codes[i]
            if lo < 0:
                lo = c
                hi = c
                continue
            if ranks[c] < ranks[lo]:
                lo = c
            if ranks[c] > ranks[hi]:
                hi = c
        out_min[s] = lo
        out_max[s] = hi
