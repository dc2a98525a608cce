"""Parallel ORDER BY: sorted runs and their k-way merge (engine/kernels/merge.py,
engine/operators/sort.py).  Results must equal a stable reference sort (ties
in input order) for any thread count, block size and run count."""

from __future__ import annotations

import functools
import math

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

import engine
import engine.operators.sort as sort_module
from engine.block import Block, Vector
from engine.context import MemoryTracker
from engine.convert import strings_to_vector
from engine.errors import MemoryLimitError
from engine.kernels.merge import sort_run
from engine.kernels.sort import string_ranks
from planner import types as T
from planner.expressions import ColumnRef
from planner.logical import SortKey


# ---------------------------------------------------------------- reference
def _compare_values(a, b, kind: str) -> int:
    if kind == "float":
        a_nan, b_nan = math.isnan(a), math.isnan(b)
        if a_nan or b_nan:                   # NaN is the greatest float
            return int(a_nan) - int(b_nan)
    if kind == "string":
        a, b = a.encode(), b.encode()
    return (a > b) - (a < b)


def reference_order(columns: list[list], kinds: list[str], keys) -> list[int]:
    """Stable sort of row numbers by (column, ascending, nulls_first) keys."""
    def compare(i, j):
        for col, asc, nulls_first in keys:
            a, b = columns[col][i], columns[col][j]
            if a is None or b is None:
                if a is None and b is None:
                    continue
                return (-1 if a is None else 1) * (1 if nulls_first else -1)
            c = _compare_values(a, b, kinds[col])
            if c:
                return c if asc else -c
        return 0
    return sorted(range(len(columns[0])), key=functools.cmp_to_key(compare))


def _vector(values: list, kind: str) -> Vector:
    if kind == "string":
        vec = strings_to_vector(values, T.VARCHAR)
        nulls = vec.nulls if vec.nulls is not None and vec.nulls.any() else None
        return Vector(T.VARCHAR, vec.data, nulls, vec.heap)
    nulls = np.array([v is None for v in values], np.uint8)
    if kind == "float":
        data = np.array([0.0 if v is None else v for v in values], np.float64)
        typ = T.DOUBLE
    elif kind == "decimal38":
        data = np.array([0 if v is None else v for v in values], dtype=object)
        typ = T.DECIMAL(38, 0)
    else:
        data = np.array([7 if v is None else v for v in values], np.int32 if kind == "int32"
                        else np.int64)
        typ = T.INTEGER if kind == "int32" else T.BIGINT
    return Vector(typ, data, nulls if nulls.any() else None)


def _block(columns, kinds) -> Block:
    return Block([_vector(c, k) for c, k in zip(columns, kinds)], len(columns[0]))


def _sort_keys(block: Block, keys):
    return [SortKey(ColumnRef(c, block.columns[c].type), asc, nf) for c, asc, nf in keys]


# ---------------------------------------------------------------- kernels
_words = st.integers(1, 3).flatmap(lambda w: st.lists(
    st.lists(st.one_of(st.integers(0, 3), st.integers(0, 2**64 - 1)), min_size=w, max_size=w),
    max_size=300))


@settings(max_examples=80, deadline=None)
@given(_words, st.integers(1, 7), st.integers(1, 8), st.one_of(st.none(), st.integers(0, 50)))
def test_run_sort_and_merge_match_lexsort(rows, nruns, threads, limit):
    """Unsigned word rows cut into runs, each sorted, then merged in
    parallel key ranges: the stable lexicographic order of the rows."""
    n = len(rows)
    width = len(rows[0]) if rows else 1
    words = np.array(rows, np.uint64).reshape(n, width)
    matrix = np.empty((n, width + 1), np.uint64)
    matrix[:, :width] = words
    matrix[:, width] = np.arange(n, dtype=np.uint64)
    string_col = np.full(width, -1, np.int64)
    args = (matrix, string_col, np.zeros(width, np.bool_), np.zeros((0, n, 2), np.uint64),
            np.zeros(0, np.uint8))
    bounds = np.linspace(0, n, min(nruns, max(n, 1)) + 1).astype(np.int64)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        sort_run(*args, lo, hi)
    if len(bounds) > 2:
        got = sort_module._merge(args, bounds, threads, limit)
    else:
        got = matrix[:, width].astype(np.int64)[:limit]
    want = np.lexsort(words.T[::-1]) if n else np.zeros(0, np.int64)
    assert got.tolist() == want[:limit].tolist()


_text = st.one_of(st.none(), st.sampled_from(["", "a", "a\x00", "ab", "b", "é", "zz",
                                              "twelve bytes", "twelve bytes!",
                                              "a long string over twelve bytes",
                                              "a long string over twelve bytes, longer"]),
                  st.text(max_size=20))
_float = st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, -2.0, math.nan, math.inf, -math.inf]))
_int = st.one_of(st.none(), st.integers(-3, 3), st.integers(-2**63, 2**63 - 1))
_int32 = st.one_of(st.none(), st.integers(-2, 2), st.integers(-2**31, 2**31 - 1))
_dec = st.one_of(st.none(), st.integers(-2, 2), st.integers(-10**37, 10**37))
_KINDS = ["string", "float", "int64", "int32", "decimal38"]
_table = st.lists(st.tuples(_text, _float, _int, _int32, _dec), max_size=120)
_key_spec = st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.booleans()),
                     min_size=1, max_size=4)


@settings(max_examples=80, deadline=None)
@given(_table, _key_spec, st.sampled_from([1, 2, 8]), st.sampled_from([1, 5, 64]),
       st.one_of(st.none(), st.integers(0, 30)))
def test_sorted_rows_match_reference(rows, keys, threads, run_rows, limit):
    columns = [[r[c] for r in rows] for c in range(len(_KINDS))] if rows else [[]] * 5
    block = _block(columns, _KINDS)
    old = sort_module.MIN_RUN_ROWS
    sort_module.MIN_RUN_ROWS = run_rows
    try:
        got = sort_module.sorted_rows(block, _sort_keys(block, keys), None, threads, limit)
    finally:
        sort_module.MIN_RUN_ROWS = old
    want = reference_order(columns, _KINDS, keys)
    assert got.tolist() == want[:limit]


@settings(max_examples=60, deadline=None)
@given(_table, _key_spec, st.sampled_from([1, 2]), st.sampled_from([3, 10, 40]),
       st.one_of(st.none(), st.integers(0, 30)))
def test_bounded_runs_and_merge_pieces_match_reference(rows, keys, threads, cap, limit):
    """Runs and merge pieces cut at most ``cap`` rows long (MAX_*_ROWS: a
    kernel call stays short, so a stop request is seen), whatever the
    thread count: still the stable order."""
    columns = [[r[c] for r in rows] for c in range(len(_KINDS))] if rows else [[]] * 5
    block = _block(columns, _KINDS)
    names = ("MAX_RUN_ROWS", "MAX_STRING_RUN_ROWS", "MAX_MERGE_ROWS", "MAX_STRING_MERGE_ROWS")
    old = {name: getattr(sort_module, name) for name in names}
    try:
        for name in names:
            setattr(sort_module, name, cap)
        got = sort_module.sorted_rows(block, _sort_keys(block, keys), None, threads, limit)
    finally:
        for name, value in old.items():
            setattr(sort_module, name, value)
    want = reference_order(columns, _KINDS, keys)
    assert got.tolist() == want[:limit]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_text, _float, _int, _int32, _dec), min_size=30, max_size=150),
       _key_spec, st.integers(1, 8), st.integers(1, 6), st.integers(1, 3))
def test_top_n_trims_and_bounds_match_reference(rows, keys, limit, block, workers):
    """Top-N with a tiny trim threshold: workers trim to N rows, then drop
    rows not strictly before their N-th row; the result is still the first N
    rows of the stable order."""
    columns = [[r[c] for r in rows] for c in range(len(_KINDS))] if rows else [[]] * 5
    columns.append(list(range(len(rows))))
    whole = _block(columns, _KINDS + ["int64"])
    sort_keys = _sort_keys(whole, keys)
    sink = sort_module.SortSink(sort_keys, [c.type for c in whole.columns], limit, None, block)
    sink.trim_at = limit + 1
    locals_ = [sink.make_local() for _ in range(workers)]
    for m, start in enumerate(range(0, len(rows), block)):
        sink.consume(locals_[m % workers], whole.slice(start, start + block), (m, 0))
    out = sink.merge(locals_)
    want = reference_order(columns, _KINDS, keys)[:limit]
    assert out.columns[-1].data.tolist() == want


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=30), st.binary(max_size=30).map(
    lambda b: b.decode("latin-1"))), max_size=200))
def test_string_ranks_msd(values):
    vec = strings_to_vector(values, T.VARCHAR)
    ranks = string_ranks(vec.data, vec.heap)
    distinct = sorted({v.encode() for v in values})
    assert list(ranks) == [distinct.index(v.encode()) for v in values]


def test_string_ranks_deep_ties():
    """Long shared prefixes, trailing NULs and many duplicates (MSD levels)."""
    base = "x" * 40
    values = [base + s for s in ["", "\x00", "\x00\x00", "a", "b", "\x00a"] * 30] + ["x" * k for k in range(45)]
    rng = np.random.default_rng(3)
    values = [values[i] for i in rng.permutation(len(values))]
    vec = strings_to_vector(values, T.VARCHAR)
    ranks = string_ranks(vec.data, vec.heap)
    distinct = sorted({v.encode() for v in values})
    assert list(ranks) == [distinct.index(v.encode()) for v in values]


# ---------------------------------------------------------------- memory
def test_sort_sink_memory_is_released_and_limited():
    n = 50_000
    rng = np.random.default_rng(0)
    block = Block([Vector(T.BIGINT, rng.integers(0, 100, n)), Vector(T.DOUBLE, rng.random(n))], n)
    keys = _sort_keys(block, [(0, False, False), (1, True, False)])
    tracker = MemoryTracker(1 << 30)
    sink = sort_module.SortSink(keys, [T.BIGINT, T.DOUBLE], None, tracker, 1000)
    sink.threads = 2
    local = sink.make_local()
    for m in range(0, n, 1000):
        sink.consume(local, block.slice(m, m + 1000), (m // 1000, 0))
    out = sink.merge([local])
    sink.release()
    assert tracker.used == 0 and tracker.peak > 16 * n
    assert out.columns[0].data.tolist() == sorted(block.columns[0].data.tolist(), reverse=True)
    # input fits, and its concatenation (one column at a time over the
    # parts), the sort's key rows do not: a clear error, nothing left held
    tracker = MemoryTracker(16 * n + 8 * n + 1000)
    sink = sort_module.SortSink(keys, [T.BIGINT, T.DOUBLE], None, tracker, 1000)
    local = sink.make_local()
    for m in range(0, n, 1000):
        sink.consume(local, block.slice(m, m + 1000), (m // 1000, 0))
    with pytest.raises(MemoryLimitError, match="sort keys"):
        sink.merge([local])
    sink.release()
    assert tracker.used == 0


# ---------------------------------------------------------------- SQL vs DuckDB
@pytest.fixture(scope="module")
def sort_table(tmp_path_factory) -> str:
    rng = np.random.default_rng(42)
    n = 30_000
    short = np.array(["", "a", "ab", "abc", "zz", "é", "twelve bytes", "b"], dtype=object)
    long = np.array(["a long string over twelve bytes", "a long string over twelve bytes!",
                     "a long string over twelve", "zz" * 20, "b" * 13], dtype=object)
    s_short = short[rng.integers(0, len(short), n)]
    s_short[rng.random(n) < 0.05] = None
    s_mixed = np.where(rng.random(n) < 0.5, long[rng.integers(0, len(long), n)],
                       short[rng.integers(0, len(short), n)])
    s_mixed[rng.random(n) < 0.05] = None
    f = rng.integers(-5, 5, n).astype(np.float64)
    f[rng.random(n) < 0.05] = np.nan
    f[f == 0] = -0.0
    dec = [None if rng.random() < 0.05 else int(x) * 10**25 + 3
           for x in rng.integers(-20, 20, n)]
    table = pa.table({
        "id": np.arange(n),
        "g": pa.array(rng.integers(-3, 3, n).astype(np.int32), mask=rng.random(n) < 0.05),
        "v": pa.array(rng.integers(-2**62, 2**62, n) // 2**58, mask=rng.random(n) < 0.05),
        "f": pa.array(f, mask=rng.random(n) < 0.05),
        "s": pa.array(list(s_short), pa.string()),
        "t": pa.array(list(s_mixed), pa.string()),
        "d": pa.array(dec, pa.decimal128(38, 0)),
        "day": pa.array(rng.integers(0, 30, n).astype(np.int32), pa.int32()).cast(pa.date32()),
    })
    path = tmp_path_factory.mktemp("psort") / "t.parquet"
    pq.write_table(table, path, row_group_size=7000)
    return str(path)


ORDERS = [
    "v DESC, g",
    "s, f DESC NULLS FIRST",
    "t DESC, g NULLS FIRST",
    "f NULLS FIRST, t, v DESC",
    "d DESC NULLS LAST, s",
    "day DESC, t NULLS FIRST, f",
    "g, s DESC NULLS LAST, d",
    "length(t) DESC, t",
]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("limit", [None, "LIMIT 37 OFFSET 5", "LIMIT 20000"])
def test_order_by_matches_duckdb(sort_table, order, limit, monkeypatch):
    monkeypatch.setattr(sort_module, "MIN_RUN_ROWS", 700)    # many runs per sort
    query = f"SELECT * FROM '{sort_table}' ORDER BY {order}"
    tail = f" {limit}" if limit else ""
    want = duckdb.sql(f"{query}, id{tail}").fetchall()         # ties: file order
    for threads, block_rows in [(1, 65536), (2, 1000), (8, 1000), (8, 333)]:
        con = engine.connect(threads=threads, block_rows=block_rows)
        got = con.execute(query + tail).fetchall()
        assert repr(got) == repr(want), (threads, block_rows)


def test_window_sort_order_still_works(sort_table):
    query = (f"SELECT id, row_number() OVER (PARTITION BY g ORDER BY t DESC, f) AS r "
             f"FROM '{sort_table}' ORDER BY id")
    want = duckdb.sql(query.replace("f) AS r", "f, id) AS r")).fetchall()
    assert engine.connect(threads=2, block_rows=1000).execute(query).fetchall() == want
