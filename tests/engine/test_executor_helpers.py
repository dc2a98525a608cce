"""Helpers for the executor/operator tests: hand-built plans over small
Parquet files, execution, and comparison with DuckDB."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from engine.config import Config
from engine.context import ExecutionContext
from engine.convert import block_to_rows
from engine.executor import execute
from planner import logical as L
from planner.expressions import AggregateCall, Call, ColumnRef, Literal
from planner import types as T
from scan.reader import open_parquet
from tests.connections import duckdb_rows, pqdb_with_views

_FILES: dict = {}


def open_file(path):
    pf = _FILES.get(path)
    if pf is None:
        pf = _FILES[path] = open_parquet(path)
    return pf


def make_ctx(threads=1, block_rows=65536, memory_limit=8 << 30):
    cfg = Config(threads=threads, block_rows=block_rows, memory_limit=memory_limit)
    return ExecutionContext(cfg, open_file)


def scan(paths, columns=None, filters=None, alias=None) -> L.Scan:
    if isinstance(paths, str):
        paths = [paths]
    pf = open_file(paths[0])
    fields = [L.Field(c.name, T.from_scan_type_name(c.type_name), alias) for c in pf.columns]
    names = [f.name for f in fields]
    cols = list(range(len(fields))) if columns is None else [names.index(c) for c in columns]
    return L.Scan(list(paths), fields, cols, list(filters or []),
                  sum(open_file(p).num_rows for p in paths), alias)


def ref(node: L.Node, name: str, offset: int = 0) -> ColumnRef:
    """ColumnRef to column ``name`` of node's schema (plus offset for joins)."""
    for i, f in enumerate(node.schema):
        if f.name == name:
            return ColumnRef(i + offset, f.type, name)
    raise KeyError(name)


def lit(value, typ) -> Literal:
    return Literal(value, typ)


def call(func, *args, typ=T.BOOLEAN) -> Call:
    return Call(func, list(args), typ)


def agg(func, arg=None, distinct=False, typ=None) -> AggregateCall:
    if typ is None:
        if func in ("count", "count_star"):
            typ = T.BIGINT
        elif func == "avg":
            typ = T.DOUBLE
        elif func == "sum":
            t = arg.type
            typ = (T.DECIMAL(38, t.scale) if t.is_decimal else
                   T.DOUBLE if t.is_float else T.HUGEINT)
        else:
            typ = arg.type
    return AggregateCall(func, arg, distinct, typ)


def run(plan, threads=1, block_rows=65536, **kw):
    block = execute(plan, make_ctx(threads, block_rows, **kw))
    assert len(block.columns) == len(plan.schema)
    for v, f in zip(block.columns, plan.schema):
        assert v.type == f.type, (v.type, f.type)
        assert len(v) == block.n
    return block_to_rows(block)


def _norm(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, decimal.Decimal):
        return float(v) if v != v.to_integral_value() else int(v)
    if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
        return v
    return v


def _key(row):
    return tuple((v is None, str(type(v)) if v is not None else "", v if v is not None else 0)
                 for v in row)


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (float, decimal.Decimal)) or isinstance(b, (float, decimal.Decimal)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def assert_rows_equal(got, want, ordered=False):
    got = [tuple(_norm(v) for v in r) for r in got]
    want = [tuple(_norm(v) for v in r) for r in want]
    assert len(got) == len(want), f"{len(got)} rows, expected {len(want)}"
    if not ordered:
        got = sorted(got, key=lambda r: _key(tuple(float(v) if isinstance(v, int) and not
                                                  isinstance(v, bool) else v for v in r)))
        want = sorted(want, key=lambda r: _key(tuple(float(v) if isinstance(v, int) and not
                                                    isinstance(v, bool) else v for v in r)))
    for i, (g, w) in enumerate(zip(got, want)):
        assert len(g) == len(w)
        assert all(_same(x, y) for x, y in zip(g, w)), f"row {i}: {g} != {w}"


def duck(sql, **files):
    """DuckDB's rows for sql over views name=path (tests/connections.py)."""
    return duckdb_rows(sql, files)


def assert_matches_duckdb(sql, tables, configs, ordered=False):
    """pqdb's rows for sql over views name=path equal DuckDB's, for every
    (threads, block_rows) of configs."""
    want = duckdb_rows(sql, tables)
    for threads, block_rows in configs:
        con = pqdb_with_views(tables, threads=threads, block_rows=block_rows)
        got = con.sql(sql).fetchall()
        try:
            assert_rows_equal(got, want, ordered=ordered)
        except AssertionError as e:
            raise AssertionError(f"threads={threads} block_rows={block_rows}: {e}") from None


def write_sample_tables(tmp, n=3000, seed=7):
    """Two related tables with NULLs, duplicates, short/long strings, decimals,
    dates and doubles; several row groups each."""
    rng = np.random.default_rng(seed)
    words = ["apple", "banana", "cherry", "a-rather-long-fruit-name", "", "kiwi",
             "another-very-long-string-value-xyz", "Zebra", "zebra", "\u00e9clair"]

    def strings(k, null_rate):
        vals = [words[i] + ("" if j == 0 else str(j)) for i, j in
                zip(rng.integers(0, len(words), k), rng.integers(0, 25, k))]
        return [None if rng.random() < null_rate else v for v in vals]

    def ints(k, lo, hi, null_rate):
        vals = rng.integers(lo, hi, k)
        return [None if rng.random() < null_rate else int(v) for v in vals]

    t1 = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "k": pa.array(ints(n, 0, 250, 0.05), pa.int32()),
        "s": pa.array(strings(n, 0.05), pa.string()),
        "d": pa.array([None if rng.random() < 0.03 else decimal.Decimal(int(v)).scaleb(-2)
                       for v in rng.integers(-10**6, 10**6, n)], pa.decimal128(12, 2)),
        "dt": pa.array([dt.date(1995, 1, 1) + dt.timedelta(days=int(v))
                        for v in rng.integers(0, 400, n)], pa.date32()),
        "f": pa.array([None if rng.random() < 0.05 else float(v)
                       for v in rng.normal(0, 100, n)], pa.float64()),
    })
    m = n // 3
    t2 = pa.table({
        "k": pa.array(ints(m, 0, 300, 0.05), pa.int32()),
        "s": pa.array(strings(m, 0.05), pa.string()),
        "v": pa.array(rng.integers(0, 1000, m), pa.int64()),
        "name": pa.array([f"name-{i % 97}-{'x' * (i % 20)}" for i in range(m)], pa.string()),
    })
    p1, p2 = str(tmp / "t1.parquet"), str(tmp / "t2.parquet")
    pq.write_table(t1, p1, row_group_size=700)
    pq.write_table(t2, p2, row_group_size=300)
    return p1, p2
