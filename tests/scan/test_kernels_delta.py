"""DELTA_* and BYTE_STREAM_SPLIT kernels against small pure-Python reference
encoders, plus the views helpers (concat, decimals)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scan.encodings.byte_stream_split import (decode_byte_stream_split,
                                              decode_byte_stream_split_fixed)
from scan.encodings.delta import (decode_delta_binary_packed, decode_delta_byte_array,
                                  decode_delta_length_byte_array)
from scan.errors import FileFormatError
from scan.views import (concat_views, decimal_from_be_bytes, decimal_from_be_bytes_wide,
                        views_from_pylist, views_to_pylist)
from tests.scan.varint import uleb128, zigzag


def encode_delta_binary(values: list[int], bits: int = 64, block: int = 128,
                        miniblocks: int = 4) -> bytes:
    """Reference DELTA_BINARY_PACKED encoder (wrapping arithmetic in ``bits``)."""
    mod = 1 << bits

    def signed(x):
        x %= mod
        return x - mod if x >= mod // 2 else x

    out = bytearray(uleb128(block) + uleb128(miniblocks) + uleb128(len(values)))
    out += uleb128(zigzag(values[0]) if values else 0)
    deltas = [signed(values[i] - values[i - 1]) for i in range(1, len(values))]
    vpm = block // miniblocks
    for b in range(0, len(deltas), block):
        chunk = deltas[b:b + block]
        min_delta = min(chunk)
        rel = [(d - min_delta) % mod for d in chunk]
        out += uleb128(zigzag(min_delta))
        widths, bodies = [], []
        for m in range(miniblocks):
            part = rel[m * vpm:(m + 1) * vpm]
            if not part:
                widths.append(0)
                continue
            w = max(part).bit_length()
            widths.append(w)
            acc = 0
            for i, v in enumerate(part):
                acc |= v << (i * w)
            bodies.append(acc.to_bytes(vpm * w // 8, "little"))
        out += bytes(widths) + b"".join(bodies)
    return bytes(out)


def encode_delta_length(values: list[bytes]) -> bytes:
    return encode_delta_binary([len(v) for v in values], 32) + b"".join(values)


def encode_delta_byte_array(values: list[bytes]) -> bytes:
    prefixes, suffixes, prev = [], [], b""
    for v in values:
        p = 0
        while p < min(len(v), len(prev)) and v[p] == prev[p]:
            p += 1
        prefixes.append(p)
        suffixes.append(v[p:])
        prev = v
    return encode_delta_binary(prefixes, 32) + encode_delta_length(suffixes)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=600),
       st.sampled_from([(128, 4), (128, 1), (256, 8)]))
def test_delta_binary_int64(values, shape):
    data = encode_delta_binary(values, 64, *shape) + b"tail"
    buf = np.frombuffer(data, np.uint8)
    got, pos = decode_delta_binary_packed(buf, 0, len(buf), len(values), "INT64")
    assert got.tolist() == values
    assert pos == len(buf) - 4


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=400))
def test_delta_binary_int32(values):
    data = encode_delta_binary(values, 32)
    buf = np.frombuffer(data, np.uint8)
    got, pos = decode_delta_binary_packed(buf, 0, len(buf), len(values), "INT32")
    assert got.dtype == np.int32 and got.tolist() == values and pos == len(buf)


def test_delta_binary_fewer_requested_and_errors():
    values = list(range(0, 3000, 7))
    data = encode_delta_binary(values)
    buf = np.frombuffer(data, np.uint8)
    got, pos = decode_delta_binary_packed(buf, 0, len(buf), 10)
    assert got.tolist() == values[:10] and pos == len(buf)
    with pytest.raises(FileFormatError):
        decode_delta_binary_packed(buf, 0, len(buf), len(values) + 1)
    with pytest.raises(FileFormatError):
        decode_delta_binary_packed(buf, 0, len(buf) // 2, len(values))
    bad_header = np.frombuffer(uleb128(100) + uleb128(4) + uleb128(1) + uleb128(0), np.uint8)
    with pytest.raises(FileFormatError, match="header"):
        decode_delta_binary_packed(bad_header, 0, len(bad_header), 1)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80), st.integers(0, 50))
def test_delta_fuzz_never_crashes(data, count):
    buf = np.frombuffer(data, np.uint8)
    for fn in (lambda: decode_delta_binary_packed(buf, 0, len(buf), count),
               lambda: decode_delta_length_byte_array(buf, 0, len(buf), count),
               lambda: decode_delta_byte_array(buf, 0, len(buf), count)):
        try:
            fn()
        except FileFormatError:
            pass


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(max_size=30), min_size=0, max_size=200))
def test_delta_length_byte_array(values):
    if not values:
        return
    data = encode_delta_length(values)
    buf = np.frombuffer(data, np.uint8)
    views, pos = decode_delta_length_byte_array(buf, 0, len(buf), len(values))
    assert views_to_pylist(views, buf) == values and pos == len(buf)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([b"", b"apple", b"applesauce", b"apply", b"b",
                                 b"banana-split-long-value", b"banana-split"]),
                min_size=1, max_size=200))
def test_delta_byte_array(values):
    data = encode_delta_byte_array(values)
    buf = np.frombuffer(data, np.uint8)
    views, heap, pos = decode_delta_byte_array(buf, 0, len(buf), len(values))
    assert views_to_pylist(views, heap) == values and pos == len(buf)


def test_delta_byte_array_bad_prefix():
    data = encode_delta_binary([0, 5], 32) + encode_delta_length([b"ab", b"c"])
    buf = np.frombuffer(data, np.uint8)
    with pytest.raises(FileFormatError, match="prefix"):
        decode_delta_byte_array(buf, 0, len(buf), 2)


@pytest.mark.parametrize("ptype,dtype", [("FLOAT", "<f4"), ("DOUBLE", "<f8"),
                                         ("INT32", "<i4"), ("INT64", "<i8")])
def test_byte_stream_split(ptype, dtype):
    vals = np.array([1.5, -2.25, 1e6, 0, 7], dtype=dtype)
    split = vals.view(np.uint8).reshape(len(vals), -1).T.tobytes()
    buf = np.frombuffer(b"zz" + split, np.uint8)
    got, pos = decode_byte_stream_split(buf, 2, len(buf), ptype, len(vals))
    assert got.tolist() == vals.tolist() and pos == len(buf)
    with pytest.raises(FileFormatError):
        decode_byte_stream_split(buf, 2, len(buf) - 1, ptype, len(vals))


def test_byte_stream_split_fixed():
    vals = [bytes([i, i + 1, i + 2]) for i in range(0, 30, 3)]
    split = np.frombuffer(b"".join(vals), np.uint8).reshape(len(vals), 3).T.tobytes()
    views, heap, pos = decode_byte_stream_split_fixed(np.frombuffer(split, np.uint8),
                                                      0, len(split), len(vals), 3)
    assert views_to_pylist(views, heap) == vals and pos == len(split)


# ---------------------------------------------------------------- views helpers

def test_views_roundtrip_and_concat():
    a = [b"short", b"a much longer string value", b"", b"exactly12byt"]
    b = [b"another long string in part two", b"x"]
    va, ha, _ = views_from_pylist(a)
    vb, hb, _ = views_from_pylist(b)
    views, heap = concat_views([(va, ha), (vb, hb), (va, ha)])
    assert views_to_pylist(views, heap) == a + b + a
    assert len(heap) == len(ha) + len(hb)          # shared heap reused once
    v1, h1 = concat_views([(va, ha)])
    assert v1 is va and h1 is ha
    v0, h0 = concat_views([])
    assert v0.shape == (0, 2) and len(h0) == 0


def test_views_prefix_layout():
    views, heap, nulls = views_from_pylist([b"abcdefghijklmnop", None, "hé"])
    assert int(views[0, 0]) & 0xFFFFFFFF == 16
    assert (int(views[0, 0]) >> 32).to_bytes(4, "little") == b"abcd"
    assert int(views[0, 1]) == 0
    assert nulls.tolist() == [0, 1, 0]
    assert views_to_pylist(views, heap, nulls) == [b"abcdefghijklmnop", None, "hé".encode()]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-10**18, 10**18), max_size=50), st.integers(0, 8))
def test_decimal_from_be_bytes(values, extra):
    for width in (8 + extra, None):
        encoded = []
        for v in values:
            n = width or max(1, (v.bit_length() + 8) // 8)
            encoded.append(v.to_bytes(n, "big", signed=True))
        views, heap, _ = views_from_pylist(encoded)
        assert decimal_from_be_bytes(views, heap, width or 0).tolist() == values


def test_decimal_wide_and_overflow():
    values = [10**30, -(10**25) - 7, 0, 5]
    encoded = [v.to_bytes(16, "big", signed=True) for v in values]
    views, heap, _ = views_from_pylist(encoded)
    assert decimal_from_be_bytes_wide(views, heap, 16).tolist() == values
    with pytest.raises(FileFormatError, match="64 bits"):
        decimal_from_be_bytes(views, heap, 16)
