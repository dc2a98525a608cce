"""Logical types beyond the basics: FLOAT16 (widened to float32), UUID and
INTERVAL (raw bytes), TIME in nanoseconds, unknown logical types."""

from __future__ import annotations

import os
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scan import open_parquet
from scan import thrift as T
from scan.metadata import column_info
from tests.scan.oracle import compare_file

DATA = "/work/shared/parquet-testing/data"


def test_float16_roundtrip(tmp_path):
    vals = np.array([0.0, -0.0, 1.5, -2.25, 65504.0, np.inf, -np.inf, np.nan, 6e-8, None],
                    dtype=object)
    arr = pa.array([None if v is None else np.float16(v) for v in vals], pa.float16())
    path = str(tmp_path / "f16.parquet")
    pq.write_table(pa.table({"h": arr, "b": arr}), path,
                   column_encoding={"b": "BYTE_STREAM_SPLIT"}, use_dictionary=False)
    pf = open_parquet(path)
    assert [c.type_name for c in pf.columns] == ["float32", "float32"]
    for c in pf.columns:
        cd = pf.read_column(0, c.index)
        assert cd.values.dtype == np.float32
    assert compare_file(path) == ["b", "h"]
    chunk = pf.row_groups[0].columns[0]
    assert (chunk.stats_min, chunk.stats_max) in ((-np.inf, np.inf), (None, None))


def test_uuid_is_sixteen_raw_bytes(tmp_path):
    ids = [uuid.UUID(int=i * 0x1234567890ABCDEF) for i in range(20)]
    arr = pa.array([u.bytes for u in ids], pa.binary(16)).cast(pa.uuid())
    path = str(tmp_path / "uuid.parquet")
    pq.write_table(pa.table({"u": arr}), path)
    pf = open_parquet(path)
    assert pf.columns[0].logical_type == "UUID" and pf.columns[0].type_name == "uuid"
    # storage: DuckDB's hugeint form, the bytes big endian less 2**127
    assert pf.read_column(0, 0).to_pylist() == [u.int - 2**127 for u in ids]


def test_time_nanos_stay_nanos(tmp_path):
    # DuckDB reads TIME(NANOS) as TIME_NS (nanoseconds kept)
    ns = np.array([0, 1_999, 86_399_999_999_999, 12_345_678_912], np.int64)
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"t": pa.array(ns, pa.time64("ns"))}), path)
    pf = open_parquet(path)
    assert pf.columns[0].type_name == "time_ns" and pf.columns[0].time_unit == "NANOS"
    assert pf.read_column(0, 0).to_pylist() == ns.tolist()


def _leaf(**el):
    return column_info(dict(name="x", **el), 0, ("x",), 1, 0, False, "mem")


def test_interval_is_fixed_len_twelve():
    col = _leaf(type=7, type_length=12, converted_type=T.CONVERTED_TYPES.index("INTERVAL"))
    assert col.type_name == "interval"
    col = _leaf(type=7, type_length=12, logicalType={"INTERVAL": {}})
    assert col.type_name == "interval"
    col = _leaf(type=7, type_length=8, logicalType={"INTERVAL": {}})
    assert col.type_name.startswith("unsupported:INTERVAL")


def test_float16_schema_checks_length():
    assert _leaf(type=7, type_length=2, logicalType={"FLOAT16": {}}).type_name == "float32"
    assert _leaf(type=7, type_length=4, logicalType={"FLOAT16": {}}).type_name.startswith(
        "unsupported:FLOAT16")


def test_unknown_logical_type_falls_back_to_physical():
    pf = open_parquet(os.path.join(DATA, "unknown-logical-type.parquet"))
    names = {c.name: c.type_name for c in pf.columns}
    assert all(not t.startswith("unsupported") for t in names.values()), names
    assert compare_file(os.path.join(DATA, "unknown-logical-type.parquet"))
    # a logical type id this reader does not know: thrift skips it -> physical
    assert _leaf(type=1, logicalType={}).type_name == "int32"
