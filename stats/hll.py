"""HyperLogLog++ distinct counts (Heule, Nunkesser, Hall 2013).

A sketch is ``1 << p`` registers (int8, p = 14 by default: 16,384
registers, a standard error of 1.04 / sqrt(m) = 0.81%).  A value's 64-bit
hash (scan/hashing.py: XXH64 of its PLAIN encoding) picks register
``h & (m - 1)`` by its low p bits; the register keeps the largest rank
seen, the rank being one plus the leading zeros of ``h >> p`` counted in
64 - p bits.  That is datasketch's layout, so ``count`` hands the
registers to ``datasketch.HyperLogLogPlusPlus(reg=...)`` for the estimate:
linear counting below its per-precision threshold, the raw estimate with
HLL++'s empirical bias correction up to 5m, the raw estimate above.

Registers are filled per block by the numba kernels below (``nogil``),
into thread-local arrays; ``merge`` takes the maximum.  NULLs are never
counted; floats hash their canonical bits (-0.0 as 0.0, one NaN), strings
their bytes, integers of every kind (decimals, dates, times, timestamps)
their stored integer in the width of their physical type.  A run of equal
values hashes once (sorted and clustered columns pay one compare a row).

``pack``/``unpack`` give the registers' compact form, kept between
queries: zlib over the bytes, a few KiB for a column of millions of
distinct values and tens of bytes for a column of a few (register values
cluster around log2(n / m)).
"""

from __future__ import annotations

import zlib

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from scan.hashing import (canonical_float32_bits, canonical_float64_bits, xxh64_u8, xxh64_u32,
                          xxh64_u64, xxh64_view)

P = 14
_NO_NULLS = np.zeros(0, np.uint8)


def new_registers(p: int = P) -> np.ndarray:
    return np.zeros(1 << p, np.int8)


def precision_of(registers: np.ndarray) -> int:
    return int(registers.shape[0]).bit_length() - 1


@njit(nogil=True, cache=True, inline="always")
def _precision(regs):
    return np.uint64(63 - leading_zeros(np.uint64(regs.shape[0])))


@njit(nogil=True, cache=True, inline="always")
def _update(regs, mask, p, h):
    i = np.int64(h & mask)
    rank = np.int8(leading_zeros(h >> p) - p + 1)
    regs[i] = max(regs[i], rank)            # branchless: ranks rarely grow


@njit(nogil=True, cache=True)
def add_int64(regs, values, nulls, width):
    """Hash every non-NULL ``values[i]`` (int64) in ``width`` bytes (8, 4
    or 1: the low bytes of the stored integer) into the registers."""
    p = _precision(regs)
    mask = np.uint64(regs.shape[0] - 1)
    has_nulls = nulls.shape[0] > 0
    first = True
    prev = np.int64(0)
    for k in range(values.shape[0]):
        if has_nulls and nulls[k]:
            continue
        v = values[k]
        if not first and v == prev:
            continue
        first = False
        prev = v
        u = np.uint64(v)
        if width == 8:
            h = xxh64_u64(u)
        elif width == 4:
            h = xxh64_u32(u)
        else:
            h = xxh64_u8(u)
        _update(regs, mask, p, h)


@njit(nogil=True, cache=True)
def add_int32(regs, values, nulls):
    """Hash every non-NULL ``values[i]`` (int32, PLAIN INT32) into the registers."""
    p = _precision(regs)
    mask = np.uint64(regs.shape[0] - 1)
    has_nulls = nulls.shape[0] > 0
    first = True
    prev = np.int32(0)
    for k in range(values.shape[0]):
        if has_nulls and nulls[k]:
            continue
        v = values[k]
        if not first and v == prev:
            continue
        first = False
        prev = v
        _update(regs, mask, p, xxh64_u32(np.uint64(np.uint32(v))))


@njit(nogil=True, cache=True)
def add_float64(regs, values, nulls):
    p = _precision(regs)
    mask = np.uint64(regs.shape[0] - 1)
    has_nulls = nulls.shape[0] > 0
    for k in range(values.shape[0]):
        if has_nulls and nulls[k]:
            continue
        _update(regs, mask, p, xxh64_u64(canonical_float64_bits(values[k])))


@njit(nogil=True, cache=True)
def add_float32(regs, values, nulls):
    p = _precision(regs)
    mask = np.uint64(regs.shape[0] - 1)
    has_nulls = nulls.shape[0] > 0
    for k in range(values.shape[0]):
        if has_nulls and nulls[k]:
            continue
        _update(regs, mask, p, xxh64_u32(canonical_float32_bits(values[k])))


@njit(nogil=True, cache=True)
def add_views(regs, views, heap, nulls):
    """Hash the bytes of every non-NULL string view into the registers."""
    p = _precision(regs)
    mask = np.uint64(regs.shape[0] - 1)
    has_nulls = nulls.shape[0] > 0
    for k in range(views.shape[0]):
        if has_nulls and nulls[k]:
            continue
        if k > 0 and views[k, 0] == views[k - 1, 0] and views[k, 1] == views[k - 1, 1] \
                and not (has_nulls and nulls[k - 1]):
            continue            # the same view: the same string
        _update(regs, mask, p, xxh64_view(views, k, heap))


@njit(nogil=True, cache=True)
def add_codes(regs, entry_hashes, codes):
    """Dictionary-coded strings: ``entry_hashes[c]`` is the hash of
    dictionary entry c (hashed once per dictionary); every row adds the
    hash of its code."""
    p = _precision(regs)
    mask = np.uint64(regs.shape[0] - 1)
    prev = np.int64(-1)
    for k in range(codes.shape[0]):
        c = np.int64(codes[k])
        if c == prev:
            continue
        prev = c
        _update(regs, mask, p, entry_hashes[c])


@njit(nogil=True, cache=True)
def add_hashes(regs, hashes, nulls):
    """Add precomputed hashes (rows where ``nulls`` is 1 skipped)."""
    p = _precision(regs)
    mask = np.uint64(regs.shape[0] - 1)
    has_nulls = nulls.shape[0] > 0
    for k in range(hashes.shape[0]):
        if has_nulls and nulls[k]:
            continue
        _update(regs, mask, p, hashes[k])


# ---- per-row hashes (pairs of columns) -------------------------------------------

@njit(nogil=True, cache=True)
def hash_int64(values, width, out):
    for k in range(values.shape[0]):
        u = np.uint64(values[k])
        if width == 8:
            out[k] = xxh64_u64(u)
        elif width == 4:
            out[k] = xxh64_u32(u)
        else:
            out[k] = xxh64_u8(u)


@njit(nogil=True, cache=True)
def hash_float64(values, out):
    for k in range(values.shape[0]):
        out[k] = xxh64_u64(canonical_float64_bits(values[k]))


@njit(nogil=True, cache=True)
def hash_float32(values, out):
    for k in range(values.shape[0]):
        out[k] = xxh64_u32(canonical_float32_bits(values[k]))


@njit(nogil=True, cache=True)
def hash_views(views, heap, out):
    for k in range(views.shape[0]):
        out[k] = xxh64_view(views, k, heap)


@njit(nogil=True, cache=True)
def gather_hashes(entry_hashes, codes, out):
    for k in range(codes.shape[0]):
        out[k] = entry_hashes[codes[k]]


@njit(nogil=True, cache=True)
def add_pair_hashes(regs, a, b, nulls):
    """Registers of the pairs (a[i], b[i]): their hashes combined (rows with
    a NULL on either side skipped: ``nulls`` is the OR of both)."""
    p = _precision(regs)
    mask = np.uint64(regs.shape[0] - 1)
    has_nulls = nulls.shape[0] > 0
    rot = np.uint64(29)
    for k in range(a.shape[0]):
        if has_nulls and nulls[k]:
            continue
        hb = b[k]
        mixed = a[k] ^ ((hb << rot) | (hb >> np.uint64(64 - 29)))
        _update(regs, mask, p, xxh64_u64(mixed))


# ---- estimates, merging, packing -------------------------------------------------

def count(registers: np.ndarray) -> float:
    """The HLL++ estimate of the distinct values behind the registers."""
    if not registers.any():
        return 0.0
    from datasketch import HyperLogLogPlusPlus
    return float(HyperLogLogPlusPlus(reg=registers.astype(np.int8, copy=False)).count())


def merge(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The registers of the union (elementwise maximum)."""
    return np.maximum(a, b)


def merge_into(target: np.ndarray, other: np.ndarray) -> None:
    np.maximum(target, other, out=target)


def pack(registers: np.ndarray) -> bytes:
    """The compact form kept between queries (zlib over the int8 bytes)."""
    return zlib.compress(registers.tobytes(), 6)


def unpack(packed: bytes) -> np.ndarray:
    return np.frombuffer(zlib.decompress(packed), np.int8).copy()


def no_nulls() -> np.ndarray:
    """The empty ``nulls`` argument of the kernels: no row is NULL."""
    return _NO_NULLS
