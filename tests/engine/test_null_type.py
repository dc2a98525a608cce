"""Columns of the Parquet NULL (UNKNOWN) logical type read as SQL NULL, as in
DuckDB: pyarrow writes them for all-null columns (pa.nulls)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine

QUERIES = [
    "SELECT * FROM t",
    "SELECT a FROM t",
    "SELECT n, a FROM t WHERE a > 1",
    "SELECT count(n), count(*), max(n), min(n) FROM t",
    "SELECT a, n IS NULL FROM t",
    "SELECT coalesce(n, a) FROM t",
    "SELECT n, count(*) FROM t GROUP BY n",
    "SELECT a FROM t WHERE n IS NOT NULL",
    "SELECT a FROM t WHERE n = 1",
    "SELECT l FROM t",
]


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("nulltype") / "t.parquet")
    n = 5000
    table = pa.table({"a": pa.array(range(n), pa.int64()), "n": pa.nulls(n),
                      "l": pa.array([[None] * (i % 3) for i in range(n)], pa.list_(pa.null()))})
    pq.write_table(table, p, row_group_size=1500)
    return p


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("sql", QUERIES)
def test_null_type_column_matches_duckdb(sql, threads, path):
    con = engine.connect(threads=threads, block_rows=700)
    con.sql(f"CREATE VIEW t AS SELECT * FROM '{path}'")
    duck = duckdb.connect()
    duck.execute(f"CREATE VIEW t AS SELECT * FROM '{path}'")
    got = sorted(con.sql(sql).fetchall(), key=repr)
    want = sorted(duck.execute(sql).fetchall(), key=repr)
    assert got == want
