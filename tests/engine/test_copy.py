"""COPY ... TO: every type, NULL pattern, compression and page version
written by pqdb reads back identically in DuckDB, pyarrow and pqdb (the
source is a file DuckDB wrote); options, errors, atomicity, order."""

from __future__ import annotations

import os

import duckdb
import pyarrow.parquet as pq
import pytest

import engine
from engine.errors import PqdbError, ProgrammingError, UnsupportedFeatureError

# every type DuckDB and pqdb share; ``n``: NULL on every third row, ``a``: all NULL
COLUMNS = {
    "b": "i % 2 = 0", "i8": "(i % 256 - 128)::TINYINT", "i16": "(i * 97 % 65536 - 32768)::SMALLINT",
    "i32": "(i * 7919)::INTEGER * (CASE WHEN i % 2 = 0 THEN -1 ELSE 1 END)",
    "i64": "CASE WHEN i = 1 THEN -9223372036854775808 WHEN i = 2 THEN 9223372036854775807 "
           "ELSE i * 1000003 END::BIGINT",
    "u8": "(i % 256)::UTINYINT", "u16": "(i * 331 % 65536)::USMALLINT",
    "u32": "(4294967295 - i * 12345)::UINTEGER", "u64": "(18446744073709551615 - i * 3)::UBIGINT",
    "f": "(i / 7)::FLOAT - 3", "d": "CASE WHEN i = 5 THEN -0.0 ELSE i * 1.5e300 / 300 END::DOUBLE",
    "dec1": "(i % 10)::DECIMAL(1,0)", "dec4": "(i / 10 - 3)::DECIMAL(4,1)",
    "dec9": "(i * 12345.67 - 99999)::DECIMAL(9,2)",
    "dec18": "(i * 1234567890.123 - 5e10)::DECIMAL(18,3)",
    "dec38": "('1234567890123456789012345678.' || lpad(i::VARCHAR, 10, '0'))::DECIMAL(38,10) "
             "* (CASE WHEN i % 2 = 0 THEN -1 ELSE 1 END)",
    "dt": "DATE '1970-01-01' + (i * 97 - 15000)::INTEGER",
    "dt_edge": "CASE i % 3 WHEN 0 THEN DATE '0001-01-01' WHEN 1 THEN DATE '9999-12-31' "
               "ELSE DATE '2000-02-29' END",
    "t": "TIME '00:00:00' + INTERVAL (i * 287) SECOND", "ttz": "'12:34:56+00'::TIMETZ",
    "tns": "'01:02:03.123456789'::TIME_NS",
    "ts": "TIMESTAMP '1999-12-31 23:59:59' + INTERVAL (i * 3601) SECOND",
    "tstz": "(TIMESTAMP '2020-01-01' + INTERVAL (i) HOUR)::TIMESTAMPTZ",
    "tsns": "('2262-04-11 23:47:16'::TIMESTAMP_NS - INTERVAL (i) DAY)",
    "tstzns": "('2020-01-01 00:00:00.123456789'::TIMESTAMP_NS + INTERVAL (i) DAY)::TIMESTAMPTZ_NS",
    "iv": "INTERVAL (i) DAY + INTERVAL (i % 13) MONTH + INTERVAL (i * 1000) MILLISECOND",
    "u": "('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID",
    "s": "CASE i % 4 WHEN 0 THEN '' WHEN 1 THEN repeat('long string ', 20) || i "
         "ELSE 'v' || (i % 17) END",
    "bl": "('b' || (i % 5))::BLOB",
    "l": "CASE WHEN i % 5 = 0 THEN [] ELSE [i, NULL, i + 1] END",
    "st": "{'x': i, 'y': CASE WHEN i % 4 = 0 THEN NULL ELSE 'y' || i END}",
    "m": "MAP {'k' || (i % 3): i, 'z': NULL}",
    "ls": "[{'p': i, 'q': [i::VARCHAR, NULL]}, NULL]",
}


def _source_sql(nulls: str) -> str:
    cols = []
    for name, expr in COLUMNS.items():
        if nulls == "some":
            expr = f"CASE WHEN i % 3 = 0 THEN NULL ELSE {expr} END"
        elif nulls == "all":
            expr = f"CASE WHEN i < 0 THEN {expr} END"
        cols.append(f"{expr} AS {name}")
    return f"SELECT i AS k, {', '.join(cols)} FROM range(300) r(i)"


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("copy_src")
    out = {}
    con = duckdb.connect()
    for nulls in ("none", "some", "all"):
        path = str(d / f"src_{nulls}.parquet")
        con.execute(f"COPY ({_source_sql(nulls)}) TO '{path}' (FORMAT parquet, "
                    "ROW_GROUP_SIZE 2048)")
        out[nulls] = path
    return out


@pytest.fixture(scope="module")
def numbers(tmp_path_factory):
    """i = 0..199999 in 20 row groups (so 2 threads get many morsels)."""
    path = str(tmp_path_factory.mktemp("copy_num") / "numbers.parquet")
    duckdb.execute(f"COPY (SELECT i FROM range(200000) r(i)) TO '{path}' "
                   "(FORMAT parquet, ROW_GROUP_SIZE 10000)")
    return path


def _same_in_duckdb(a: str, b: str) -> None:
    con = duckdb.connect()
    assert con.sql(f"DESCRIBE SELECT * FROM '{a}'").fetchall() == \
        con.sql(f"DESCRIBE SELECT * FROM '{b}'").fetchall()
    assert con.sql(f"SELECT count(*) FROM '{a}'").fetchall() == \
        con.sql(f"SELECT count(*) FROM '{b}'").fetchall()
    for x, y in ((a, b), (b, a)):
        diff = con.sql(f"SELECT * FROM '{x}' EXCEPT ALL SELECT * FROM '{y}'").fetchall()
        assert diff == [], diff[:3]


def _same_in_pyarrow(a: str, b: str) -> None:
    ta, tb = pq.read_table(a), pq.read_table(b)
    assert ta.column_names == tb.column_names
    for name in ta.column_names:
        fa, fb = ta.schema.field(name), tb.schema.field(name)
        assert fa.type == fb.type, (name, fa.type, fb.type)
        assert ta.column(name).to_pylist() == tb.column(name).to_pylist(), name


@pytest.mark.parametrize("nulls", ["none", "some", "all"])
@pytest.mark.parametrize("compression,version", [("snappy", "v1"), ("zstd", "v2"),
                                                 ("gzip", "v1"), ("uncompressed", "v2")])
def test_every_type_reads_back_the_same(sources, tmp_path, nulls, compression, version):
    src = sources[nulls]
    out = str(tmp_path / "out.parquet")
    con = engine.connect(threads=2)
    n = con.sql(f"COPY (SELECT * FROM '{src}' ORDER BY k) TO '{out}' (FORMAT parquet, "
                f"COMPRESSION {compression}, PARQUET_VERSION {version}, "
                f"ROW_GROUP_SIZE 128)").fetchall()
    assert n == [(300,)]
    _same_in_duckdb(src, out)
    _same_in_pyarrow(src, out)
    assert con.sql(f"SELECT * FROM '{out}'").fetchall() == \
        con.sql(f"SELECT * FROM '{src}' ORDER BY k").fetchall()
    meta = pq.ParquetFile(out).metadata
    assert meta.num_row_groups == 3 and meta.row_group(0).num_rows == 128
    codec = "UNCOMPRESSED" if compression == "uncompressed" else compression.upper()
    assert meta.row_group(0).column(0).compression == codec
    chunk = meta.row_group(0).column(1)
    assert chunk.has_column_index and chunk.has_offset_index
    assert duckdb.sql(f"SELECT count(*) FROM parquet_metadata('{out}') WHERE "
                      "offset_index_offset IS NULL").fetchall() == [(0,)]


def test_count_result_and_copy_of_a_table_and_a_view(sources, tmp_path):
    con = engine.connect()
    src = sources["some"]
    out = str(tmp_path / "t.parquet")
    r = con.sql(f"COPY '{src}' TO '{out}'")
    assert r.columns == ["Count"] and r.types == ["BIGINT"] and r.fetchall() == [(300,)]
    _same_in_duckdb(src, out)
    con.sql(f"CREATE VIEW v AS SELECT k, s FROM '{src}' WHERE k < 10")
    out2 = str(tmp_path / "v.parquet")
    assert con.sql(f"COPY v TO '{out2}' (FORMAT 'parquet')").fetchall() == [(10,)]
    assert duckdb.sql(f"SELECT k FROM '{out2}'").fetchall() == [(i,) for i in range(10)]
    out3 = str(tmp_path / "cols.parquet")
    con.sql(f"COPY v(s) TO '{out3}'")
    assert pq.read_table(out3).column_names == ["s"]


def test_order_is_kept_with_threads(numbers, tmp_path):
    con = engine.connect(threads=2, block_rows=1024)
    out = str(tmp_path / "sorted.parquet")
    con.sql(f"COPY (SELECT (i * 7919) % 10007 AS x, i FROM '{numbers}' ORDER BY x DESC, i) "
            f"TO '{out}' (ROW_GROUP_SIZE 3000)")
    t = pq.read_table(out)
    assert t.num_rows == 200000
    xs = list(zip(t.column("x").to_pylist(), t.column("i").to_pylist()))
    assert xs == sorted(xs, key=lambda p: (-p[0], p[1]))
    # no ORDER BY: the file's order, though the morsels finish in any order
    con.sql(f"COPY (SELECT i FROM '{numbers}' WHERE i % 3 <> 0) TO '{out}' "
            f"(ROW_GROUP_SIZE 777)")
    assert pq.read_table(out).column("i").to_pylist() == [i for i in range(200000) if i % 3]


def test_unknown_and_unsupported_options_are_named(tmp_path):
    con = engine.connect()
    out = str(tmp_path / "x.parquet")
    with pytest.raises(ProgrammingError, match="FOO_BAR"):
        con.sql(f"COPY (SELECT 1 a) TO '{out}' (FOO_BAR 1)")
    with pytest.raises(UnsupportedFeatureError, match="PARTITION_BY"):
        con.sql(f"COPY (SELECT 1 a) TO '{out}' (PARTITION_BY (a))")
    with pytest.raises(UnsupportedFeatureError, match="CSV"):
        con.sql(f"COPY (SELECT 1 a) TO '{out}' (FORMAT csv)")
    with pytest.raises(UnsupportedFeatureError, match="LZ4"):
        con.sql(f"COPY (SELECT 1 a) TO '{out}' (COMPRESSION lz4)")
    with pytest.raises(ProgrammingError, match="ROW_GROUP_SIZE"):
        con.sql(f"COPY (SELECT 1 a) TO '{out}' (ROW_GROUP_SIZE 0)")
    with pytest.raises(ProgrammingError, match="BLOOM_FILTER_COLUMNS"):
        con.sql(f"COPY (SELECT 1 a) TO '{out}' (BLOOM_FILTER_COLUMNS ['nope'])")
    with pytest.raises(UnsupportedFeatureError, match="COPY ... FROM"):
        con.sql(f"COPY t FROM '{out}'")
    assert not os.path.exists(out)
    assert os.listdir(tmp_path) == []


def test_failed_copy_leaves_the_old_file(numbers, tmp_path):
    out = tmp_path / "keep.parquet"
    con = engine.connect(threads=2, block_rows=1000)
    con.sql(f"COPY (SELECT 42 AS answer) TO '{out}'")
    before = out.read_bytes()
    # the cast fails on a row far into the input, after row groups were written
    with pytest.raises(PqdbError):
        con.sql(f"COPY (SELECT CAST(CASE WHEN i = 150000 THEN 'x' ELSE CAST(i AS "
                f"VARCHAR) END AS INTEGER) AS v FROM '{numbers}') TO '{out}' (ROW_GROUP_SIZE 1000)")
    assert out.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.parquet"]
    missing = tmp_path / "new.parquet"
    with pytest.raises(PqdbError):
        con.sql(f"COPY (SELECT CAST('x' || i AS INTEGER) AS v FROM '{numbers}') TO '{missing}'")
    assert sorted(os.listdir(tmp_path)) == ["keep.parquet"]


def test_options_reach_the_file(numbers, tmp_path):
    con = engine.connect()
    out = str(tmp_path / "o.parquet")
    con.sql(f"COPY (SELECT i % 10 AS a, i AS b, 'x' || (i % 3) AS c FROM '{numbers}' "
            f"WHERE i < 1000) "
            f"TO '{out}' (COMPRESSION zstd, COMPRESSION_LEVEL 9, ROW_GROUP_SIZE 400, "
            f"KV_METADATA {{origin: 'pqdb test'}}, DICTIONARY_SIZE_LIMIT 5, "
            f"WRITE_PAGE_INDEX false)")
    f = pq.ParquetFile(out)
    assert f.metadata.metadata[b"origin"] == b"pqdb test"
    assert [f.metadata.row_group(i).num_rows for i in range(3)] == [400, 400, 200]
    rg = f.metadata.row_group(0)
    assert "RLE_DICTIONARY" not in rg.column(0).encodings        # 10 values > limit 5
    assert "RLE_DICTIONARY" in rg.column(2).encodings            # 3 values
    assert not rg.column(0).has_column_index
    con.sql(f"COPY (SELECT 1 AS a) TO '{out}' (DICTIONARY_SIZE_LIMIT 0, CODEC 'gzip')")
    assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == "GZIP"


def test_empty_result_and_hugeint(tmp_path):
    con = engine.connect()
    out = str(tmp_path / "e.parquet")
    assert con.sql(f"COPY (SELECT 1 AS a WHERE false) TO '{out}'").fetchall() == [(0,)]
    assert duckdb.sql(f"SELECT count(*) FROM '{out}'").fetchall() == [(0,)]
    assert pq.read_table(out).num_rows == 0
    con.sql(f"COPY (SELECT CAST(12345678901234567890 AS HUGEINT) AS h) TO '{out}'")
    assert duckdb.sql(f"SELECT typeof(h), h FROM '{out}'").fetchall() == \
        [("DOUBLE", 12345678901234567890.0)]


def test_duplicate_column_names_are_refused(tmp_path):
    with pytest.raises(ProgrammingError, match="distinct column names"):
        engine.connect().sql(f"COPY (SELECT 1 AS a, 2 AS a) TO '{tmp_path / 'd.parquet'}'")


def test_bloom_filter_columns_prune_pqdb_scans(numbers, tmp_path):
    """BLOOM_FILTER_COLUMNS puts a filter on a PLAIN (high-cardinality)
    column; pqdb's scan then skips row groups by it."""
    con = engine.connect()
    out = str(tmp_path / "bloom.parquet")
    con.sql(f"COPY (SELECT i * 2 AS even, i % 7 AS small FROM '{numbers}') TO '{out}' "
            f"(ROW_GROUP_SIZE 50000, BLOOM_FILTER_COLUMNS ['even'])")
    meta = pq.ParquetFile(out).metadata
    assert meta.row_group(0).column(0).bloom_filter_offset is not None
    assert meta.row_group(0).column(1).bloom_filter_offset is None      # not asked for
    r = con.sql(f"SELECT count(*) FROM '{out}' WHERE even = 12345")     # odd: in no group
    assert r.fetchall() == [(0,)] and r.pruning.bloom_rejections == 1   # min/max skip the rest
    con.sql(f"COPY (SELECT i % 7 AS small FROM '{numbers}') TO '{out}' "
            f"(WRITE_BLOOM_FILTER false)")
    assert pq.ParquetFile(out).metadata.row_group(0).column(0).bloom_filter_offset is None
