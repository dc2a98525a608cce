"""XXH64 (seed 0) of values in their Parquet PLAIN encoding: the one 64-bit
hash every sketch uses (docs/design.md "Hashing").

Parquet's split-block bloom filters (scan/bloom.py) hash a value's PLAIN
encoding with XXH64, seed 0; the HyperLogLog sketches of stats/ hash the
same way, so a bloom-filter probe and an HLL register agree on a value.

PLAIN encodings, as the hash sees them:
- INT32 / INT64 (integers, dates, times, timestamps, decimals stored as
  integers): the 4 / 8 little-endian bytes of the stored integer;
- FLOAT / DOUBLE: the 4 / 8 bytes of the IEEE value;
- BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY: the bytes (no length prefix);
- BOOLEAN (bit-packed in PLAIN): one byte, 0 or 1.

For sketches (not bloom filters) floats are made canonical first: -0.0
hashes as 0.0 and every NaN as one quiet NaN (``canonical_float64_bits``),
since SQL counts them as one value.

The kernels are numba functions, ``nogil``: the fixed-width ones are the
closed forms of XXH64 for an input of 1, 4 and 8 bytes (no loop, no
memory read), and ``xxh64_view`` hashes a 16-byte string view
(scan/views.py) without copying its bytes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.memops import load4, load8

P1 = np.uint64(11400714785074694791)
P2 = np.uint64(14029467366897019727)
P3 = np.uint64(1609587929392839161)
P4 = np.uint64(9650029242287828579)
P5 = np.uint64(2870177450012600261)
_LOW32 = np.uint64(0xFFFFFFFF)


@njit(nogil=True, cache=True, inline="always")
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(nogil=True, cache=True, inline="always")
def _read64(buf, p):
    return load8(buf, p)                  # little endian, unaligned


@njit(nogil=True, cache=True, inline="always")
def _read32(buf, p):
    return np.uint64(load4(buf, p))


@njit(nogil=True, cache=True, inline="always")
def _round(acc, lane):
    acc = acc + lane * P2
    acc = _rotl(acc, 31)
    return acc * P1


@njit(nogil=True, cache=True, inline="always")
def _merge(acc, v):
    acc ^= _round(np.uint64(0), v)
    return acc * P1 + P4


@njit(nogil=True, cache=True, inline="always")
def _avalanche(h):
    h ^= h >> np.uint64(33)
    h *= P2
    h ^= h >> np.uint64(29)
    h *= P3
    h ^= h >> np.uint64(32)
    return h


@njit(nogil=True, cache=True, inline="always")
def _step8(h, lane):
    h ^= _round(np.uint64(0), lane)
    return _rotl(h, 27) * P1 + P4


@njit(nogil=True, cache=True, inline="always")
def _step4(h, lane):
    h ^= lane * P1
    return _rotl(h, 23) * P2 + P3


@njit(nogil=True, cache=True, inline="always")
def _step1(h, byte):
    h ^= byte * P5
    return _rotl(h, 11) * P1


@njit(nogil=True, cache=True)
def xxh64_bytes(buf, start, end):
    """XXH64 with seed 0 of ``buf[start:end]`` (uint8)."""
    n = end - start
    p = start
    if n >= 32:
        v1 = P1 + P2
        v2 = P2
        v3 = np.uint64(0)
        v4 = np.uint64(0) - P1
        limit = end - 32
        while p <= limit:
            v1 = _round(v1, _read64(buf, p))
            v2 = _round(v2, _read64(buf, p + 8))
            v3 = _round(v3, _read64(buf, p + 16))
            v4 = _round(v4, _read64(buf, p + 24))
            p += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = P5
    h += np.uint64(n)
    while p + 8 <= end:
        h = _step8(h, _read64(buf, p))
        p += 8
    if p + 4 <= end:
        h = _step4(h, _read32(buf, p))
        p += 4
    while p < end:
        h = _step1(h, np.uint64(buf[p]))
        p += 1
    return _avalanche(h)


@njit(nogil=True, cache=True, inline="always")
def xxh64_u64(v):
    """XXH64 of the 8 little-endian bytes of ``v`` (uint64)."""
    return _avalanche(_step8(P5 + np.uint64(8), v))


@njit(nogil=True, cache=True, inline="always")
def xxh64_u64_pair(a, b):
    """XXH64 of the 16 little-endian bytes of ``a`` then ``b`` (uint64s)."""
    return _avalanche(_step8(_step8(P5 + np.uint64(16), a), b))


@njit(nogil=True, cache=True, inline="always")
def xxh64_u32(v):
    """XXH64 of the 4 little-endian bytes of ``v`` (uint64 holding 32 bits)."""
    return _avalanche(_step4(P5 + np.uint64(4), v & _LOW32))


@njit(nogil=True, cache=True, inline="always")
def xxh64_u8(v):
    """XXH64 of the one byte ``v`` (uint64 holding 8 bits)."""
    return _avalanche(_step1(P5 + np.uint64(1), v & np.uint64(0xFF)))


@njit(nogil=True, cache=True, inline="always")
def canonical_float64_bits(x):
    """The bits a sketch hashes for a float64: -0.0 as 0.0, one NaN."""
    if x != x:
        return np.uint64(0x7FF8000000000000)
    if x == 0.0:
        return np.uint64(0)
    return np.float64(x).view(np.uint64)


@njit(nogil=True, cache=True, inline="always")
def canonical_float32_bits(x):
    """The bits a sketch hashes for a float32: -0.0 as 0.0, one NaN."""
    if x != x:
        return np.uint64(0x7FC00000)
    if x == 0.0:
        return np.uint64(0)
    return np.uint64(np.float32(x).view(np.uint32))


@njit(nogil=True, cache=True, inline="always")
def xxh64_view(views, i, heap):
    """XXH64 of the bytes of string view ``views[i]`` (scan/views.py)."""
    w0 = views[i, 0]
    w1 = views[i, 1]
    n = np.int64(w0 & _LOW32)
    if n > 12:
        off = np.int64(w1)
        return xxh64_bytes(heap, off, off + n)
    lo = (w0 >> np.uint64(32)) | (w1 << np.uint64(32))     # bytes 0..7
    hi = w1 >> np.uint64(32)                                 # bytes 8..11
    h = P5 + np.uint64(n)
    p = 0
    if n >= 8:
        h = _step8(h, lo)
        p = 8
    if p + 4 <= n:
        lane = lo & _LOW32 if p == 0 else hi & _LOW32
        h = _step4(h, lane)
        p += 4
    while p < n:
        if p < 8:
            byte = (lo >> np.uint64(8 * p)) & np.uint64(0xFF)
        else:
            byte = (hi >> np.uint64(8 * (p - 8))) & np.uint64(0xFF)
        h = _step1(h, byte)
        p += 1
    return _avalanche(h)


@njit(nogil=True, cache=True)
def xxh64_many(buf, offsets, out):
    """Hash value i = ``buf[offsets[i]:offsets[i + 1]]`` into ``out[i]``."""
    for i in range(out.shape[0]):
        out[i] = xxh64_bytes(buf, offsets[i], offsets[i + 1])


@njit(nogil=True, cache=True)
def xxh64_views(views, heap, out):
    """out[i] = XXH64 of string view i (scan/views.py) over ``heap``."""
    for i in range(out.shape[0]):
        out[i] = xxh64_view(views, i, heap)


def xxh64(data: bytes) -> int:
    """XXH64 (seed 0) of one byte string."""
    buf = np.frombuffer(bytes(data), np.uint8)
    out = np.empty(1, np.uint64)
    xxh64_many(buf, np.array([0, len(buf)], np.int64), out)
    return int(out[0])
