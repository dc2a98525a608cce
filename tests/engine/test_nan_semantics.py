"""NaN follows DuckDB: NaN = NaN, and NaN is greater than every other float,
in comparisons, IN lists, sorting, grouping and min/max, with and without
row-group pruning (writers leave NaN out of min/max statistics)."""

from __future__ import annotations

import math

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine

NAN = float("nan")


@pytest.fixture(scope="module")
def nan_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("nan") / "nan.parquet")
    f = [1.0, NAN, -0.0, 0.0, None, math.inf, NAN, -math.inf, 5.0, NAN, 2.5, None]
    g = [NAN, NAN, 0.0, -0.0, 1.0, 2.0, None, 3.0, NAN, 1.0, 2.5, 4.0]
    # small row groups: some hold only NaN and finite values, so their
    # footer max is finite while NaN rows exist
    pq.write_table(pa.table({"f": f, "g": g}), path, row_group_size=3)
    return path


QUERIES = [
    "SELECT f FROM {T} WHERE f >= 0",
    "SELECT f FROM {T} WHERE f > 4",
    "SELECT f FROM {T} WHERE f = 'NaN'::DOUBLE",
    "SELECT f FROM {T} WHERE f <> 'NaN'::DOUBLE",
    "SELECT f FROM {T} WHERE f < 'NaN'::DOUBLE",
    "SELECT f FROM {T} WHERE f IN ('NaN'::DOUBLE, 1.0)",
    "SELECT f FROM {T} WHERE f BETWEEN 2 AND 'NaN'::DOUBLE",
    "SELECT f = g, f < g, f > g, f <= g, f >= g, f <> g FROM {T}",
    "SELECT max(f), min(f), count(DISTINCT f) FROM {T}",
    "SELECT f FROM {T} ORDER BY f",
    "SELECT f FROM {T} ORDER BY f DESC NULLS FIRST",
]


def _key(rows):
    return sorted(repr(r) for r in rows)


@pytest.mark.parametrize("sql", QUERIES)
def test_nan_matches_duckdb(sql, nan_file):
    got = engine.connect().sql(sql.replace("{T}", f"'{nan_file}'")).fetchall()
    ref_con = duckdb.connect()
    # load into a table: DuckDB's own Parquet reader prunes NaN rows away
    ref_con.execute(f"CREATE TABLE t AS SELECT * FROM '{nan_file}'")
    ref = ref_con.execute(sql.replace("{T}", "t")).fetchall()
    if "ORDER BY" in sql:
        assert repr(got) == repr(ref)
    else:
        assert _key(got) == _key(ref)
