"""The Parquet conformance corpus (parquet-testing/data): every flat column of
every file is read exactly as pyarrow reads it, or refused with an
UnsupportedFeatureError naming the feature, as listed below."""

from __future__ import annotations

import glob
import os

import pytest

from tests.paths import CORPUS_DATA

from scan import open_parquet
from scan.errors import FileFormatError, PqdbError, UnsupportedFeatureError
from tests.scan.oracle import compare_file, compare_nested_field

DATA = CORPUS_DATA
# every .parquet file under data/, subdirectories included (geospatial/);
# the encrypted files (*.parquet.encrypted, aes256/): tests/scan/test_encryption.py
FILES = sorted(os.path.relpath(p, DATA) for p in glob.glob(os.path.join(DATA, "**", "*.parquet"),
                                                            recursive=True))

# file -> {column (or "*" = every column): reason the reader must give}
EXPECTED_UNSUPPORTED: dict = {}

# nested fields pyarrow cannot read: checked by their own tests (below, and
# large_string_map's literal rows in tests/engine/test_nested_sql.py)
NOT_BY_PYARROW = {"incorrect_map_schema.parquet", "large_string_map.brotli.parquet"}

# pages whose CRC32 is wrong on purpose: refused when verifying, else read
CORRUPT_CHECKSUM = {"datapage_v1-corrupt-checksum.parquet",
                    "rle-dict-uncompressed-corrupt-checksum.parquet"}


# INT96 values outside the int64-nanosecond range (years < 1677 or > 2262):
# pyarrow's default nanoseconds wrap, so these files are compared with
# pyarrow's microseconds, which pqdb reads (as DuckDB, a TIMESTAMP:
# scan/encodings/plain.int96_to_micros): 9999-12-31 comes back as such.
OUT_OF_RANGE_INT96 = {"int96_from_spark.parquet"}


def _refused_columns(pf, expected: dict) -> dict:
    if "*" in expected:
        return {c.name: expected["*"] for c in pf.columns}
    return expected


@pytest.mark.parametrize("name", FILES)
def test_corpus_file(name):
    path = os.path.join(DATA, name)
    verify = name not in CORRUPT_CHECKSUM
    expected = EXPECTED_UNSUPPORTED.get(name, {})
    pf = open_parquet(path, verify_checksums=verify)
    refused = _refused_columns(pf, expected)
    for col_name, reason in refused.items():
        col = pf.columns[pf.column_index(col_name)]
        for rg in range(len(pf.row_groups)):
            with pytest.raises(UnsupportedFeatureError, match=reason):
                pf.read_column(rg, col.index)
    if name in OUT_OF_RANGE_INT96:
        refused = dict(refused, **_compare_int96_in_range(path, pf))
    nested = {c.name: "nested" for c in pf.columns if c.nested}
    compared = compare_file(path, verify_checksums=verify, skip=dict(refused, **nested))
    flat = [c.name for c in pf.columns if c.name not in refused and c.name not in nested]
    refused = {k: v for k, v in refused.items() if v != "int96"}
    if pf.row_groups:
        assert compared == sorted(flat)
    fields = sorted({c.path[0] for c in pf.columns if c.nested})
    if name not in NOT_BY_PYARROW:
        for field in fields:
            for rg in range(len(pf.row_groups)):
                compare_nested_field(path, pf, rg, field)
    print(f"{name}: compared {len(compared)} flat columns, {len(fields)} nested fields, "
          f"refused {len(refused)}")


def _compare_int96_in_range(path, pf) -> dict:
    import pyarrow.parquet as pq
    done = {}
    for col in pf.columns:
        if col.physical_type != "INT96":
            continue
        micros = pq.read_table(path, columns=[col.name],
                               coerce_int96_timestamp_unit="us").column(0).cast("int64").to_pylist()
        ours = [v for rg in range(len(pf.row_groups))
                for v in pf.read_column(rg, col.index).to_pylist()]
        # a value whose microseconds overflow int64 (a julian day past any
        # writer's) wraps, and differently in Arrow: compared where it fits
        checked = 0
        for got, us in zip(ours, micros):
            if us is None:
                assert got is None
            elif abs(us) < 1 << 62:
                assert got == us
                checked += 1
        assert checked >= 4
        done[col.name] = "int96"
    return done


@pytest.mark.parametrize("name", sorted(CORRUPT_CHECKSUM))
def test_corrupt_checksums_are_detected(name):
    pf = open_parquet(os.path.join(DATA, name), verify_checksums=True)
    errors = []
    for rg in range(len(pf.row_groups)):
        for col in pf.columns:
            try:
                pf.read_column(rg, col.index)
            except FileFormatError as e:
                assert "checksum" in str(e) and name in str(e) and "page" in str(e)
                errors.append(col.name)
    assert errors


def test_expectation_table_names_real_files():
    for name in EXPECTED_UNSUPPORTED:
        assert name in FILES, name


def test_only_flat_columns_are_refused_as_nested():
    pf = open_parquet(os.path.join(DATA, "nested_maps.snappy.parquet"))
    flat = [c for c in pf.columns if not c.nested]
    assert flat and all(pf.read_column(0, c.index).num_rows == pf.num_rows for c in flat)
    nested = [c for c in pf.columns if c.nested]
    with pytest.raises(PqdbError, match="nested column"):
        pf.read_column(0, nested[0].index)


def test_map_with_optional_key_is_read_as_the_spec_says():
    """pyarrow refuses it ("Map keys must be annotated as required"); DuckDB
    and the spec read it as a map."""
    pf = open_parquet(os.path.join(DATA, "incorrect_map_schema.parquet"))
    m = pf.read_nested(0, "my_map")
    assert m.to_pylist() == [[(b"parent", b"another"), (b"name", b"report")]]
    assert m.to_pylist(as_dict=True) == [{b"parent": b"another", b"name": b"report"}]
