"""Runs of equal group keys are inserted once (engine/operators/aggregate.py
_insert_runs): input clustered on its keys (lineitem by l_orderkey) looks
up and inserts only the first row of each run.  Results against DuckDB on
clustered keys of every kind, with NULL runs, runs across blocks and
morsels, DISTINCT aggregates, and the row-by-row path for unclustered
blocks."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.kernels.aggregates import run_heads
from engine.operators import aggregate, group_sizing
from tests.connections import pqdb_with_views
from tests.engine.test_executor_helpers import assert_rows_equal, duck


def test_run_heads_marks_each_change():
    keys = np.array([[1, 0], [1, 0], [2, 0], [2, 1], [2, 1], [1, 0]], np.uint64)
    heads = np.empty(len(keys), np.int64)
    count = run_heads(keys, heads)
    assert heads[:count].tolist() == [0, 2, 3, 5]
    assert run_heads(np.empty((0, 2), np.uint64), heads) == 0


@pytest.fixture(scope="module")
def clustered(tmp_path_factory):
    n = 90_000
    rng = np.random.default_rng(12)
    k = np.repeat(np.arange(n // 3), 3)[:n]                  # runs of 3, sorted
    k_null = (k % 101) == 0                                  # whole runs NULL
    s = [None if x % 53 == 0 else f"a-long-string-key-in-the-heap-{x % 9000}" for x in k]
    t = pa.table({
        "k": pa.array(k, mask=k_null, type=pa.int64()),
        "s": pa.array(s, pa.string()),
        "d": pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in k // 7], pa.decimal128(12, 2)),
        "v": pa.array(rng.integers(-100, 100, n), mask=rng.random(n) < 0.05, type=pa.int32()),
        "f": pa.array(rng.normal(size=n)),
        "r": pa.array(rng.integers(0, 5000, n)),               # not clustered
    })
    path = str(tmp_path_factory.mktemp("runs") / "c.parquet")
    pq.write_table(t, path, row_group_size=20_000)
    return path


SQL = [
    "SELECT k, count(*), sum(v), avg(f), min(s), max(d) FROM t GROUP BY k",
    "SELECT k, s, count(*), sum(d) FROM t GROUP BY k, s",
    "SELECT s, count(*), count(DISTINCT v), sum(v) FROM t GROUP BY s",
    "SELECT d, k % 5 AS m, count(*), min(v) FROM t GROUP BY ALL",
    "SELECT k, sum(v) FROM t GROUP BY k HAVING sum(v) > 50",
    "SELECT r, count(*), sum(v) FROM t GROUP BY r",            # row by row
    "SELECT DISTINCT k, s FROM t",
]


@pytest.mark.parametrize("threads,block_rows", [(1, 1000), (2, 4096), (8, 1000)])
@pytest.mark.parametrize("sql", SQL)
def test_clustered_keys_match_duckdb(clustered, sql, threads, block_rows, monkeypatch):
    inserted = []
    original = aggregate._insert_runs

    def spy(local, keys):
        out = original(local, keys)
        inserted.append(keys.n)
        return out
    monkeypatch.setattr(aggregate, "_insert_runs", spy)
    con = pqdb_with_views({"t": clustered}, threads=threads, block_rows=block_rows)
    assert_rows_equal(con.sql(sql).fetchall(), duck(sql, t=clustered), ordered=False)
    assert inserted


def test_runs_cut_the_hash_table_work(clustered, monkeypatch):
    """Runs of 3: about a third of the rows reach the table."""
    from engine.kernels.hashtable import GroupTable
    rows = []
    original = GroupTable.insert

    def counting(self, keys, hashes=None):
        rows.append(keys.n)
        return original(self, keys, hashes)
    monkeypatch.setattr(GroupTable, "insert", counting)
    con = pqdb_with_views({"t": clustered}, threads=1, block_rows=4096)
    con.sql("SELECT k, sum(v) FROM t GROUP BY k").fetchall()
    assert 0.30 * 90_000 <= sum(rows) <= 0.36 * 90_000, sum(rows)
    rows.clear()
    monkeypatch.setattr(aggregate, "RUN_SHARE", 0.0)         # never: row by row
    con.sql("SELECT k, sum(v) FROM t GROUP BY k").fetchall()
    assert sum(rows) == 90_000


def test_presize_groups_takes_a_thread_share_within_the_memory_limit():
    class Tracker:
        limit = 2 << 30

    class Query:
        parent = Tracker()
    assert group_sizing.presize_groups(1_500_000, 2, Query()) == 750_000
    assert group_sizing.presize_groups(1_500_000, 2, None) == 750_000
    assert group_sizing.presize_groups(20_000, 2, Query()) == 0           # small: grows as before
    Tracker.limit = 100 << 20                                           # 750k groups > 1/32 of it
    assert group_sizing.presize_groups(1_500_000, 2, Query()) == 0


def _reserved_on_second_run(path, sql, threads, monkeypatch) -> list:
    """Run ``sql`` twice (the first collects statistics), both against
    DuckDB; the group counts GroupTable.reserve got in the second run."""
    from engine.kernels.hashtable import GroupTable
    sizes = []
    original = GroupTable.reserve

    def spy(self, groups, heap_bytes=0):
        sizes.append(groups)
        return original(self, groups, heap_bytes)
    con = pqdb_with_views({"t": path}, threads=threads)
    want = duck(sql, t=path)
    assert_rows_equal(con.sql(sql).fetchall(), want, ordered=False)
    monkeypatch.setattr(GroupTable, "reserve", spy)
    assert_rows_equal(con.sql(sql).fetchall(), want, ordered=False)
    return sizes


def test_tables_start_at_the_estimated_groups(clustered, monkeypatch):
    """The second run knows the GROUP BY's 30k groups (statistics): each
    thread's table is reserved at its share once, and the rows match."""
    sizes = _reserved_on_second_run(clustered, "SELECT k, count(*), sum(v) FROM t GROUP BY k",
                                    1, monkeypatch)
    assert sizes and 25_000 <= sizes[0] <= 35_000, sizes


@pytest.mark.parametrize("threads", [1, 2])
def test_distinct_tables_start_at_the_estimated_input(clustered, monkeypatch, threads):
    """A DISTINCT's (group, value) table is reserved at its thread's share
    of the input's estimated 90k rows once the statistics know them, and
    the counts match DuckDB's."""
    sql = "SELECT r % 7 AS g, count(DISTINCT k), count(DISTINCT s), sum(v) FROM t GROUP BY g"
    sizes = _reserved_on_second_run(clustered, sql, threads, monkeypatch)
    share = 90_000 // threads
    assert sizes.count(share) >= 2 * threads, sizes       # both DISTINCT tables of every thread
