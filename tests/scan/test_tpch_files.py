"""TPC-H files written by tpchgen-cli (SF 0.01, tests/conftest.py's
tpch_sf001): every column of every row group equals pyarrow's reading."""

from __future__ import annotations

import os

import numpy as np
import pyarrow.parquet as pq
import pytest

from scan import BufferManager, open_parquet
from tests.scan.oracle import compare_file, expected_storage

TABLES = ["lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region"]


@pytest.mark.parametrize("table", TABLES)
def test_tpch_table_matches_pyarrow(tpch_sf001, table):
    path = os.path.join(tpch_sf001, f"{table}.parquet")
    compared = compare_file(path)
    assert len(compared) == len(pq.ParquetFile(path).schema_arrow)


def test_lineitem_types_and_storage(tpch_sf001):
    pf = open_parquet(os.path.join(tpch_sf001, "lineitem.parquet"))
    types = {c.name: c.type_name for c in pf.columns}
    assert types["l_orderkey"] == "int64"
    assert types["l_quantity"].startswith("decimal(15,2)")
    assert types["l_shipdate"] == "date"
    assert types["l_comment"] == "string"
    i = pf.column_index("l_extendedprice")
    cd = pf.read_column(0, i)
    assert cd.values.dtype == np.int64 and cd.nulls is None
    exp = expected_storage(pq.ParquetFile(pf.path).read_row_group(0, columns=["l_extendedprice"])
                           .column(0), pf.columns[i])
    assert cd.values.tolist() == exp
    s = pf.read_column(0, pf.column_index("l_comment"))
    assert s.values.dtype == np.uint64 and s.values.shape == (s.num_rows, 2)
    assert s.heap is not None and s.heap.dtype == np.uint8


def test_statistics_match_pyarrow(tpch_sf001):
    path = os.path.join(tpch_sf001, "orders.parquet")
    pf = open_parquet(path)
    meta = pq.ParquetFile(path).metadata
    for rg in range(meta.num_row_groups):
        for col in pf.columns:
            ours = pf.row_groups[rg].columns[col.index]
            st = meta.row_group(rg).column(col.index).statistics
            if st is None or not st.has_min_max:
                continue
            assert ours.null_count == st.null_count
            if col.type_name in ("int32", "int64", "date"):
                lo, hi = st.min, st.max
                if col.type_name == "date":
                    lo, hi = (v.toordinal() - 719163 for v in (lo, hi))
                assert (ours.stats_min, ours.stats_max) == (lo, hi)
            elif col.type_name == "string":
                assert ours.stats_min == st.min.encode() and ours.stats_max == st.max.encode()


def test_buffer_manager_caches_chunks(tpch_sf001):
    bm = BufferManager(1 << 28)
    pf = open_parquet(os.path.join(tpch_sf001, "orders.parquet"), buffer_manager=bm)
    pf.read_column(0, 0)
    reads = bm.reads
    a = pf.read_column(0, 0)
    assert bm.reads == reads and bm.hits > 0
    small = BufferManager(1024)                  # too small to keep a chunk: re-reads
    pf2 = open_parquet(os.path.join(tpch_sf001, "orders.parquet"), buffer_manager=small)
    b = pf2.read_column(0, 0)
    assert np.array_equal(a.values, b.values) and small.bytes_cached <= 1024
