"""Page index (ColumnIndex / OffsetIndex) and split-block bloom filters,
checked against pyarrow-written files, the corpus and the xxhash package."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.paths import CORPUS_BAD, CORPUS_DATA

from scan import open_parquet
from scan.bloom import parse_bloom_filter, xxh64
from scan.errors import FileFormatError

DATA = CORPUS_DATA
N = 6000


@pytest.fixture(scope="module")
def indexed_file(tmp_path_factory):
    rng = np.random.default_rng(7)
    t = pa.table({
        "i64": pa.array(np.arange(N, dtype=np.int64) * 7 - 1000),
        "i32": pa.array(rng.integers(-2**31, 2**31 - 1, N).astype(np.int32)),
        "f64": pa.array(rng.standard_normal(N)),
        "f32": pa.array(rng.standard_normal(N).astype(np.float32)),
        "s": pa.array([None if i % 11 == 0 else f"str-{i % 997}-{'x' * (i % 20)}" for i in range(N)]),
        "d": pa.array(np.arange(N, dtype=np.int32) % 400, pa.date32()),
        "ts": pa.array(np.arange(N, dtype=np.int64) * 1000, pa.timestamp("ms")),
        "dec": pa.array([None] * N, pa.decimal128(10, 2)),
        "fl": pa.array([bytes([i % 256, (i // 256) % 256, 1]) for i in range(N)], pa.binary(3)),
    })
    path = str(tmp_path_factory.mktemp("pi") / "indexed.parquet")
    pq.write_table(t, path, write_page_index=True, data_page_size=2048, row_group_size=2500,
                   bloom_filter_options={c: True for c in t.column_names})
    return path, t


def test_column_index_matches_pyarrow_pages(indexed_file):
    path, t = indexed_file
    pf = open_parquet(path)
    for rg in range(len(pf.row_groups)):
        for col in pf.columns:
            ci = pf.column_index(rg, col.index)
            oi = pf.offset_index(rg, col.index)
            assert ci is not None and oi is not None
            assert ci.num_pages == oi.num_pages >= 1
            assert oi.first_row_indexes[0] == 0
            assert oi.row_counts.sum() == pf.row_groups[rg].num_rows
            values = pf.read_column(rg, col.index).to_pylist()
            for p in range(oi.num_pages):
                lo = oi.first_row_indexes[p]
                page = values[lo:lo + oi.row_counts[p]]
                present = [v for v in page if v is not None]
                if ci.null_counts is not None:
                    assert ci.null_counts[p] == len(page) - len(present)
                assert bool(ci.null_pages[p]) == (not present)
                if present:
                    assert ci.min_values[p] == min(present), (col.name, p)
                    assert ci.max_values[p] == max(present), (col.name, p)


def test_offset_index_points_at_page_headers(indexed_file):
    from scan import thrift as T
    path, _ = indexed_file
    pf = open_parquet(path)
    raw = open(path, "rb").read()
    oi = pf.offset_index(0, 0)
    for off, size in zip(oi.offsets, oi.compressed_sizes):
        header, body = T.decode_struct(raw, T.PAGE_HEADER, int(off), int(off + size))
        assert header["type"] == 0
        assert body - off + header["compressed_page_size"] == size


def test_bloom_filter_has_every_present_value(indexed_file):
    path, _ = indexed_file
    pf = open_parquet(path)
    for rg in range(len(pf.row_groups)):
        for col in pf.columns:
            bf = pf.bloom_filter(rg, col.index)
            assert bf is not None
            values = [v for v in pf.read_column(rg, col.index).to_pylist() if v is not None]
            assert all(bf.might_contain(v) for v in values), col.name
            assert bf.might_contain_any(values[:5] + [b"nope"]) or not values


@pytest.mark.parametrize("column,absent", [
    ("i64", [v * 7 - 1000 + 3 for v in range(2000)]),                  # never multiples of 7 offset
    ("i32", list(range(5, 2005))),
    ("f64", [float(v) + 0.5 for v in range(2000)]),
    ("s", [f"absent-{i}".encode() for i in range(2000)]),
])
def test_bloom_filter_rejects_most_absent_values(indexed_file, column, absent):
    path, _ = indexed_file
    pf = open_parquet(path)
    bf = pf.bloom_filter(0, pf.column_index(column))
    present = set(pf.read_column(0, pf.column_index(column)).to_pylist())
    absent = [v for v in absent if v not in present]
    false_pos = sum(bf.might_contain(v) for v in absent)
    assert false_pos < 0.1 * len(absent)


def test_bloom_filter_value_conversions(indexed_file):
    path, _ = indexed_file
    pf = open_parquet(path)
    ts = pf.bloom_filter(0, pf.column_index("ts"))
    assert ts.might_contain(1000 * 1000)          # storage micros -> file millis
    assert not ts.might_contain(1000 * 1000 + 1)  # not representable in millis
    i64 = pf.bloom_filter(0, pf.column_index("i64"))
    assert i64.might_contain(-1000.0) and not i64.might_contain(-999.5)
    assert i64.might_contain(None)                # unknown -> conservative
    fl = pf.bloom_filter(0, pf.column_index("fl"))
    assert fl.might_contain(bytes([5, 0, 1])) and not fl.might_contain(b"toolong")
    f64 = pf.bloom_filter(0, pf.column_index("f64"))
    assert f64.might_contain(float("nan"))


def test_files_without_index_or_filter_return_none():
    pf = open_parquet(os.path.join(DATA, "alltypes_plain.parquet"))
    assert pf.column_index(0, 0) is None
    assert pf.offset_index(0, 0) is None
    assert pf.bloom_filter(0, 0) is None


@pytest.mark.parametrize("name", ["data_index_bloom_encoding_stats.parquet",
                                  "data_index_bloom_encoding_with_length.parquet"])
def test_corpus_bloom_filters(name):
    pf = open_parquet(os.path.join(DATA, name))
    bf = pf.bloom_filter(0, 0)
    assert bf is not None
    values = pf.read_column(0, 0).to_pylist()
    assert all(bf.might_contain(v) for v in values)
    assert not any(bf.might_contain(w) for w in (b"Hello!", b"absent", b"quick brown", b"zzz"))


INDEXED = ["alltypes_tiny_pages.parquet", "alltypes_tiny_pages_plain.parquet",
           "binary_truncated_min_max.parquet", "data_index_bloom_encoding_stats.parquet",
           "datapage_v1-snappy-compressed-checksum.parquet", "delta_encoding_required_column.parquet",
           "dict-page-offset-zero.parquet", "fixed_length_byte_array.parquet",
           "floating_orders_nan_count.parquet", "hadoop_lz4_compressed_larger.parquet",
           "int32_with_null_pages.parquet", "plain-dict-uncompressed-checksum.parquet",
           "int96_from_spark.parquet", "datapage_v2_empty_datapage.snappy.parquet"]


# written by parquet-mr with statistics off: every page of a required column
# claims to be a null page; the reader reports no column index
UNBELIEVABLE_INDEX = {"datapage_v1-snappy-compressed-checksum.parquet", "int96_from_spark.parquet"}


@pytest.mark.parametrize("name", INDEXED)
def test_corpus_page_indexes_bound_their_pages(name):
    """Per page: min <= every value <= max (truncated binary bounds too),
    exact for integers; null pages hold only nulls; row counts add up."""
    import math
    pf = open_parquet(os.path.join(DATA, name))
    checked = 0
    for rg in range(len(pf.row_groups)):
        for col in pf.columns:
            ci, oi = pf.column_index(rg, col.index), pf.offset_index(rg, col.index)
            if oi is not None:
                assert oi.row_counts.sum() == pf.row_groups[rg].num_rows
            if ci is None or oi is None or col.unsupported_reason:
                continue
            assert ci.num_pages == oi.num_pages
            values = pf.read_column(rg, col.index).to_pylist()
            for p in range(oi.num_pages):
                lo = oi.first_row_indexes[p]
                page = values[lo:lo + oi.row_counts[p]]
                present = [v for v in page if v is not None and not
                           (isinstance(v, float) and math.isnan(v))]
                checked += 1
                if ci.null_pages[p]:
                    assert all(v is None for v in page)
                    continue
                if not present or ci.min_values[p] is None:
                    continue
                assert ci.min_values[p] <= min(present) and ci.max_values[p] >= max(present)
                if col.type_name.startswith("int"):
                    assert ci.min_values[p] == min(present) and ci.max_values[p] == max(present)
    assert checked or name in UNBELIEVABLE_INDEX


def test_standalone_xxhash_bloom_file():
    class Col:
        physical_type, type_name, type_length = "BYTE_ARRAY", "string", 0
        time_unit, logical_type, name = None, "STRING", "x"
    raw = np.fromfile(os.path.join(DATA, "bloom_filter.xxhash.bin"), np.uint8)
    bf = parse_bloom_filter(raw, Col)
    assert all(bf.might_contain(w) for w in (b"hello", b"parquet", b"bloom", b"filter"))
    assert not any(bf.might_contain(w) for w in (b"world", b"pqdb", b"Hello", b"blooms"))


def test_legacy_bloom_file_is_refused():
    raw = np.fromfile(os.path.join(DATA, "bloom_filter.bin"), np.uint8)
    with pytest.raises(FileFormatError):
        parse_bloom_filter(raw, None)


def test_xxh64_matches_reference():
    xxhash = pytest.importorskip("xxhash")
    rng = np.random.default_rng(3)
    for n in list(range(0, 70)) + [100, 255, 1000, 4097]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert xxh64(data) == xxhash.xxh64_intdigest(data), n


def test_corrupt_page_index_is_refused(indexed_file, tmp_path):
    path, _ = indexed_file
    pf = open_parquet(path)
    chunk = pf.row_groups[0].columns[0]
    raw = bytearray(open(path, "rb").read())
    for k in range(chunk.offset_index_length):
        raw[chunk.offset_index_offset + k] = 0xFF
    for k in range(chunk.column_index_length):
        raw[chunk.column_index_offset + k] ^= 0x5A
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(raw))
    pf = open_parquet(str(bad))
    for fn in (pf.offset_index, pf.column_index):
        try:
            fn(0, 0)
        except FileFormatError as e:
            assert "index" in str(e) and "row group 0" in str(e)
