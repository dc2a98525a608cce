"""Planner fixtures: the fake catalog (tests/planner/helpers.py) over TPC-H
SF0.01 (tests/conftest.py's tpch_sf001) and over two small tables."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.connections import tpch_tables

from .helpers import FakeCatalog


@pytest.fixture(scope="session")
def tpch_catalog(tpch_sf001) -> FakeCatalog:
    tables = tpch_tables(tpch_sf001)
    return FakeCatalog({t: f"SELECT * FROM '{path}'" for t, path in tables.items()})


@pytest.fixture()
def small_dir(tmp_path) -> str:
    """Two small tables t(a, b, s, d) and u(a, c) as Parquet files."""
    import datetime as dt
    from decimal import Decimal
    t = pa.table({"a": pa.array([1, 2, 3], pa.int32()), "b": pa.array([10, 20, 30], pa.int64()),
                  "s": ["x", "y", "z"],
                  "d": pa.array([dt.date(2020, 1, i) for i in (1, 2, 3)], pa.date32()),
                  "p": pa.array([Decimal("1.50"), Decimal("2.25"), None], pa.decimal128(12, 2))})
    u = pa.table({"a": pa.array([1, 2], pa.int32()), "c": pa.array([1.5, 2.5], pa.float64())})
    pq.write_table(t, tmp_path / "t.parquet")
    pq.write_table(u, tmp_path / "u.parquet")
    pq.write_table(u, tmp_path / "u2.parquet")
    return str(tmp_path)
