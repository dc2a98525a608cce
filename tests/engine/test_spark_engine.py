"""Spark as pqdb's distributed backend: engine.connect(engine="spark") runs
pqdb's SQL on Spark (local) and returns the same Result; at SF 0.01 every
TPC-H query gives pqdb's answer.  One SparkSession serves the whole test
session (engine.spark keeps it per process)."""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pytest

import engine
from tests.tpch.spark_support import require_spark
from tpch import answers
from tpch.queries import query_text, view_statements

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def spark_con():
    require_spark()
    con = engine.connect(engine="spark")
    yield con
    con.close()


@pytest.fixture(scope="module")
def tpch_pair(spark_con, tpch_sf001):
    pq = engine.connect(threads=2)
    for stmt in view_statements(tpch_sf001):
        spark_con.sql(stmt)
        pq.sql(stmt)
    return spark_con, pq


@pytest.mark.parametrize("number", range(1, 23))
def test_tpch_query_matches_pqdb(tpch_pair, number):
    spark_con, pq = tpch_pair
    got = spark_con.sql(query_text(number))
    want = pq.sql(query_text(number))
    assert isinstance(got, engine.Result)
    rows = got.fetchall()
    assert answers.compare_rows(rows, want.fetchall(), got.columns) is None
    assert got.columns == want.columns
    diff = None
    try:
        diff = answers.check_against_answers(number, 0.01, got.columns, rows)
    except LookupError:
        pass
    assert diff is None


def test_paths_globs_and_aliases(spark_con, tpch_sf001):
    path = f"{tpch_sf001}/nation.parquet"
    r = spark_con.sql(f"SELECT count(*) AS n FROM '{path}'")
    assert r.fetchall() == [(25,)]
    r = spark_con.sql(f"SELECT n.n_name FROM read_parquet('{tpch_sf001}/n*.parquet') n "
                      "WHERE n.n_nationkey = 7")
    assert r.fetchall() == [("GERMANY",)]
    r = spark_con.sql(f"SELECT count(*) FROM read_parquet(['{path}', '{path}'])")
    assert r.fetchone()[0] == 50
    r = spark_con.sql(f"SELECT nation.n_regionkey FROM '{path}' WHERE n_nationkey = 0")
    assert r.fetchall() == [(0,)]


def test_result_types_and_semantics(spark_con):
    r = spark_con.sql("""
        SELECT 1 / 0 AS div0, 7 / 2 AS half, 7 // 2 AS intdiv,
               avg(x) AS mean, sum(CAST(x AS DECIMAL(15, 2))) AS total,
               date_trunc('month', CAST('1995-03-17' AS date)) AS month,
               CAST('1995-03-17' AS date) AS day, 'text' AS s, NULL AS nothing
        FROM (SELECT 1 AS x UNION ALL SELECT 2)""")
    assert r.types == ["DOUBLE", "DOUBLE", "BIGINT", "DOUBLE", "DECIMAL(25,2)", "TIMESTAMP",
                       "DATE", "VARCHAR", "NULL"]
    assert r.fetchall() == [(None, 3.5, 3, 1.5, decimal.Decimal("3.00"),
                             datetime.datetime(1995, 3, 1), datetime.date(1995, 3, 17),
                             "text", None)]
    arrays = r.to_numpy()
    assert arrays["day"].dtype == np.dtype("datetime64[D]")


def test_nulls_sort_last_as_in_pqdb(spark_con):
    sql = "SELECT x FROM (SELECT 2 AS x UNION ALL SELECT NULL UNION ALL SELECT 1) ORDER BY x"
    assert spark_con.sql(sql).fetchall() == [(1,), (2,), (None,)]
    assert spark_con.sql(sql).fetchall() == engine.connect().sql(sql).fetchall()


def test_views_and_errors(spark_con, tpch_sf001):
    spark_con.sql(f"CREATE VIEW r5 AS SELECT * FROM '{tpch_sf001}/region.parquet'")
    assert spark_con.sql("SELECT count(*) FROM r5").fetchone()[0] == 5
    with pytest.raises(engine.BinderError):
        spark_con.sql("CREATE VIEW r5 AS SELECT 1")
    spark_con.sql("DROP VIEW r5")
    with pytest.raises(engine.SQLError):
        spark_con.sql("SELECT count(*) FROM r5")
    with pytest.raises(engine.SQLError):
        spark_con.sql(f"SELECT no_such_column FROM '{tpch_sf001}/region.parquet'")
    with pytest.raises(engine.PqdbIOError):
        spark_con.sql("SELECT * FROM '/nonexistent/dir/x.parquet'")
    with pytest.raises(engine.UnsupportedFeatureError, match="http"):
        spark_con.sql("SELECT * FROM 'https://example.invalid/x.parquet'")
    with pytest.raises(engine.UnsupportedFeatureError):
        engine.connect(engine="trino")


def test_cli_engine_spark(spark_con, tpch_sf001, capsys):
    from engine.cli import main
    code = main(["--engine", "spark", "--format", "csv", "-c",
                 f"SELECT r_name FROM '{tpch_sf001}/region.parquet' ORDER BY r_regionkey LIMIT 2"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.splitlines() == ["r_name", "AFRICA", "AMERICA"]
    code = main(["--engine", "spark", "-c", "SELECT nope FROM (SELECT 1 AS x)"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("Error:") and "Traceback" not in err
