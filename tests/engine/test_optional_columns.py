"""SQL over optional (nullable) columns that the one-kernel chunk path
decodes (v1 pages, definition levels read in the kernel), against DuckDB:
whole row groups and row ranges, filters, dictionary strings with NULLs,
columns of NULLs only."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.connections import pqdb_with_views
from tests.engine.test_executor_helpers import assert_rows_equal, duck


@pytest.fixture(scope="module")
def nullable_file(tmp_path_factory):
    n = 120_000
    rng = np.random.default_rng(9)
    mask = lambda p: rng.random(n) < p          # noqa: E731
    t = pa.table({
        "k": pa.array(rng.integers(0, 50, n), pa.int64(), mask=mask(0.03)),
        "v": pa.array(rng.integers(-10 ** 6, 10 ** 6, n), pa.int64(), mask=mask(0.2)),
        "f": pa.array(rng.random(n), pa.float64(), mask=mask(0.01)),
        "d": pa.array(rng.integers(0, 3000, n).astype(np.int32), pa.int32(),
                      mask=mask(0.05)).cast(pa.date32()),
        "s": pa.array([f"name-{x % 400}" for x in range(n)], pa.string(), mask=mask(0.1)),
        "none_s": pa.nulls(n, pa.string()),
        "dense": pa.array(rng.integers(0, 9, n), pa.int32()),     # optional, no NULL
    })
    path = str(tmp_path_factory.mktemp("optional") / "t.parquet")
    pq.write_table(t, path, row_group_size=60_000, data_page_size=16 << 10)
    return path


QUERIES = [
    "SELECT k, count(*), count(v), sum(v), min(d), max(s), count(none_s) FROM t GROUP BY k",
    "SELECT s, count(*), sum(dense) FROM t WHERE s LIKE 'name-1%' GROUP BY s",
    "SELECT count(*), sum(v) FROM t WHERE v > 0 AND d < DATE '1975-01-01'",
    "SELECT k, v, s FROM t WHERE k = 7 AND s IS NOT NULL ORDER BY v, s LIMIT 50",
    "SELECT count(*) FROM t WHERE s IS NULL OR none_s IS NOT NULL",
    "SELECT sum(f), avg(v), count(DISTINCT s) FROM t",
]


@pytest.mark.parametrize("threads,block_rows", [(1, 65536), (2, 1000), (8, 7777)])
@pytest.mark.parametrize("sql", QUERIES)
def test_optional_columns_match_duckdb(nullable_file, sql, threads, block_rows):
    con = pqdb_with_views({"t": nullable_file}, threads=threads, block_rows=block_rows)
    want = duck(sql, t=nullable_file)
    assert_rows_equal(con.sql(sql).fetchall(), want, ordered="ORDER BY" in sql)
