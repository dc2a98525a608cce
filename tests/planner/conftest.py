"""A fake Catalog over small Parquet files (schemas via pyarrow) for planner
tests, and TPC-H SF0.01 generated once per session."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from planner.catalog import TableInfo
from planner.errors import BinderError
from planner.frontend import parse_query
from planner.types import from_scan_type_name
from scan.errors import PqdbIOError

TPCH_TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]


def scan_type_name(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "blob"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t):
        return f"timestamp{'tz' if t.tz else ''}_{t.unit}"
    if pa.types.is_boolean(t):
        return "boolean"
    names = {pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32", pa.int64(): "int64",
             pa.uint8(): "uint8", pa.uint16(): "uint16", pa.uint32(): "uint32",
             pa.uint64(): "uint64", pa.float32(): "float32", pa.float64(): "float64"}
    return names[t]


class FakeCatalog:
    """Catalog protocol over local files; views are SQL texts."""

    def __init__(self, views: dict[str, str] | None = None):
        self.views = {k.lower(): v for k, v in (views or {}).items()}
        self.specs: list[str] = []

    def lookup_view(self, name: str):
        text = self.views.get(name.lower())
        return None if text is None else parse_query(text)

    def table_info(self, spec: str) -> TableInfo:
        self.specs.append(spec)
        files = sorted(glob.glob(spec)) if any(c in spec for c in "*?[") else (
            [spec] if os.path.exists(spec) else [])
        if not files:
            raise PqdbIOError("no files match", url=spec)
        schema = pq.read_schema(files[0])
        columns = [(f.name, from_scan_type_name(scan_type_name(f.type))) for f in schema]
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        return TableInfo(files, columns, rows)


@pytest.fixture(scope="session")
def tpch_dir(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("planner_tpch"))
    exe = os.path.join(os.path.dirname(sys.executable), "tpchgen-cli")
    subprocess.run([exe, "parquet", "-s", "0.01", "--output-dir", out], check=True,
                   stdout=subprocess.DEVNULL)
    return out


@pytest.fixture(scope="session")
def tpch_catalog(tpch_dir) -> FakeCatalog:
    return FakeCatalog({t: f"SELECT * FROM '{tpch_dir}/{t}.parquet'" for t in TPCH_TABLES})


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
