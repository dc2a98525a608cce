"""The data pipeline: every writer at SF 0.01 from the same tpchgen-cli rows;
the written tables hold the same rows (DuckDB as the oracle) and pqdb reads
them; row-group size, file count and sort order are honoured."""

from __future__ import annotations

import glob
import os

import duckdb
import pytest

from tests.connections import pqdb_with_tpch
from tests.tpch.spark_support import require_spark
from tpch.layout import table_layout
from tpch.pipeline import generate_with_writer
from tpch.queries import TABLES, table_path

SF = 0.01
COUNTS = {"customer": 1500, "lineitem": 60175, "nation": 25, "orders": 15000,
          "part": 2000, "partsupp": 8000, "region": 5, "supplier": 100}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("pipeline")


def _source(work):
    return str(work / "source")


def _checksum(path: str, table: str) -> tuple:
    """Row count plus an order-independent fingerprint of all values."""
    con = duckdb.connect()
    return con.execute(f"SELECT count(*), sum(hash(t)) FROM read_parquet('{path}') t").fetchone()


def _check_tables(out: str, reference: str):
    for table in TABLES:
        got = _checksum(table_path(out, table), table)
        assert got[0] == COUNTS[table], table
        assert got == _checksum(table_path(reference, table), table), table


def _pqdb_counts(out: str):
    con = pqdb_with_tpch(out, threads=2)
    for table in ("lineitem", "orders", "nation"):
        assert con.sql(f"SELECT count(*) FROM {table}").fetchone()[0] == COUNTS[table]
    return con


@pytest.mark.parametrize("writer", ["tpchgen", "arrow", "duckdb"])
def test_local_writers_same_rows(work, tpch_sf001, writer):
    out = str(work / writer)
    generate_with_writer(SF, out, writer, source=_source(work))
    _check_tables(out, tpch_sf001)
    _pqdb_counts(out)
    layout = table_layout(out, "lineitem")
    if writer == "arrow":
        assert layout.row_groups == 1          # the paper's Arrow case
        assert layout.column_index == "none"
    assert layout.writers and {"tpchgen": "parquet-rs", "arrow": "parquet-cpp-arrow",
                               "duckdb": "DuckDB"}[writer] in layout.writers[0]


@pytest.mark.parametrize("writer", ["arrow", "duckdb"])
def test_row_groups_and_files(work, tpch_sf001, writer):
    out = str(work / f"{writer}-shaped")
    generate_with_writer(SF, out, writer, row_group_rows=5000, files=3, source=_source(work))
    _check_tables(out, tpch_sf001)
    files = sorted(glob.glob(os.path.join(out, "lineitem", "*.parquet")))
    assert len(files) == 3
    layout = table_layout(out, "lineitem")
    assert layout.files == 3
    slack = 2048 if writer == "duckdb" else 0     # DuckDB flushes at 2,048-row vectors
    assert max(layout.rows_per_row_group) <= 5000 + slack
    assert layout.row_groups >= 60175 // 5000


def test_tpchgen_row_group_rows_is_approximate(work, tpch_sf001):
    out = str(work / "tpchgen-shaped")
    generate_with_writer(SF, out, "tpchgen", row_group_rows=10000, files=2, source=_source(work))
    _check_tables(out, tpch_sf001)
    layout = table_layout(out, "lineitem")
    assert layout.files == 2
    assert 3 <= layout.row_groups <= 24       # about 6 groups of ~10,000 rows


def test_unknown_writer_and_bad_options(work):
    with pytest.raises(ValueError, match="unknown writer"):
        generate_with_writer(SF, str(work / "x"), "parquet-go")
    with pytest.raises(ValueError, match="files"):
        generate_with_writer(SF, str(work / "x"), "arrow", files=0)


@pytest.mark.slow
def test_spark_writers(work, tpch_sf001):
    """Spark (local) writes the three Spark layouts; rows equal, snappy vs
    none, the sorted case sorted, row-group rows honoured."""
    require_spark()
    outs = {}
    for writer in ("spark", "spark-uncompressed", "spark-sorted"):
        out = str(work / writer)
        generate_with_writer(SF, out, writer, source=_source(work))
        _check_tables(out, tpch_sf001)
        outs[writer] = out
        assert not glob.glob(os.path.join(out, "lineitem", "_SUCCESS"))
    con = _pqdb_counts(outs["spark-sorted"])
    dates = con.sql("SELECT l_shipdate FROM lineitem").column(0)
    assert dates == sorted(dates)
    layout = {w: table_layout(o, "lineitem") for w, o in outs.items()}
    assert layout["spark"].compression == ["snappy"]
    assert layout["spark-uncompressed"].compression == ["uncompressed"]
    assert layout["spark"].writers[0].startswith("parquet-mr")
    assert layout["spark"].column_index == "all"
    out = str(work / "spark-shaped")
    generate_with_writer(SF, out, "spark", row_group_rows=8000, files=2, source=_source(work))
    _check_tables(out, tpch_sf001)
    shaped = table_layout(out, "lineitem")
    assert shaped.files == 2 and max(shaped.rows_per_row_group) <= 8000
