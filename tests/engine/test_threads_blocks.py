"""Identical results whatever the thread count and block size (issue 5):
every TPC-H query at SF0.01 with 1, 2 and 8 threads and blocks from 1k to
1M rows (scan morsels then fall inside row groups, pages, runs and
dictionaries), plain scans in file order, memory_limit as a clear error."""

from __future__ import annotations

import pytest

import engine
from engine.errors import MemoryLimitError
from tests.connections import pqdb_with_tpch
from tpch import answers
from tpch.queries import query_text

# (threads, block_rows, block_bytes): scan morsels of about block_bytes / row width rows
CONFIGS = [(1, 1_000_000, "1GiB"), (2, 1000, "64KiB"), (8, 4096, "256KiB")]


@pytest.fixture(scope="module")
def pqdb_configs(tpch_sf001):
    return {(t, b): pqdb_with_tpch(tpch_sf001, threads=t, block_rows=b, block_bytes=m)
            for t, b, m in CONFIGS}


@pytest.mark.parametrize("q", range(1, 23), ids=lambda q: f"q{q:02d}")
def test_tpch_same_result_for_threads_and_blocks(q, duckdb_tpch, pqdb_configs):
    sql = query_text(q)
    want = duckdb_tpch.execute(sql).fetchall()
    for (threads, block_rows), con in pqdb_configs.items():
        result = con.sql(sql)
        diff = answers.compare_rows(result.fetchall(), want, result.columns)
        assert diff is None, f"Q{q} threads={threads} block_rows={block_rows}: {diff}"


PLAIN_SCANS = [
    "SELECT l_orderkey, l_linenumber, l_comment FROM lineitem",
    "SELECT l_orderkey, l_shipmode, l_extendedprice FROM lineitem WHERE l_quantity < 10",
    "SELECT o_orderkey, o_comment FROM orders WHERE o_orderstatus = 'F' AND o_totalprice > 1000",
]


@pytest.mark.parametrize("sql", PLAIN_SCANS)
def test_plain_scan_keeps_file_order(sql, duckdb_tpch, tpch_sf001):
    want = duckdb_tpch.execute(sql).fetchall()     # DuckDB preserves insertion order
    for rep in range(3):                           # repeated: races show as reordering
        for threads, block_rows, block_bytes in [(8, 1000, "32KiB"), (2, 777, "100KiB"),
                                                 (1, 1 << 20, "1GiB")]:
            got = pqdb_with_tpch(tpch_sf001, threads=threads, block_rows=block_rows,
                                 block_bytes=block_bytes).sql(sql).fetchall()
            assert [tuple(r) for r in got] == [tuple(r) for r in want], (threads, block_rows)


@pytest.mark.parametrize("sql", PLAIN_SCANS)
def test_preserve_order_false_same_rows_any_order(sql, duckdb_tpch, tpch_sf001):
    want = duckdb_tpch.execute(sql).fetchall()
    unordered = pqdb_with_tpch(tpch_sf001, threads=2, block_rows=777, block_bytes="64KiB",
                               preserve_order=False).sql(sql).fetchall()
    assert sorted(map(tuple, unordered)) == sorted(map(tuple, want))
    ordered = pqdb_with_tpch(tpch_sf001, threads=2, block_rows=777, block_bytes="64KiB",
                             preserve_order=True).sql(sql).fetchall()
    assert [tuple(r) for r in ordered] == [tuple(r) for r in want]


def test_preserve_order_false_keeps_order_by(duckdb_tpch, tpch_sf001):
    con = pqdb_with_tpch(tpch_sf001, threads=2, block_rows=500, block_bytes="32KiB",
                         preserve_order=False)
    for sql in ["SELECT o_orderkey, o_totalprice FROM orders ORDER BY o_totalprice DESC, o_orderkey",
                "SELECT o_orderkey, o_totalprice * 2 AS t FROM orders "
                "ORDER BY o_orderdate, o_orderkey"]:
        got = [tuple(r) for r in con.sql(sql).fetchall()]
        assert got == [tuple(r) for r in duckdb_tpch.execute(sql).fetchall()], sql


def test_block_bytes_bounds_morsel_rows(tpch_sf001):
    con = pqdb_with_tpch(tpch_sf001, threads=2, block_bytes="64KiB")
    sql = "SELECT count(*), sum(l_quantity) FROM lineitem"
    assert con.sql(sql).fetchall() == pqdb_with_tpch(tpch_sf001, threads=1).sql(sql).fetchall()
    assert con.config.block_bytes == 64 << 10


def test_preserve_order_option_parses():
    con = engine.connect(preserve_order=False)
    assert con.config.preserve_order is False
    con.sql("SET preserve_order = true")
    assert con.config.preserve_order is True


def test_memory_limit_is_a_clear_error(tpch_sf001):
    con = pqdb_with_tpch(tpch_sf001, threads=2, memory_limit="64KiB")
    with pytest.raises(MemoryLimitError):
        con.sql("SELECT l_orderkey, l_comment FROM lineitem ORDER BY l_comment").fetchall()
    con.sql("SET memory_limit = '1GB'")
    assert con.sql("SELECT count(*) FROM lineitem").fetchone()[0] > 0


def test_peak_memory_probe_sees_an_allocation():
    import mmap
    import time

    import numpy as np

    from engine.memory_probe import PeakMemory, current_rss
    before = current_rss()
    with PeakMemory(interval=0.001) as peak:
        # fresh pages from the kernel (not free heap the process already holds)
        region = mmap.mmap(-1, 64 << 20)
        a = np.frombuffer(region, np.uint8)
        a[::4096] = 2                            # 64 MiB, touched
        inside = current_rss()                   # the resident set with the array
        time.sleep(0.05)                         # a sampler would run every millisecond
        del a
        region.close()
    # (other threads may free a little between `before` and the first sample)
    assert peak.bytes >= before - (1 << 20)
    # the peak is at least what was resident while the array lived (the
    # array itself shows there unless the kernel reclaimed pages meanwhile)
    assert peak.bytes >= inside - (1 << 20)
    if before and inside - before >= 32 << 20:
        assert peak.bytes - before >= 32 << 20
