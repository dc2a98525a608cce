"""scan/hashing.py: the closed-form XXH64 kernels agree with the reference
xxhash on PLAIN encodings (fixed width, string views inline and on the heap)."""

from __future__ import annotations

import struct

import numpy as np
import xxhash
from numba import njit

from scan.hashing import (canonical_float32_bits, canonical_float64_bits, xxh64, xxh64_u8,
                          xxh64_u32, xxh64_u64, xxh64_u64_pair, xxh64_views)
from scan.views import views_from_pylist


@njit(cache=False)
def _fixed(values, width, out):
    for i in range(values.shape[0]):
        v = np.uint64(values[i])
        if width == 8:
            out[i] = xxh64_u64(v)
        elif width == 4:
            out[i] = xxh64_u32(v)
        else:
            out[i] = xxh64_u8(v)


@njit(cache=False)
def _floats(values, out):
    for i in range(values.shape[0]):
        out[i] = canonical_float64_bits(values[i])


@njit(cache=False)
def _floats32(values, out):
    for i in range(values.shape[0]):
        out[i] = canonical_float32_bits(values[i])


def test_fixed_width_closed_forms():
    vals = np.array([0, 1, -1, 2**31 - 1, -2**31, 2**62 + 12345, -2**63], np.int64)
    out = np.empty(len(vals), np.uint64)
    _fixed(vals.view(np.uint64), 8, out)
    assert [int(h) for h in out] == [xxhash.xxh64_intdigest(struct.pack("<q", int(v)))
                                     for v in vals]
    v32 = np.array([0, 1, -1, 2**31 - 1, -2**31, 7], np.int32)
    _fixed(v32.astype(np.int64).view(np.uint64), 4, out[:len(v32)])
    assert [int(h) for h in out[:len(v32)]] == [
        xxhash.xxh64_intdigest(struct.pack("<i", int(v))) for v in v32]
    _fixed(np.array([0, 1], np.uint64), 1, out[:2])
    assert [int(h) for h in out[:2]] == [xxhash.xxh64_intdigest(b"\x00"),
                                         xxhash.xxh64_intdigest(b"\x01")]


@njit(cache=False)
def _pairs(a, b, out):
    for i in range(a.shape[0]):
        out[i] = xxh64_u64_pair(a[i], b[i])


def test_pair_of_words_is_xxh64_of_16_bytes():
    a = np.array([0, 1, -1, 2**62 + 12345, -2**63, 7], np.int64)
    b = np.array([0, -1, 1, 3, 2**63 - 1, 7], np.int64)
    out = np.empty(len(a), np.uint64)
    _pairs(a.view(np.uint64), b.view(np.uint64), out)
    assert [int(h) for h in out] == [xxhash.xxh64_intdigest(struct.pack("<qq", int(x), int(y)))
                                     for x, y in zip(a, b)]


def test_views_inline_and_heap():
    strings = [b"", b"a", b"abc", b"abcd", b"abcdefg", b"abcdefgh", b"abcdefghijk",
               b"abcdefghijkl", b"abcdefghijklm", b"x" * 31, b"y" * 32, b"z" * 100,
               "h\u00e9llo w\u00f6rld".encode()]
    views, heap, _ = views_from_pylist(strings)
    heap = heap if heap is not None else np.zeros(1, np.uint8)
    out = np.empty(len(strings), np.uint64)
    xxh64_views(views, heap, out)
    assert [int(h) for h in out] == [xxhash.xxh64_intdigest(s) for s in strings]
    assert [xxh64(s) for s in strings] == [xxhash.xxh64_intdigest(s) for s in strings]


def test_canonical_floats():
    vals = np.array([0.0, -0.0, np.nan, -np.nan, 1.5, np.inf], np.float64)
    out = np.empty(len(vals), np.uint64)
    _floats(vals, out)
    assert out[0] == out[1] == 0
    assert out[2] == out[3] == 0x7FF8000000000000
    assert out[4] == np.float64(1.5).view(np.uint64)
    f32 = vals.astype(np.float32)
    _floats32(f32, out)
    assert out[0] == out[1] == 0 and out[2] == out[3] == 0x7FC00000
    assert out[4] == np.float32(1.5).view(np.uint32)
