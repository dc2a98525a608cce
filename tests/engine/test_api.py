"""The Python API: connect, Connection.sql, Cursor (PEP 249), Result, Catalog.

End-to-end queries are compared with DuckDB on TPC-H SF0.01."""

import datetime as dt
import os
from decimal import Decimal

import numpy as np
import pytest

import engine
from engine.catalog import Catalog
from engine.config import Config
from tests.connections import tpch_tables


# ---------------------------------------------------------------- connect / config

def test_module_attributes():
    assert engine.apilevel == "2.0" and engine.threadsafety == 1 and engine.paramstyle == "qmark"
    assert engine.Error is engine.PqdbError
    assert issubclass(engine.ProgrammingError, engine.Error)
    assert issubclass(engine.InterfaceError, engine.Error)
    assert issubclass(engine.BinderError, engine.SQLError)


def test_connect_options_and_unknown_option():
    con = engine.connect(threads=2, memory_limit="256MB")
    assert con.config.threads == 2 and con.config.memory_limit == 256 << 20
    with pytest.raises(engine.ConfigError, match="unknown option"):
        engine.connect(no_such_option=1)
    with pytest.raises(engine.ConfigError):
        engine.connect(threads="many")


def test_environment_options(monkeypatch):
    monkeypatch.setenv("PQDB_THREADS", "3")
    assert engine.connect().config.threads == 3
    assert engine.connect(threads=1).config.threads == 1       # arguments win


def test_database_directory_created(tmp_path):
    path = tmp_path / "meta" / "db"
    con = engine.connect(str(path))
    assert path.is_dir() and con.database == str(path)
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(engine.PqdbIOError):
        engine.connect(str(f))


def test_set_statement_updates_config():
    con = engine.connect()
    assert con.sql("SET threads = 2") is None
    assert con.config.threads == 2
    con.sql("SET memory_limit = '1GB'; SET verify_checksums = false")
    assert con.config.memory_limit == 1 << 30 and con.config.verify_checksums is False
    with pytest.raises(engine.ConfigError):
        con.sql("SET bogus_option = 1")


def test_closed_connection_and_cursor():
    con = engine.connect()
    cur = con.cursor()
    with pytest.raises(engine.InterfaceError):
        cur.fetchall()                    # nothing executed
    assert cur.description is None and cur.rowcount == -1
    cur.close()
    with pytest.raises(engine.InterfaceError):
        cur.execute("SET threads = 1")
    with engine.connect() as c2:
        pass
    assert c2.closed
    with pytest.raises(engine.InterfaceError):
        c2.sql("SET threads = 1")


def test_syntax_error_has_position():
    con = engine.connect()
    with pytest.raises(engine.SQLError) as info:
        con.sql("SELECT 1 +* FROM")
    assert info.value.line == 1 and info.value.pointer() is not None


# ---------------------------------------------------------------- catalog

def test_catalog_views_case_insensitive():
    cat = Catalog(Config())
    cat.create_view("MyView", "AST")
    assert cat.lookup_view("myview") == "AST" and cat.lookup_view("MYVIEW") == "AST"
    with pytest.raises(engine.BinderError):
        cat.create_view("myview", "other")
    cat.create_view("myview", "other", replace=True)
    assert cat.lookup_view("MyView") == "other"
    cat.drop_view("MYVIEW")
    assert cat.lookup_view("myview") is None
    cat.drop_view("myview", if_exists=True)
    with pytest.raises(engine.BinderError):
        cat.drop_view("myview")


def test_catalog_missing_and_remote():
    cat = Catalog(Config())
    with pytest.raises(engine.PqdbIOError, match="No files found that match the pattern"):
        cat.table_info("/nonexistent/dir/*.parquet")
    with pytest.raises(engine.PqdbIOError, match="No files found"):
        cat.table_info("/nonexistent/file.parquet")
    with pytest.raises(engine.UnsupportedFeatureError, match="unknown URL scheme nosuch://"):
        cat.table_info("nosuch://bucket/x.parquet")
    with pytest.raises(engine.UnsupportedFeatureError, match="globs are not supported over https"):
        cat.table_info("https://127.0.0.1:9/dir/*.parquet")


@pytest.fixture(scope="module")
def small_files(tmp_path_factory):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    d = tmp_path_factory.mktemp("files")
    for i in range(3):
        t = pa.table({"id": pa.array([i * 10 + j for j in range(4)], pa.int64()),
                      "name": pa.array([f"n{i}{j}" for j in range(4)]),
                      "price": pa.array([Decimal(f"{i}.{j}5") for j in range(4)], pa.decimal128(9, 2))})
        pq.write_table(t, d / f"part{i}.parquet")
    other = pa.table({"id": pa.array([1], pa.int32())})
    (d / "other").mkdir()
    pq.write_table(other, d / "other" / "x.parquet")
    return d


def test_catalog_table_info_glob(small_files):
    pytest.importorskip("scan.reader")
    cat = Catalog(Config())
    info = cat.table_info(str(small_files / "part*.parquet"))
    assert [os.path.basename(f) for f in info.files] == ["part0.parquet", "part1.parquet", "part2.parquet"]
    assert [(n, str(t)) for n, t in info.columns] == [
        ("id", "BIGINT"), ("name", "VARCHAR"), ("price", "DECIMAL(9,2)")]
    assert info.row_count == 12
    with pytest.raises(engine.BinderError, match="different schemas"):
        cat.table_info([str(small_files / "part0.parquet"), str(small_files / "other" / "x.parquet")])


def test_catalog_file_cache_reopens_changed_file(small_files, tmp_path):
    pytest.importorskip("scan.reader")
    import shutil
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "f.parquet"
    shutil.copy(small_files / "part0.parquet", path)
    cat = Catalog(Config())
    first = cat.open_file(str(path))
    assert cat.open_file(str(path)) is first
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int64())}), path)
    os.utime(path, ns=(1, 1))
    second = cat.open_file(str(path))
    assert second is not first and second.num_rows == 100


# ---------------------------------------------------------------- end to end

@pytest.fixture(scope="module")
def con(tpch_sf001):
    c = engine.connect(threads=2)
    for table, path in tpch_tables(tpch_sf001).items():
        c.sql(f"CREATE VIEW {table} AS SELECT * FROM '{path}'")
    return c


E2E_QUERIES = [
    "SELECT count(*) FROM lineitem",
    "SELECT n_nationkey, n_name, n_regionkey FROM nation ORDER BY n_nationkey",
    "SELECT l_returnflag, l_linestatus, sum(l_quantity) AS q, sum(l_extendedprice) AS p, count(*) AS c "
    "FROM lineitem WHERE l_shipdate <= DATE '1998-09-02' GROUP BY l_returnflag, l_linestatus "
    "ORDER BY l_returnflag, l_linestatus",
    "SELECT o_orderkey, o_orderdate, o_totalprice, o_comment FROM orders "
    "WHERE o_totalprice > 400000 ORDER BY o_orderkey LIMIT 25",
    "SELECT c_name, n_name FROM customer JOIN nation ON c_nationkey = n_nationkey "
    "WHERE c_acctbal < 0 ORDER BY c_name LIMIT 30",
]


@pytest.mark.parametrize("query", E2E_QUERIES)
def test_query_matches_duckdb(con, duckdb_tpch, query):
    res = con.sql(query)
    expected = duckdb_tpch.sql(query)
    assert res.columns == expected.columns
    assert res.fetchall() == expected.fetchall()


def test_result_types_and_description(con):
    res = con.sql("SELECT o_orderkey, o_totalprice, o_orderdate, o_orderstatus FROM orders "
                  "ORDER BY o_orderkey LIMIT 3")
    assert res.types == ["BIGINT", "DECIMAL(15,2)", "DATE", "VARCHAR"]
    row = res.fetchone()
    assert isinstance(row[1], Decimal) and row[1].as_tuple().exponent == -2
    assert isinstance(row[2], dt.date) and isinstance(row[3], str)
    arrays = con.sql("SELECT o_orderkey, o_totalprice FROM orders ORDER BY o_orderkey LIMIT 5").to_numpy()
    assert arrays["o_totalprice"].dtype == np.float64 and len(arrays["o_orderkey"]) == 5


def test_cursor_params_and_fetch(con, duckdb_tpch):
    cur = con.cursor()
    assert cur.execute("SELECT n_name FROM nation WHERE n_nationkey = ? OR n_regionkey = ? "
                       "ORDER BY n_name", [3, 4]) is cur
    expected = duckdb_tpch.execute("SELECT n_name FROM nation WHERE n_nationkey = ? "
                                   "OR n_regionkey = ? ORDER BY n_name", [3, 4]).fetchall()
    assert cur.description[0][:2] == ("n_name", "VARCHAR")
    assert cur.fetchone() == expected[0]
    assert cur.fetchmany() == expected[1:2]           # arraysize 1
    assert cur.fetchmany(2) == expected[2:4]
    assert cur.fetchall() == expected[4:]
    assert cur.fetchone() is None
    cur.executemany("SELECT count(*) FROM nation WHERE n_regionkey = ?", [[0], [1]])
    assert cur.fetchall() == [(5,)]


def test_views_and_explain(con):
    con.sql("CREATE VIEW cheap AS SELECT p_partkey FROM part WHERE p_retailprice < 1000")
    n = con.sql("SELECT count(*) FROM cheap").fetchall()[0][0]
    assert n > 0
    with pytest.raises(engine.BinderError):
        con.sql("CREATE VIEW cheap AS SELECT 1")
    con.sql("DROP VIEW cheap")
    with pytest.raises(engine.SQLError):
        con.sql("SELECT * FROM cheap")
    ex = con.sql("EXPLAIN SELECT count(*) FROM lineitem WHERE l_quantity > 10")
    assert ex.columns == ["explain"] and ex.types == ["VARCHAR"]
    assert "Scan" in ex.fetchall()[0][0]


def test_errors_from_queries(con):
    with pytest.raises(engine.BinderError):
        con.sql("SELECT no_such_column FROM nation")
    with pytest.raises(engine.PqdbIOError, match="No files found"):
        con.sql("SELECT * FROM '/nonexistent/x.parquet'")


def test_printing_a_result(con):
    text = str(con.sql("SELECT n_nationkey, n_name FROM nation ORDER BY 1"))
    assert "25 rows" in text and "ALGERIA" in text and "bigint" in text.lower()


def test_every_type_matches_pyarrow(tmp_path):
    pytest.importorskip("planner.optimizer")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    n = None
    t = pa.table({
        "i8": pa.array([1, -2, n], pa.int8()), "i16": pa.array([300, n, -300], pa.int16()),
        "i32": pa.array([n, 7, 8], pa.int32()), "i64": pa.array([2**40, n, -1], pa.int64()),
        "u8": pa.array([255, 0, n], pa.uint8()), "u16": pa.array([65535, n, 1], pa.uint16()),
        "u32": pa.array([2**32 - 1, n, 1], pa.uint32()), "u64": pa.array([2**63 + 5, n, 1], pa.uint64()),
        "f32": pa.array([1.5, n, -2.25], pa.float32()), "f64": pa.array([0.1, n, 1e300]),
        "b": pa.array([True, False, n]),
        "d": pa.array([Decimal("1.23"), n, Decimal("-0.05")], pa.decimal128(9, 2)),
        "d18": pa.array([Decimal("123456789012.345678"), n, Decimal("0")], pa.decimal128(18, 6)),
        "d38": pa.array([Decimal("12345678901234567890123456.123456789012"), n, Decimal("-1")],
                        pa.decimal128(38, 12)),
        "date": pa.array([dt.date(2020, 2, 29), n, dt.date(1900, 1, 1)], pa.date32()),
        "ts": pa.array([dt.datetime(2021, 1, 2, 3, 4, 5, 6), n, dt.datetime(1969, 12, 31, 23, 59, 59)],
                       pa.timestamp("us")),
        "tstz": pa.array([dt.datetime(2021, 1, 2, 3, 4, 5, 6), n, dt.datetime(1970, 1, 1)],
                         pa.timestamp("us", tz="UTC")),
        "tm": pa.array([dt.time(13, 14, 15, 16), n, dt.time(0)], pa.time64("us")),
        "s": pa.array(["short", n, "a much longer string value ☃"]),
        "bin": pa.array([b"\x00\x01", n, b"x" * 30]),
    })
    path = tmp_path / "alltypes.parquet"
    pq.write_table(t, path)
    res = engine.connect().sql(f"SELECT * FROM '{path}'")
    assert res.types == ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                         "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "BOOLEAN", "DECIMAL(9,2)",
                         "DECIMAL(18,6)", "DECIMAL(38,12)", "DATE", "TIMESTAMP",
                         "TIMESTAMP WITH TIME ZONE", "TIME", "VARCHAR", "BLOB"]
    got = res.fetchall()
    assert got == [tuple(d.values()) for d in t.to_pylist()]
    assert got[0][16].tzinfo is not None and got[0][15].tzinfo is None
    assert [c.as_tuple().exponent for c in (got[0][11], got[2][12], got[2][13])] == [-2, -6, -12]
    back = res.to_arrow()
    assert back.to_pylist() == t.to_pylist()


@pytest.mark.parametrize("target", [
    "li",
    "'{path}'",
    "SELECT l_orderkey, l_extendedprice * 2 AS x, sum(l_tax) AS s FROM li GROUP BY 1, 2",
    "SELECT 1 AS one, 'a' AS s, NULL AS n, DATE '2020-01-01' AS d",
])
def test_describe_matches_duckdb(target, tpch_sf001):
    import duckdb
    path = f"{tpch_sf001}/lineitem.parquet"
    view = f"CREATE VIEW li AS SELECT * FROM '{path}'"
    con, duck = engine.connect(), duckdb.connect()
    con.sql(view)
    duck.execute(view)
    sql = "DESCRIBE " + target.format(path=path)
    assert con.sql(sql).fetchall() == duck.execute(sql).fetchall()
    assert con.sql(sql).columns == ["column_name", "column_type", "null", "key", "default",
                                    "extra"]
