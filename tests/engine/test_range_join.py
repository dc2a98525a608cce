"""Joins without equality keys (engine/operators/nljoin.py) against DuckDB:
inequality joins on every operator, band and interval joins, residual
conditions, the outer, semi, anti and mark variants and cross joins, over
random data with NULLs, duplicates, negative zeros, NaN and infinities; at 1
and 2 threads, with small blocks so that every probe block's pairs come out
in several output blocks."""

from __future__ import annotations

import datetime as dt
import decimal
from collections import Counter

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from engine.operators import nljoin
from tests.engine.test_executor_helpers import assert_rows_equal

BLOCK_ROWS = 1024          # NestedLoopJoin's smallest batch


def _ints(rng, n, lo, hi, null_rate):
    vals = rng.integers(lo, hi, n)
    return pa.array([None if rng.random() < null_rate else int(v) for v in vals], pa.int64())


def _table(rng, n: int) -> pa.Table:
    floats = rng.normal(0, 30, n).round(1)
    specials = [float("nan"), -0.0, 0.0, float("inf"), float("-inf")]
    floats = [specials[int(rng.integers(0, len(specials)))] if rng.random() < 0.05 else
              (None if rng.random() < 0.05 else float(v)) for v in floats]
    start = dt.date(2020, 1, 1)
    lo = rng.integers(0, 200, n)
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "x": _ints(rng, n, 0, 300, 0.05),            # many duplicates
        "y": _ints(rng, n, -50, 350, 0.05),
        "lo": pa.array(lo, pa.int64()),
        "hi": pa.array(lo + rng.integers(0, 15, n), pa.int64()),     # intervals [lo, hi]
        "f": pa.array(floats, pa.float64()),
        "d": pa.array([None if rng.random() < 0.05 else start + dt.timedelta(days=int(v))
                       for v in rng.integers(0, 400, n)], pa.date32()),
        "m": pa.array([None if rng.random() < 0.05 else decimal.Decimal(f"{v:.2f}")
                       for v in rng.normal(100, 40, n)], pa.decimal128(9, 2)),
        "s": pa.array([None if rng.random() < 0.05 else f"k{int(v):03d}"
                       for v in rng.integers(0, 200, n)]),
    })


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = tmp_path_factory.mktemp("rangejoin")
    rng = np.random.default_rng(31)
    paths = {}
    for name, n in (("a", 2500), ("b", 1800), ("e", 0)):
        tbl = _table(rng, max(n, 1)).slice(0, n)
        paths[name] = str(d / f"{name}.parquet")
        pq.write_table(tbl, paths[name], row_group_size=700)
    return paths


def _views(paths):
    return [f"CREATE VIEW {n} AS SELECT * FROM read_parquet('{p}')" for n, p in paths.items()]


@pytest.fixture(scope="module")
def duck(db):
    con = duckdb.connect()
    for v in _views(db):
        con.execute(v)
    return con


@pytest.fixture(scope="module")
def cons(db):
    out = {}
    for t in (1, 2):
        con = engine.connect(threads=t, block_rows=BLOCK_ROWS)
        for v in _views(db):
            con.sql(v)
        out[t] = con
    return out


def _check(cons, duck, sql, monkeypatch, indexed=True):
    """Same rows as DuckDB at 1 and 2 threads; the join ran in NestedLoopJoin
    (on a sorted index when ``indexed``)."""
    tables = []
    init = nljoin.NestedLoopJoin.__init__

    def spy(self, kind, table, *args, **kw):
        tables.append(table)
        init(self, kind, table, *args, **kw)
    monkeypatch.setattr(nljoin.NestedLoopJoin, "__init__", spy)
    want = duck.execute(sql).fetchall()
    for t, con in cons.items():
        got = con.sql(sql).fetchall()
        if len(want) > 2000:            # ids and counts: compared as multisets, fast
            assert len(got) == len(want) and Counter(got) == Counter(want), (t, sql)
        else:
            assert_rows_equal(got, want)
    assert tables, "the join did not run in NestedLoopJoin"
    if indexed:
        assert all(t.indexed for t in tables if t.block.n)


OPS = ["<", "<=", ">", ">="]


@pytest.mark.parametrize("op", OPS)
def test_inequality_inner(cons, duck, monkeypatch, op):
    _check(cons, duck, f"SELECT a.id, b.id FROM a JOIN b ON a.x {op} b.y "
                       f"WHERE a.id % 50 = 0", monkeypatch)
    # the build expression on the left of the comparison, and expressions
    _check(cons, duck, f"SELECT a.id, b.id, b.y FROM a, b WHERE b.y + 1 {op} a.x * 2 "
                       f"AND a.id < 40", monkeypatch)


@pytest.mark.parametrize("op", OPS)
def test_inequality_count(cons, duck, monkeypatch, op):
    _check(cons, duck, f"SELECT count(*) FROM a, b WHERE a.x {op} b.y", monkeypatch)
    _check(cons, duck, f"SELECT count(*), sum(a.x), min(b.y) FROM a, b WHERE a.x {op} b.y",
           monkeypatch)


@pytest.mark.parametrize("col", ["f", "d", "m"])
@pytest.mark.parametrize("op", OPS)
def test_other_key_types(cons, duck, monkeypatch, op, col):
    """Doubles (NaN greatest and equal to itself, -0.0 = 0.0), dates, decimals."""
    _check(cons, duck, f"SELECT a.id, b.id FROM a JOIN b ON a.{col} {op} b.{col} "
                       f"WHERE a.id % 50 = 0", monkeypatch)


@pytest.mark.parametrize("kind", ["LEFT", "RIGHT", "FULL"])
@pytest.mark.parametrize("op", ["<", ">="])
def test_outer(cons, duck, monkeypatch, kind, op):
    small = "(SELECT * FROM a WHERE id % 20 = 0) a {kind} JOIN (SELECT * FROM b WHERE id % 4 = 0) b"
    small = small.format(kind=kind)
    _check(cons, duck, f"SELECT a.id, b.id FROM {small} ON a.x {op} b.y - 200", monkeypatch)
    _check(cons, duck, f"SELECT a.id, b.id FROM {small} ON a.x {op} b.y + 200", monkeypatch)
    # with a residual that is not an inequality
    _check(cons, duck, f"SELECT a.id, b.id FROM {small} ON a.x {op} b.y AND (a.id + b.id) % 3 = 0",
           monkeypatch)


@pytest.mark.parametrize("negate", ["", "NOT"])
def test_semi_anti(cons, duck, monkeypatch, negate):
    _check(cons, duck, f"SELECT a.id FROM a WHERE {negate} EXISTS "
                       f"(SELECT 1 FROM b WHERE b.y > a.x + 300)", monkeypatch)
    _check(cons, duck, f"SELECT a.id FROM a WHERE {negate} EXISTS "
                       f"(SELECT 1 FROM b WHERE b.lo <= a.x AND a.x <= b.hi)", monkeypatch)
    _check(cons, duck, f"SELECT a.id FROM a WHERE {negate} EXISTS "
                       f"(SELECT 1 FROM b WHERE b.y < a.x AND b.s > a.s)", monkeypatch)


def test_mark(cons, duck, monkeypatch):
    _check(cons, duck, "SELECT a.id, EXISTS (SELECT 1 FROM b WHERE b.y > a.x + 340) FROM a",
           monkeypatch)


def test_band_same_key(cons, duck, monkeypatch):
    _check(cons, duck, "SELECT a.id, b.id FROM a JOIN b ON b.y BETWEEN a.x - 2 AND a.x + 1",
           monkeypatch)
    _check(cons, duck, "SELECT a.id, b.id FROM a JOIN b ON b.y > a.x AND b.y <= a.x + 3",
           monkeypatch)
    _check(cons, duck, "SELECT count(*) FROM a JOIN b ON b.f BETWEEN a.f - 1 AND a.f + 1",
           monkeypatch)


def test_band_other_key(cons, duck, monkeypatch):
    """a.x BETWEEN b.lo AND b.hi: sorted on b.lo, narrowed by max(b.hi - b.lo)."""
    _check(cons, duck, "SELECT a.id, b.id FROM a JOIN b ON a.x BETWEEN b.lo AND b.hi "
                       "WHERE b.id % 5 = 0",
           monkeypatch)
    _check(cons, duck, "SELECT a.id, b.id FROM a JOIN b ON a.x BETWEEN b.y - 1 AND b.y + 2",
           monkeypatch)
    _check(cons, duck, "SELECT count(*) FROM a LEFT JOIN b ON a.x > b.lo AND a.x < b.hi",
           monkeypatch)
    # two inequalities bounding the build side the same way, and a third
    _check(cons, duck, "SELECT a.id, b.id FROM a JOIN b ON a.x < b.y AND a.lo < b.hi "
                       "AND a.hi > b.lo AND a.id < 200", monkeypatch)


def test_strings_compare_every_pair(cons, duck, monkeypatch):
    _check(cons, duck, "SELECT a.id, b.id FROM a JOIN b ON a.s < b.s WHERE a.id < 10",
           monkeypatch, indexed=False)


def test_mixed_types(cons, duck, monkeypatch):
    """Integer against decimal and double: compared as the binder casts them."""
    _check(cons, duck, "SELECT a.id, b.id FROM a JOIN b ON a.x < b.m WHERE a.id % 50 = 0",
           monkeypatch)
    _check(cons, duck, "SELECT a.id, b.id FROM a JOIN b ON a.x >= b.f WHERE a.id % 50 = 0",
           monkeypatch)


def test_cross(cons, duck, monkeypatch):
    _check(cons, duck, "SELECT a.id, b.id FROM a, b WHERE a.id < 3", monkeypatch,
           indexed=False)
    _check(cons, duck, "SELECT count(*) FROM a, b", monkeypatch, indexed=False)
    _check(cons, duck, "SELECT count(*), max(a.x) FROM a, b", monkeypatch, indexed=False)
    _check(cons, duck, "SELECT count(*) FROM a, b WHERE (a.x + b.y) % 7 = 1", monkeypatch,
           indexed=False)


def test_empty_sides(cons, duck, monkeypatch):
    for sql in ["SELECT a.id, e.id FROM a LEFT JOIN e ON a.x < e.y",
                "SELECT a.id, e.id FROM e RIGHT JOIN a ON e.x < a.y",
                "SELECT a.id FROM a WHERE NOT EXISTS (SELECT 1 FROM e WHERE e.y > a.x)",
                "SELECT count(*) FROM a, e"]:
        _check(cons, duck, sql, monkeypatch, indexed=False)


def test_limit_stops_a_cross_join(cons):
    """LIMIT over a cross join: the first rows, without making the others."""
    for con in cons.values():
        rows = con.sql("SELECT a.id, b.id FROM a, b LIMIT 5").fetchall()
        assert rows == [(0, i) for i in range(5)]


def test_single_row_subquery_with_inequality(cons, duck, monkeypatch):
    _check(cons, duck, "SELECT a.id, (SELECT b.id FROM b WHERE b.id = 7 AND b.y > a.x) "
                       "FROM a WHERE a.id < 100", monkeypatch, indexed=False)
