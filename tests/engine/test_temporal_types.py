"""Temporal types as DuckDB has them: TIMESTAMP_NS literals, casts and
comparisons keep their nanoseconds; Parquet's UTC-adjusted TIME is TIME
WITH TIME ZONE and UTC-adjusted nanosecond timestamps TIMESTAMPTZ_NS;
nanosecond TIME is TIME_NS; values Python cannot hold (dates past 9999 or
before year 1, TIME 24:00:00, the infinities) come back as DuckDB's Python
client returns them, never as raw integers.  Every answer is checked
against DuckDB (installed beside pqdb) over the same SQL and files."""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from engine.errors import DataError
from engine.kernels import dates as dk
from planner import temporal as tt
from tests.scan.thrift_writer import rewrite_footer


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("temporal")
    ns = d / "ns.parquet"
    pq.write_table(pa.table({
        "ts": pa.array([694267407123456789, 694267407123456000, -1, None], pa.timestamp("ns")),
        "tsz": pa.array([1, 2, -1500, None], pa.timestamp("ns", tz="UTC")),
        "tsu": pa.array([1, 2, 3, None], pa.timestamp("us", tz="UTC")),
    }), ns)
    times = d / "time.parquet"
    pq.write_table(pa.table({
        "tm": pa.array([1000, 86_400_000, 5, None], pa.time32("ms")),
        "tu": pa.array([1, 86_400_000_000, 5, None], pa.time64("us")),
        "tn": pa.array([1001, 86_400_000_000_000, 5, None], pa.time64("ns")),
    }), times)
    timetz = d / "timetz.parquet"

    def utc(raw):
        for el in raw["schema"][1:]:
            el["logicalType"]["TIME"]["isAdjustedToUTC"] = True
    rewrite_footer(times, timetz, utc)
    dates = d / "dates.parquet"
    pq.write_table(pa.table({
        "d": pa.array([2932896, 2932897, -719162, -719163, 2**31 - 1, -(2**31 - 1),
                       -2**31 + 5, 0, None], pa.int32()).cast(pa.date32()),
        "t": pa.array([253402300799999999, 253402300800000000, -62135596800000000,
                       -62135596800000001, 2**63 - 1, -(2**63 - 1), 0, 1, None],
                      pa.int64()).cast(pa.timestamp("us")),
    }), dates)
    return {"ns": ns, "time": times, "timetz": timetz, "dates": dates}


def both(sql, files):
    sql = sql.format(**{k: f"'{v}'" for k, v in files.items()})
    r = duckdb.connect().execute(sql)
    want, want_types = r.fetchall(), [str(c[1]) for c in r.description]
    res = engine.connect().sql(sql)
    return res.fetchall(), res.types, want, want_types


QUERIES = [
    # 9: nanosecond literals, casts both ways, comparisons with TIMESTAMP
    "SELECT count(*) FROM {ns} WHERE ts = '1992-01-01 12:03:27.123456789'",
    "SELECT ts = '1992-01-01 12:03:27.123456789', ts > '1992-01-01 12:03:27.123456001' FROM {ns}",
    "SELECT count(*) FROM {ns} WHERE ts = TIMESTAMP_NS '1992-01-01 12:03:27.123456789'",
    "SELECT CAST(ts AS VARCHAR), ts::TIMESTAMP, ts::DATE, ts::TIME, ts::TIMESTAMPTZ FROM {ns}",
    "SELECT count(*) FROM {ns} WHERE ts::VARCHAR = '1992-01-01 12:03:27.123456789'",
    "SELECT ts FROM {ns} WHERE ts > TIMESTAMP '1992-01-01 12:03:27.123456' ORDER BY ts",
    "SELECT TIMESTAMP_NS '1992-01-01 00:00:00.000000001' > TIMESTAMP '1992-01-01', "
    "TIMESTAMP_NS '1992-01-01 00:00:00.000000001' = TIMESTAMP '1992-01-01'",
    "SELECT '1992-01-01 12:03:27.1234567891'::TIMESTAMP_NS::VARCHAR, "
    "'1992-01-01 12:03:27.1234565'::TIMESTAMP_NS::VARCHAR, "
    "'1992-01-01 12:03:27.9999995'::TIMESTAMP_NS::TIMESTAMP::VARCHAR, "
    "'1969-12-31 23:59:59.9999995'::TIMESTAMP_NS::TIMESTAMP::VARCHAR, "
    "'1969-12-31 23:59:59.999999999'::TIMESTAMP_NS::VARCHAR",
    "SELECT '1677-09-21 00:12:43.145224192'::TIMESTAMP_NS::VARCHAR, "
    "'2262-04-11 23:47:16.854775806'::TIMESTAMP_NS::VARCHAR",
    "SELECT max(ts)::VARCHAR, min(ts), count(DISTINCT ts) FROM {ns}",
    # 10: UTC-adjusted types
    "SELECT typeof(tsz), tsz, tsz::VARCHAR, typeof(tsu), tsu FROM {ns}",
    "SELECT typeof(tm), typeof(tu), typeof(tn), * FROM {timetz}",
    "SELECT tm::VARCHAR, tu::VARCHAR, tn::VARCHAR FROM {timetz}",
    "SELECT count(*) FROM {timetz} WHERE tu = '00:00:00.000001'",
    "SELECT max(tu), min(tm) FROM {timetz}",
    "SELECT typeof(tm), typeof(tn), *, tn::VARCHAR FROM {time}",
    "SELECT tn, count(*) FROM {time} GROUP BY tn ORDER BY tn",
    "SELECT count(*) FROM {time} WHERE tn = '00:00:00.000001001'",
    # 12 and 1: values outside Python's range
    "SELECT d, t, d::VARCHAR, t::VARCHAR FROM {dates}",
    "SELECT DATE '9999-12-31' + 1, CAST(DATE '9999-12-31' + 1 AS VARCHAR)",
    "SELECT DATE '0001-01-01' - 1, CAST(DATE '0001-01-01' - 1 AS VARCHAR)",
    "SELECT TIMESTAMP '9999-12-31 23:59:59' + INTERVAL 1 DAY, "
    "TIMESTAMP '0001-01-01 00:00:00' - INTERVAL 1 DAY",
    "SELECT 'infinity'::DATE, '-infinity'::DATE, 'infinity'::TIMESTAMP, "
    "('infinity'::DATE)::VARCHAR, ('-infinity'::TIMESTAMP)::VARCHAR",
    "SELECT DATE '5877642-06-25 (BC)', CAST(DATE '5877642-06-25 (BC)' AS VARCHAR)",
    "SELECT TIME '24:00:00', CAST(TIME '24:00:00' AS VARCHAR), TIME '24:00:00' > TIME '23:59:59'",
    "SELECT tu, tu::VARCHAR FROM {time} ORDER BY tu",
    "SELECT d FROM {dates} WHERE d > DATE '9999-01-01' ORDER BY d",
    "SELECT t FROM {dates} WHERE t < TIMESTAMP '0001-01-02' ORDER BY t",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_like_duckdb(sql, files):
    got, types, want, want_types = both(sql, files)
    assert types == want_types
    assert got == want


def test_describe_like_duckdb(files):
    for name in ("ns", "time", "timetz", "dates"):
        got, _, want, _ = both(f"DESCRIBE SELECT * FROM {{{name}}}", files)
        assert [r[:2] for r in got] == [r[:2] for r in want], name


def test_printing_keeps_nanoseconds_and_infinities(files):
    con = engine.connect()
    text = str(con.sql(f"SELECT ts, tsz FROM '{files['ns']}'"))
    assert "1992-01-01 12:03:27.123456789" in text
    assert "1969-12-31 23:59:59.999999999" in text
    assert "1969-12-31 23:59:59.9999985+00" in text
    text = str(con.sql(f"SELECT d, t FROM '{files['dates']}'"))
    for shown in ("10000-01-01", "0001-12-31 (BC)", "infinity", "-infinity",
                  "0001-12-31 (BC) 23:59:59.999999", tt.format_date(-2**31 + 5)):
        assert shown in text
    assert "24:00:00+00" in str(con.sql(f"SELECT tu FROM '{files['timetz']}'"))


def test_numpy_and_arrow(files):
    con = engine.connect()
    arrays = con.sql(f"SELECT ts, tsz FROM '{files['ns']}'").to_numpy()
    assert arrays["ts"].dtype == np.dtype("datetime64[ns]")
    assert arrays["ts"][0] == np.datetime64(694267407123456789, "ns")
    table = con.sql(f"SELECT ts, tsz FROM '{files['ns']}'").to_arrow()
    assert table.column("ts").to_pylist() == pq.read_table(files["ns"]).column("ts").to_pylist()
    assert table.schema.field("tsz").type == pa.timestamp("ns", tz="UTC")
    times = con.sql(f"SELECT tn FROM '{files['time']}'").to_arrow()
    assert times.column("tn").type == pa.time64("ns")
    # numpy has no infinite dates: a clear error, not a date 5.8 million years away
    with pytest.raises(DataError, match="infinity"):
        con.sql(f"SELECT d FROM '{files['dates']}'").to_numpy()
    with pytest.raises(DataError, match="infinity"):
        con.sql(f"SELECT t FROM '{files['dates']}'").to_pandas()
    finite = con.sql(f"SELECT d FROM '{files['dates']}' WHERE abs(d - DATE '1970-01-01') < 3000000"
                     ).to_numpy()["d"]
    assert str(np.asarray(finite)[1]) == "10000-01-01"


def test_overflowing_casts_are_errors():
    con = engine.connect()
    for sql in ("SELECT '2300-01-01'::TIMESTAMP_NS",
                "SELECT '1677-09-21 00:12:43.145224191'::TIMESTAMP_NS",
                "SELECT CAST(TIMESTAMP '2300-01-01 00:00:00' AS TIMESTAMP_NS)",
                "SELECT CAST(DATE '5877642-06-25 (BC)' AS TIMESTAMP)"):
        with pytest.raises(engine.errors.PqdbError):
            con.sql(sql).fetchall()


def test_text_kernel_matches_python():
    rng = np.random.default_rng(5)
    days = np.concatenate([rng.integers(-2**31 + 1, 2**31 - 1, 3000),
                           np.arange(-800_000, -700_000, 97), [2**31 - 1, -(2**31 - 1), 0, -1]])
    offsets, buf = dk.format_values(days, dk.KIND_DATE)
    texts = [buf[a:b].tobytes().decode() for a, b in zip(offsets[:-1], offsets[1:])]
    assert texts == [tt.format_date(int(v)) for v in days]
    for kind, nanos in ((dk.KIND_TIMESTAMP, False), (dk.KIND_TIMESTAMP_NS, True)):
        values = np.concatenate([rng.integers(-2**63 + 1, 2**63 - 1, 3000, dtype=np.int64),
                                 rng.integers(-10**12, 10**12, 1000), [2**63 - 1, -(2**63 - 1)]])
        offsets, buf = dk.format_values(values, kind)
        texts = [buf[a:b].tobytes().decode() for a, b in zip(offsets[:-1], offsets[1:])]
        assert texts == [tt.format_timestamp(int(v), nanos) for v in values]
        for text, v in zip(texts, values):
            if "infinity" not in text:
                assert tt.parse_datetime(text, 10 ** (9 if nanos else 6)) == v
    for d in days[:500]:
        if abs(d) != 2**31 - 1:
            assert tt.parse_datetime(tt.format_date(int(d)), with_time=False) == d
    assert tt.civil(0) == (1970, 1, 1) and tt.civil(-719163) == (0, 12, 31)
    assert dt.date(1, 1, 1).toordinal() - dt.date(1970, 1, 1).toordinal() == tt.PY_MIN_DAYS


# ---- the conformance corpus: column types as DuckDB's DESCRIBE ------------------

def _corpus_files():
    import glob
    import os
    from tests.paths import CORPUS_DATA
    return sorted(os.path.relpath(p, CORPUS_DATA)
                  for p in glob.glob(os.path.join(CORPUS_DATA, "**", "*.parquet"), recursive=True))


# DuckDB's GEOMETRY type (its spatial types) has no pqdb counterpart: BLOB
GEOMETRY = "geospatial/"


# Corpus files DuckDB refuses to read (its error: "MAP_KEY_VALUE requires
# two children"); pqdb reads them like pyarrow.
DUCKDB_REFUSES = {"map_no_value.parquet"}


@pytest.mark.parametrize("name", _corpus_files())
def test_corpus_types_like_duckdb(name):
    import os
    from tests.paths import CORPUS_DATA
    path = os.path.join(CORPUS_DATA, name)
    sql = f"DESCRIBE SELECT * FROM read_parquet('{path}')"
    got = [r[:2] for r in engine.connect().sql(sql).fetchall()]
    if name in DUCKDB_REFUSES:       # pqdb reads it; test_corpus checks the values
        with pytest.raises(duckdb.Error):
            duckdb.connect().execute(sql)
        return
    want = [r[:2] for r in duckdb.connect().execute(sql).fetchall()]
    if name.startswith(GEOMETRY):
        want = [(n, "BLOB" if t.startswith("GEOMETRY") else t) for n, t in want]
    assert got == want


def test_int96_is_a_timestamp_of_microseconds():
    import os
    from tests.paths import CORPUS_DATA
    path = os.path.join(CORPUS_DATA, "int96_from_spark.parquet")
    rows = engine.connect().sql(f"SELECT a, typeof(a) FROM '{path}' LIMIT 4").fetchall()
    # 9999-12-31 03:00 wrapped to 1816 when INT96 was read as nanoseconds
    assert rows[2] == (dt.datetime(9999, 12, 31, 3, 0), "TIMESTAMP")
    assert rows[0] == (dt.datetime(2024, 1, 1, 20, 34, 56, 123456), "TIMESTAMP")


def test_nested_values_like_duckdb(tmp_path):
    # out-of-range dates, 24:00:00 and nanoseconds inside lists and structs
    d = pa.array([2932897, -719163, 2**31 - 1, 0], pa.int32()).cast(pa.date32())
    t = pa.array([86_400_000_000, 1, 2, 3], pa.time64("us"))
    ts = pa.array([253402300800000000, 0, 1, 2**63 - 1], pa.int64()).cast(pa.timestamp("us"))
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({
        "l": pa.array([[2932897, 1], [-719163], [2**31 - 1], None],
                      pa.list_(pa.int32())).cast(pa.list_(pa.date32())),
        "s": pa.StructArray.from_arrays([d, t, ts], ["d", "t", "ts"]),
        "lt": pa.array([[86_400_000_000], [1], [], None], pa.list_(pa.time64("us"))),
        "ln": pa.array([[1], [694267407123456789], [], None], pa.list_(pa.timestamp("ns"))),
    }), path)
    sql = f"SELECT * FROM '{path}'"
    assert engine.connect().sql(sql).fetchall() == duckdb.connect().execute(sql).fetchall()
