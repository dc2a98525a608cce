"""Kernel tests: string ranks, key hashing/equality, group table growth,
exact integer sums, float sort keys."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from engine.block import Vector
from engine.convert import strings_to_vector
from engine.kernels.aggregates import sum_int_update
from engine.kernels.hashing import hash_keys, normalize_keys
from engine.kernels.hashtable import GroupTable
from engine.kernels.sort import float_from_sort_keys, float_sort_keys, gather_strings, string_ranks
from engine.operators.group_results import decode_keys
from planner import types as T


def _vec(strings):
    return strings_to_vector(strings, T.VARCHAR)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=20), max_size=60))
def test_string_ranks_match_bytes_order(values):
    vec = strings_to_vector(values, T.BLOB)
    ranks = string_ranks(vec.data, vec.heap)
    distinct = sorted(set(values))
    assert list(ranks) == [distinct.index(v) for v in values]


def test_gather_strings_roundtrip():
    vals = ["a", "x" * 40, "", "hello world, long one", "short"]
    vec = _vec(vals)
    v, h = gather_strings(vec.data, vec.heap, np.array([4, 1, 3, 1]))
    from engine.convert import vector_to_pylist
    assert vector_to_pylist(Vector(T.VARCHAR, v, None, h)) == [vals[4], vals[1], vals[3], vals[1]]


def test_group_table_growth_and_decode():
    n = 20000
    ints = np.arange(n, dtype=np.int64) % 7000
    strs = [f"key-{i % 7000:05d}-" + "y" * (i % 30) for i in range(n)]
    types = [T.BIGINT, T.VARCHAR]
    nulls = (np.arange(n) % 1000 == 0).astype(np.uint8)
    vecs = [Vector(T.BIGINT, ints, nulls), _vec(strs)]
    table = GroupTable(2, 1)
    gid = np.concatenate([table.insert(normalize_keys([v.slice(a, a + 3000) for v in vecs],
                                                      min(3000, n - a), True))
                          for a in range(0, n, 3000)])
    expect = {}
    for i in range(n):
        key = (None if nulls[i] else int(ints[i]), strs[i])
        expect.setdefault(key, len(expect))
    assert table.n_groups == len(expect)
    assert list(gid) == [expect[(None if nulls[i] else int(ints[i]), strs[i])] for i in range(n)]
    w, s, h = table.keys()
    out = decode_keys(types, w, s, h, null_word=True)
    from engine.convert import vector_to_pylist
    assert list(zip(vector_to_pylist(out[0]), vector_to_pylist(out[1]))) == list(expect)


def test_hash_equal_keys_equal_hashes():
    a = _vec(["same-long-string-value", "short", "same-long-string-value"])
    f = Vector(T.DOUBLE, np.array([0.0, np.nan, -0.0]))
    k = normalize_keys([a, f], 3, False)
    h = hash_keys(k)
    assert h[0] == h[2] and h[0] != h[1]


def test_sum_int_exact_carry():
    vals = np.array([2 ** 62] * 5 + [-(2 ** 63)] * 3, np.int64)
    gid = np.zeros(len(vals), np.int64)
    acc = np.zeros(1, np.int64)
    carry = np.zeros(1, np.int64)
    sum_int_update(gid, vals, np.zeros(len(vals), np.uint8), acc, carry)
    assert int(acc[0]) + int(carry[0]) * 2 ** 64 == sum(int(v) for v in vals)


def test_float_sort_keys_order():
    x = np.array([3.5, -1.0, np.inf, -np.inf, 0.0, -0.0, np.nan, 1e-300])
    keys = float_sort_keys(x)
    order = np.argsort(keys, kind="stable")
    assert list(x[order][:-1]) == [-np.inf, -1.0, 0.0, -0.0, 1e-300, 3.5, np.inf]
    assert np.isnan(x[order][-1])
    back = float_from_sort_keys(keys)
    assert np.array_equal(back[:6], x[:6] + 0.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(1 << 31), (1 << 31) - 1)), max_size=50),
       st.sampled_from([np.int32, np.int64, np.int16]), st.booleans())
def test_one_integer_key_hashed_with_its_words(values, dtype, null_word):
    """normalize_keys hashes a single integer key in the same pass; the
    hashes equal hash_rows over the words it wrote."""
    from engine.kernels.hashing import hash_rows
    if dtype == np.int16:
        values = [None if v is None else v % 30000 for v in values]
    typ = {np.int32: T.INTEGER, np.int64: T.BIGINT, np.int16: T.SMALLINT}[dtype]
    data = np.array([0 if v is None else v for v in values], dtype)
    nulls = np.array([v is None for v in values], np.uint8)
    kc = normalize_keys([Vector(typ, data, nulls if nulls.any() else None)], len(values),
                        null_word)
    assert kc.hashes is not None
    expect = np.empty(len(values), np.uint64)
    hash_rows(kc.keys, kc.kw, kc.heap, expect)
    assert np.array_equal(kc.hashes, expect)
    assert np.array_equal(hash_keys(kc), expect)
