"""scan/writer.py from Python, without SQL: hypothesis columns (extremes,
NaN, -0.0, empty and long strings, decimals of precision 1..38, NULLs
none / some / all) written with random options read back equal in
pyarrow and DuckDB; the footer statistics are what pyarrow reports, the
page index (pqdb's reader) bounds every page's rows, the bloom filters
contain every value."""

from __future__ import annotations

import datetime
import decimal
import math
import os
import struct

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.block import Vector
from planner import types as PT
from scan import open_parquet
from scan.bloom import read_bloom_filter
from scan.pageindex import read_column_index, read_offset_index
from scan.views import views_from_pylist
from scan.writer import ColumnType, ModuleSink, WriteOptions, write_parquet

I64 = (-2**63, 2**63 - 1)
KINDS = {
    "TINYINT": st.integers(-128, 127), "SMALLINT": st.integers(-2**15, 2**15 - 1),
    "INTEGER": st.integers(-2**31, 2**31 - 1), "BIGINT": st.integers(*I64),
    "UTINYINT": st.integers(0, 255), "UINTEGER": st.integers(0, 2**32 - 1),
    "UBIGINT": st.integers(0, 2**64 - 1),
    "DOUBLE": st.floats(allow_nan=True), "FLOAT": st.floats(width=32, allow_nan=True),
    "DATE": st.integers(-719162, 2932896),
    "TIMESTAMP": st.integers(-62135596800000000, 253402300799999999),
    "VARCHAR": st.one_of(st.text(max_size=4), st.text(min_size=60, max_size=90)),
    "BLOB": st.binary(max_size=80), "BOOLEAN": st.booleans(),
}
NP = {"TINYINT": np.int8, "SMALLINT": np.int16, "INTEGER": np.int32, "BIGINT": np.int64,
      "UTINYINT": np.uint8, "UINTEGER": np.uint32, "UBIGINT": np.uint64, "DOUBLE": np.float64,
      "FLOAT": np.float32, "DATE": np.int32, "TIMESTAMP": np.int64, "BOOLEAN": np.bool_}


@st.composite
def columns(draw):
    kind = draw(st.sampled_from(list(KINDS) + ["DECIMAL"]))
    if kind == "DECIMAL":
        p = draw(st.integers(1, 38))
        s = draw(st.integers(0, p))
        t = PT.DECIMAL(p, s)
        values = st.integers(-(10**p - 1), 10**p - 1)
    else:
        t = getattr(PT, kind)
        values = KINDS[kind]
    nulls = draw(st.sampled_from(["none", "some", "all"]))
    n = draw(st.integers(1, 120))
    vals = draw(st.lists(values, min_size=n, max_size=n))
    if draw(st.booleans()):                      # few distinct values: dictionary pages
        vals = [vals[i % 3] for i in range(n)]
    if nulls == "some":
        mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        vals = [None if m else v for v, m in zip(vals, mask)]
    elif nulls == "all":
        vals = [None] * n
    return t, vals


def _vector(t, vals) -> Vector:
    nulls = np.array([v is None for v in vals], np.uint8)
    nulls = nulls if nulls.any() else None
    if t.id in ("VARCHAR", "BLOB"):
        views, heap, _ = views_from_pylist(vals)
        return Vector(t, views, nulls, heap)
    if t.id == "DECIMAL" and t.precision > 18:
        data = np.array([0 if v is None else v for v in vals], object)
    else:
        dtype = np.int64 if t.id == "DECIMAL" else NP[t.id]
        data = np.array([0 if v is None else v for v in vals], dtype)
    return Vector(t, data, nulls)


def _expected(t, v):
    """A storage value as pyarrow's to_pylist gives it."""
    if v is None:
        return None
    if t.id == "DECIMAL":
        return decimal.Decimal(v).scaleb(-t.scale, decimal.Context(prec=80))
    if t.id == "DATE":
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=v)
    if t.id == "TIMESTAMP":
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=v)
    if t.id == "FLOAT":
        return float(np.float32(v))
    return v


def _key(t, v):
    """Order of a storage value in the statistics (strings: UTF-8 bytes)."""
    if t.id == "VARCHAR":
        return v.encode("utf-8", "surrogatepass")
    if t.id == "FLOAT":
        return float(np.float32(v))
    return v


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                      math.copysign(1, b))
    return a == b


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cols=st.lists(columns(), min_size=1, max_size=3),
       codec=st.sampled_from(["SNAPPY", "ZSTD", "GZIP", "UNCOMPRESSED"]),
       version=st.sampled_from([1, 2]), rg=st.integers(1, 80), page_rows=st.integers(1, 40),
       dictionary=st.booleans())
def test_hypothesis_round_trip(tmp_path_factory, cols, codec, version, rg, page_rows,
                               dictionary):
    n = min(len(v) for _, v in cols)
    cols = [(t, v[:n]) for t, v in cols]
    if any(t.id == "VARCHAR" and any(isinstance(x, str) and not _utf8(x) for x in v)
           for t, v in cols):
        cols = [(t, [x if not isinstance(x, str) or _utf8(x) else "?" for x in v])
                for t, v in cols]
    path = str(tmp_path_factory.mktemp("w") / "h.parquet")
    names = [f"c{i}" for i in range(len(cols))]
    opts = WriteOptions(compression=codec, data_page_version=version, row_group_size=rg,
                        page_rows=page_rows, dictionary=dictionary, bloom_columns=tuple(names))
    write_parquet(path, [_vector(t, v) for t, v in cols], list(zip(names, [t for t, _ in cols])),
                  opts)
    table = pq.read_table(path)
    for name, (t, vals) in zip(names, cols):
        got = table.column(name).to_pylist()
        want = [_expected(t, v) for v in vals]
        assert all(_same(a, b) for a, b in zip(got, want)) and len(got) == len(want), name
    _check_statistics(path, names, cols, rg)
    _check_page_index_and_bloom(path, cols, rg)
    con = duckdb.connect()
    assert con.sql(f"SELECT count(*) FROM '{path}'").fetchall() == [(n,)]
    for name, (t, vals) in zip(names, cols):
        assert con.sql(f"SELECT count({name}) FROM '{path}'").fetchall() == \
            [(sum(v is not None for v in vals),)]


def _utf8(s: str) -> bool:
    try:
        s.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _bounds(t, vals):
    present = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not present:
        return None
    return min(present, key=lambda v: _key(t, v)), max(present, key=lambda v: _key(t, v))


def _check_statistics(path, names, cols, rg):
    meta = pq.ParquetFile(path).metadata
    for g in range(meta.num_row_groups):
        for j, (t, vals) in enumerate(cols):
            part = vals[g * rg:(g + 1) * rg]
            stats = meta.row_group(g).column(j).statistics
            assert stats.null_count == sum(v is None for v in part)
            bounds = _bounds(t, part)
            if bounds is None or t.id == "BOOLEAN" and False:
                assert not stats.has_min_max
                continue
            assert stats.has_min_max
            lo, hi = (_expected(t, v) for v in bounds)
            if t.id in ("FLOAT", "DOUBLE"):
                lo = -0.0 if lo == 0 else lo
                hi = 0.0 if hi == 0 else hi
            assert _same(stats.min, lo) and _same(stats.max, hi), (t, stats, lo, hi)


def _check_page_index_and_bloom(path, cols, rg):
    pf = open_parquet(path)
    for g, group in enumerate(pf.row_groups):
        for j, (t, vals) in enumerate(cols):
            part = vals[g * rg:(g + 1) * rg]
            ci, oi = read_column_index(pf, g, j), read_offset_index(pf, g, j)
            assert oi is not None and ci is not None and ci.num_pages == oi.num_pages
            ends = list(oi.first_row_indexes[1:]) + [group.num_rows]
            for p, (a, b) in enumerate(zip(oi.first_row_indexes, ends)):
                rows = part[a:b]
                assert int(ci.null_counts[p]) == sum(v is None for v in rows)
                bounds = _bounds(t, rows)
                assert bool(ci.null_pages[p]) == all(v is None for v in rows)
                if bounds is None or ci.min_values[p] is None:
                    continue
                lo, hi = (_storage(t, v) for v in bounds)
                assert ci.min_values[p] <= lo and ci.max_values[p] >= hi
                if t.id not in ("VARCHAR", "BLOB"):
                    assert ci.min_values[p] == lo and ci.max_values[p] == hi
            bloom = read_bloom_filter(pf, g, j)
            present = [v for v in part if v is not None]
            if t.id == "BOOLEAN" or not present:
                continue
            assert bloom is not None
            for v in present:
                assert bloom.might_contain(_storage(t, v)), (t, v)


def _storage(t, v):
    if t.id == "VARCHAR":
        return v.encode()
    if t.id == "FLOAT":
        return float(np.float32(v))
    if t.id == "BOOLEAN":
        return bool(v)
    return v


def test_nested_and_the_module_sink(tmp_path):
    """A LIST of STRUCTs and a MAP, NULL at every level; every module
    passes the sink once, bodies before their headers."""
    inner = PT.STRUCT([("a", PT.INTEGER), ("b", PT.VARCHAR)])
    lt = PT.LIST(inner)
    # rows: [ {1,'x'}, NULL ], NULL, [], [ {NULL, NULL} ]
    av = Vector(PT.INTEGER, np.array([1, 0, 0], np.int32), np.array([0, 0, 1], np.uint8))
    views, heap, _ = views_from_pylist(["x", "", ""])
    bv = Vector(PT.VARCHAR, views, np.array([0, 0, 1], np.uint8), heap)
    sv = Vector(inner, np.array([0, 1, 2], np.int64), np.array([0, 1, 0], np.uint8),
                children=[av, bv])
    lv = Vector(lt, np.array([[0, 2], [0, 0], [0, 0], [2, 1]], np.int64),
                np.array([0, 1, 0, 0], np.uint8), children=[sv])
    seen = []

    class Recorder(ModuleSink):
        def module(self, kind, row_group, column, page, data):
            seen.append((kind, column, page, len(data)))
            return data

    path = str(tmp_path / "n.parquet")
    write_parquet(path, [lv], [("l", lt)], WriteOptions(sink=Recorder()))
    assert pq.read_table(path).column("l").to_pylist() == \
        [[{"a": 1, "b": "x"}, None], None, [], [{"a": None, "b": None}]]
    assert duckdb.sql(f"SELECT l FROM '{path}'").fetchall() == \
        [([{"a": 1, "b": "x"}, None],), (None,), ([],), ([{"a": None, "b": None}],)]
    kinds = [k for k, *_ in seen]
    assert kinds[:2] == [2, 4] and 6 in kinds and 7 in kinds      # page body, header, indexes
    assert ColumnType("INTEGER").id == "INTEGER"


def test_atomic_on_failure(tmp_path):
    """A write that fails after row groups went out leaves the old file and
    no temporary file."""
    from scan.writer import ParquetWriter
    path = tmp_path / "a.parquet"
    path.write_bytes(b"old")

    class Failing:
        nulls = heap = children = None

        @property
        def data(self):
            raise RuntimeError("the query failed")

    good = Vector(PT.BIGINT, np.arange(100, dtype=np.int64))
    w = ParquetWriter(str(path), ["x"], [PT.BIGINT], WriteOptions(row_group_size=10))
    w.write([good], 100)
    with pytest.raises(RuntimeError, match="the query failed"):
        w.write([Failing()], 5)
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["a.parquet"]
    with ParquetWriter(str(path), ["x"], [PT.BIGINT]) as w:
        w.write([good], 100)
    assert pq.read_table(str(path)).column("x").to_pylist() == list(range(100))
    assert struct.unpack("<4s", path.read_bytes()[-4:]) == (b"PAR1",)
