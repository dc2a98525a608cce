"""Direct tests of the scan kernels: RLE/bit-packed hybrid, levels, PLAIN,
dictionary gather.  Oracles: a small pure-Python reference encoder and
numpy/struct encodings of known values."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scan.encodings.dictionary import decode_dictionary_indices, gather
from scan.encodings.plain import decode_plain
from scan.encodings.rle import decode_hybrid, decode_rle_booleans
from scan.errors import FileFormatError
from scan.levels import (decode_levels_bitpacked, decode_levels_v1, decode_levels_v2,
                         nulls_from_def_levels, scatter_dense)
from scan.views import views_to_pylist
from tests.scan.varint import uleb128


# ---------------------------------------------------------------- reference encoder

def encode_rle_run(value: int, n: int, bit_width: int) -> bytes:
    return uleb128(n << 1) + value.to_bytes((bit_width + 7) // 8, "little")


def encode_bitpacked_run(values: list[int], bit_width: int) -> bytes:
    """Bit-packed run; values padded with zeros to a multiple of 8."""
    groups = (len(values) + 7) // 8
    padded = list(values) + [0] * (groups * 8 - len(values))
    acc = 0
    for i, v in enumerate(padded):
        acc |= v << (i * bit_width)
    return uleb128((groups << 1) | 1) + acc.to_bytes(groups * bit_width, "little")


def encode_hybrid(values: list[int], bit_width: int, rng: random.Random) -> bytes:
    """Encode with a random mix of RLE and bit-packed runs (bit-packed runs
    may only end unpadded at the very end)."""
    out = bytearray()
    i = 0
    while i < len(values):
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        if j - i >= 8 or rng.random() < 0.3:
            out += encode_rle_run(values[i], j - i, bit_width)
            i = j
        else:
            n = min(len(values) - i, 8 * rng.randint(1, 4))
            out += encode_bitpacked_run(values[i:i + n], bit_width)
            i += n
    return bytes(out)


# ---------------------------------------------------------------- hybrid

def test_spec_example_bitpacked():
    buf = np.array([0x03, 0b10001000, 0b11000110, 0b11111010], np.uint8)
    values, pos = decode_hybrid(buf, 0, 4, 3, 8)
    assert values.tolist() == list(range(8))
    assert pos == 4


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 32), st.integers(0, 300), st.integers(0, 2**31),
       st.sampled_from([1, 2, 5, 1000]))
def test_hybrid_matches_reference(bit_width, n, seed, distinct):
    rng = random.Random(seed)
    hi = (1 << bit_width) - 1
    pool = [rng.randint(0, hi) for _ in range(distinct)]
    values = []
    while len(values) < n:
        v = rng.choice(pool)
        values += [v] * rng.choice([1, 1, 2, 9, 30])
    values = values[:n]
    data = b"\x07" + encode_hybrid(values, bit_width, rng) + b"\x99"
    buf = np.frombuffer(data, np.uint8)
    got, pos = decode_hybrid(buf, 1, len(buf) - 1, bit_width, n)
    expect = np.array(values, dtype=np.int64).astype(np.uint32).view(np.int32)
    assert np.array_equal(got, expect)
    assert pos <= len(buf) - 1


def test_hybrid_count_smaller_than_runs():
    data = encode_rle_run(5, 100, 3) + encode_bitpacked_run(list(range(8)), 3)
    buf = np.frombuffer(data, np.uint8)
    got, _ = decode_hybrid(buf, 0, len(buf), 3, 104)
    assert got.tolist() == [5] * 100 + [0, 1, 2, 3]


def test_hybrid_truncated_raises():
    data = encode_bitpacked_run(list(range(16)), 5)
    buf = np.frombuffer(data, np.uint8)
    with pytest.raises(FileFormatError):
        decode_hybrid(buf, 0, len(buf) - 3, 5, 16)
    with pytest.raises(FileFormatError):
        decode_hybrid(buf, 0, len(buf), 5, 17)      # runs end too early
    with pytest.raises(FileFormatError):
        decode_hybrid(np.zeros(0, np.uint8), 0, 0, 4, 1)


def test_hybrid_short_final_bitpacked_run_is_accepted():
    # a writer that does not pad the last group: the needed bits are there
    data = encode_bitpacked_run([1, 0, 1], 1)[:2]
    got, _ = decode_hybrid(np.frombuffer(data, np.uint8), 0, 2, 1, 3)
    assert got.tolist() == [1, 0, 1]


def test_hybrid_bad_inputs():
    buf = np.frombuffer(b"\xff\xff\xff\xff\xff\xff\x01", np.uint8)
    with pytest.raises(FileFormatError):
        decode_hybrid(buf, 0, len(buf), 4, 3)       # varint too long
    with pytest.raises(FileFormatError):
        decode_hybrid(buf, 0, len(buf), 33, 3)
    with pytest.raises(FileFormatError):             # RLE value 9 does not fit 2 bits
        decode_hybrid(np.frombuffer(encode_rle_run(9, 2, 8), np.uint8), 0, 2, 2, 2)


def test_hybrid_bit_width_zero_without_data():
    got, pos = decode_hybrid(np.zeros(0, np.uint8), 0, 0, 0, 5)
    assert got.tolist() == [0] * 5 and pos == 0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 32), st.integers(0, 200))
def test_hybrid_fuzz_never_crashes(data, bit_width, count):
    buf = np.frombuffer(data, np.uint8)
    try:
        got, pos = decode_hybrid(buf, 0, len(buf), bit_width, count)
    except FileFormatError:
        return
    assert len(got) == count and 0 <= pos <= len(buf)


def test_rle_booleans():
    payload = encode_bitpacked_run([1, 0, 0, 1, 1], 1) + encode_rle_run(1, 4, 1)
    data = struct.pack("<i", len(payload)) + payload
    got, pos = decode_rle_booleans(np.frombuffer(data, np.uint8), 0, len(data), 12)
    # the bit-packed run is padded to 8 values
    assert got.tolist() == [True, False, False, True, True] + [False] * 3 + [True] * 4
    assert pos == len(data)


# ---------------------------------------------------------------- levels

def test_levels_v1_and_v2():
    rng = random.Random(1)
    levels = [rng.randint(0, 1) for _ in range(50)]
    payload = encode_hybrid(levels, 1, rng)
    data = np.frombuffer(struct.pack("<i", len(payload)) + payload + b"rest", np.uint8)
    got, pos = decode_levels_v1(data, 0, 1, 50)
    assert got.dtype == np.uint8 and got.tolist() == levels
    assert pos == 4 + len(payload)
    got2 = decode_levels_v2(data, 4, len(payload), 1, 50)
    assert got2.tolist() == levels
    assert decode_levels_v1(data, 3, 0, 50) == (None, 3)
    assert decode_levels_v2(data, 3, 0, 0, 50) is None


def test_levels_out_of_range_and_truncated():
    payload = encode_rle_run(3, 10, 2)
    data = np.frombuffer(struct.pack("<i", len(payload)) + payload, np.uint8)
    with pytest.raises(FileFormatError, match="level 3"):
        decode_levels_v1(data, 0, 2, 10)
    with pytest.raises(FileFormatError):
        decode_levels_v1(data[:-1], 0, 3, 10)
    with pytest.raises(FileFormatError):
        decode_levels_v2(data, 4, 100, 3, 10)
    with pytest.raises(FileFormatError):
        decode_levels_v1(np.frombuffer(b"\x01\x00", np.uint8), 0, 1, 1)


def test_levels_wide_max_level():
    levels = [0, 300, 299, 1]
    payload = encode_bitpacked_run(levels, 9)
    data = np.frombuffer(struct.pack("<i", len(payload)) + payload, np.uint8)
    got, _ = decode_levels_v1(data, 0, 300, 4)
    assert got.dtype == np.int16 and got.tolist() == levels


def test_levels_bitpacked_deprecated():
    # BIT_PACKED is MSB first: levels 1,0,1,1,0,0,0,1 -> 0b10110001
    data = np.array([0b10110001, 0b11000000], np.uint8)
    got, pos = decode_levels_bitpacked(data, 0, 1, 10)
    assert got.tolist() == [1, 0, 1, 1, 0, 0, 0, 1, 1, 1] and pos == 2


def test_nulls_and_scatter():
    defs = np.array([1, 0, 1, 1, 0], np.uint8)
    nulls = nulls_from_def_levels(defs, 1)
    assert nulls.dtype == np.uint8 and nulls.tolist() == [0, 1, 0, 0, 1]
    out = scatter_dense(np.array([1.5, 2.5, 3.5]), nulls)
    assert out.tolist() == [1.5, 0.0, 2.5, 3.5, 0.0]
    views = np.arange(6, dtype=np.uint64).reshape(3, 2)
    sv = scatter_dense(views, nulls)
    assert sv.shape == (5, 2) and sv[2].tolist() == [2, 3] and sv[1].tolist() == [0, 0]
    with pytest.raises(FileFormatError):
        scatter_dense(np.array([1, 2]), nulls)


# ---------------------------------------------------------------- plain

@pytest.mark.parametrize("ptype,dtype", [("INT32", "<i4"), ("INT64", "<i8"),
                                         ("FLOAT", "<f4"), ("DOUBLE", "<f8")])
def test_plain_fixed(ptype, dtype):
    vals = np.array([0, 1, -5, 2**20, 7], dtype=dtype)
    data = np.frombuffer(b"x" + vals.tobytes() + b"yy", np.uint8)
    got, pos = decode_plain(data, 1, len(data), ptype, 5)
    assert got.tolist() == vals.tolist() and pos == 1 + vals.nbytes
    assert not np.shares_memory(got, data)
    with pytest.raises(FileFormatError, match="truncated"):
        decode_plain(data, 1, len(data) - 3, ptype, 5)


def test_plain_boolean():
    bits = [True, False, True, True, False, False, False, True, True, False]
    packed = np.packbits(np.array(bits, np.uint8), bitorder="little")
    got, pos = decode_plain(packed, 0, len(packed), "BOOLEAN", 10)
    assert got.dtype == np.bool_ and got.tolist() == bits and pos == 2
    with pytest.raises(FileFormatError):
        decode_plain(packed, 0, 1, "BOOLEAN", 10)


def test_plain_byte_array():
    strings = [b"", b"a", b"abcd", b"abcdefghijkl", b"abcdefghijklm", b"x" * 100, "é€".encode()]
    data = b"".join(struct.pack("<i", len(s)) + s for s in strings)
    buf = np.frombuffer(b"\x00\x00" + data, np.uint8)
    views, pos = decode_plain(buf, 2, len(buf), "BYTE_ARRAY", len(strings))
    assert pos == len(buf)
    assert views.shape == (len(strings), 2) and views.dtype == np.uint64
    assert views_to_pylist(views, buf) == strings
    with pytest.raises(FileFormatError):
        decode_plain(buf, 2, len(buf) - 1, "BYTE_ARRAY", len(strings))
    with pytest.raises(FileFormatError):
        decode_plain(np.frombuffer(b"\xff\xff\xff\xff", np.uint8), 0, 4, "BYTE_ARRAY", 1)


def test_plain_fixed_len_byte_array():
    strings = [bytes(range(i, i + 16)) for i in range(5)]
    buf = np.frombuffer(b"".join(strings), np.uint8)
    views, pos = decode_plain(buf, 0, len(buf), "FIXED_LEN_BYTE_ARRAY", 5, 16)
    assert views_to_pylist(views, buf) == strings and pos == 80
    views, _ = decode_plain(buf, 0, len(buf), "FIXED_LEN_BYTE_ARRAY", 8, 3)
    assert views_to_pylist(views, buf)[1] == bytes([3, 4, 5])
    with pytest.raises(FileFormatError):
        decode_plain(buf, 0, len(buf), "FIXED_LEN_BYTE_ARRAY", 6, 16)


def test_plain_int96():
    # 2020-01-02 03:04:05.000000006 UTC
    day = 2440588 + 18263
    nod = ((3 * 60 + 4) * 60 + 5) * 10**9 + 6
    raw = struct.pack("<qi", nod, day) + struct.pack("<qi", 0, 2440588)
    got, pos = decode_plain(np.frombuffer(raw, np.uint8), 0, 24, "INT96", 2)
    # microseconds, the nanoseconds truncated (DuckDB reads INT96 as TIMESTAMP)
    expect = np.datetime64("2020-01-02T03:04:05.000000", "us").astype(np.int64)
    assert got.tolist() == [int(expect), 0] and pos == 24


def test_plain_unknown_type():
    with pytest.raises(FileFormatError):
        decode_plain(np.zeros(4, np.uint8), 0, 4, "INT128", 1)


# ---------------------------------------------------------------- dictionary

def test_dictionary_indices_and_gather():
    rng = random.Random(3)
    idx = [rng.randint(0, 4) for _ in range(100)]
    data = np.frombuffer(b"\x03" + encode_hybrid(idx, 3, rng), np.uint8)
    got = decode_dictionary_indices(data, 0, len(data), 100)
    assert got.tolist() == idx
    dictionary = np.array([10, 20, 30, 40, 50], np.int64)
    assert gather(dictionary, got).tolist() == [10 * (i + 1) for i in idx]
    views = np.arange(10, dtype=np.uint64).reshape(5, 2)
    assert gather(views, got).shape == (100, 2)
    with pytest.raises(FileFormatError, match="out of range"):
        gather(dictionary[:3], got)
    with pytest.raises(FileFormatError, match="out of range"):
        gather(np.zeros(0, np.int64), np.zeros(1, np.int32))


def test_dictionary_bad_bit_width():
    with pytest.raises(FileFormatError):
        decode_dictionary_indices(np.array([40, 0], np.uint8), 0, 2, 1)
    with pytest.raises(FileFormatError):
        decode_dictionary_indices(np.zeros(0, np.uint8), 0, 0, 1)
    # bit width 0 (one-entry dictionary), no runs at all
    assert decode_dictionary_indices(np.array([0], np.uint8), 0, 1, 3).tolist() == [0, 0, 0]


# ---------------------------------------------------------------- robustness

@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=48), st.integers(-3, 60), st.integers(0, 40),
       st.sampled_from(["BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE",
                        "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"]))
def test_kernels_fuzz_never_crash(data, pos, count, ptype):
    """Random bytes and positions: a result or FileFormatError, nothing else."""
    buf = np.frombuffer(data, np.uint8)
    calls = [
        lambda: decode_plain(buf, pos, len(buf), ptype, count, 3),
        lambda: decode_levels_v1(buf, pos, 1, count),
        lambda: decode_levels_v2(buf, pos, len(buf) - pos, 3, count),
        lambda: decode_levels_bitpacked(buf, pos, 2, count),
        lambda: decode_dictionary_indices(buf, pos, len(buf), count),
        lambda: decode_rle_booleans(buf, pos, len(buf), count),
        lambda: decode_hybrid(buf, pos, len(buf), 7, count),
    ]
    for call in calls:
        try:
            call()
        except FileFormatError:
            pass


def test_byte_array_huge_count_is_refused_before_allocating():
    with pytest.raises(FileFormatError):
        decode_plain(np.zeros(16, np.uint8), 0, 16, "BYTE_ARRAY", 2**40)
