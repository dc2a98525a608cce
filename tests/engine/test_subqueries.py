"""Subqueries end to end (EXISTS, NOT EXISTS, IN, NOT IN, scalar; correlated
and not) on small Parquet files with NULLs and duplicates, against DuckDB."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.errors import ExecutionError, UnsupportedFeatureError
from tests.connections import pqdb_with_views
from tests.engine.test_executor_helpers import assert_matches_duckdb


# (threads, block_rows): the second cuts every table into blocks of 3 rows
CONFIGS = [(2, 65536), (1, 3)]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = tmp_path_factory.mktemp("subq")
    tables = {
        # k has duplicates and NULLs; v has NULLs
        "t": pa.table({"id": pa.array(range(1, 13), pa.int64()),
                       "k": pa.array([1, 1, 2, 3, None, 4, 5, 5, None, 6, 7, 8], pa.int64()),
                       "v": pa.array([10, None, 20, 30, 40, 50, None, 70, 80, 90, 100, 110],
                                     pa.int64()),
                       "s": pa.array(["a", "b", None, "dd", "a", "long string value x",
                                      "c", "c", "e", None, "f", "g"])}),
        "u": pa.table({"k": pa.array([1, 1, 2, 2, 2, 5, None, 9], pa.int64()),
                       "w": pa.array([5, 15, 25, None, 35, 45, 55, 65], pa.int64()),
                       "s": pa.array(["a", "a", "x", None, "dd", "c", "zz", "long string value x"])}),
        # u without NULL keys
        "un": pa.table({"k": pa.array([1, 2, 2, 5, 9], pa.int64()),
                        "w": pa.array([1, 2, 3, 4, 5], pa.int64())}),
        "e": pa.table({"k": pa.array([], pa.int64()), "w": pa.array([], pa.int64())}),
    }
    paths = {}
    for name, tbl in tables.items():
        p = str(d / f"{name}.parquet")
        pq.write_table(tbl, p)
        paths[name] = p
    return paths


QUERIES = [
    # EXISTS / NOT EXISTS, correlated on equalities, with residuals
    "SELECT id FROM t WHERE EXISTS (SELECT * FROM u WHERE u.k = t.k)",
    "SELECT id FROM t WHERE NOT EXISTS (SELECT * FROM u WHERE u.k = t.k)",
    "SELECT id FROM t WHERE EXISTS (SELECT * FROM u WHERE u.k = t.k AND u.w > t.v / 2)",
    "SELECT id FROM t WHERE NOT EXISTS (SELECT * FROM u WHERE u.k = t.k AND u.s <> t.s)",
    "SELECT id FROM t WHERE EXISTS (SELECT * FROM u WHERE u.w < t.v)",
    "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND u.s = t.s)",
    # uncorrelated EXISTS
    "SELECT id FROM t WHERE EXISTS (SELECT * FROM u WHERE w > 60)",
    "SELECT id FROM t WHERE NOT EXISTS (SELECT * FROM e)",
    "SELECT id FROM t WHERE EXISTS (SELECT * FROM e)",
    # IN / NOT IN, NULLs on either side
    "SELECT id FROM t WHERE k IN (SELECT k FROM u)",
    "SELECT id FROM t WHERE k NOT IN (SELECT k FROM u)",
    "SELECT id FROM t WHERE k NOT IN (SELECT k FROM un)",
    "SELECT id FROM t WHERE k NOT IN (SELECT k FROM e)",
    "SELECT id FROM t WHERE s IN (SELECT s FROM u)",
    "SELECT id FROM t WHERE s NOT IN (SELECT s FROM u WHERE s IS NOT NULL)",
    "SELECT id FROM t WHERE v IN (SELECT w * 2 FROM u)",
    "SELECT id FROM t WHERE k IN (SELECT k FROM u GROUP BY k HAVING count(*) > 1)",
    # correlated IN / NOT IN
    "SELECT id FROM t WHERE v NOT IN (SELECT w FROM u WHERE u.k = t.k)",
    "SELECT id FROM t WHERE v IN (SELECT w + 5 FROM u WHERE u.k = t.k)",
    "SELECT id FROM t WHERE s NOT IN (SELECT s FROM u WHERE u.w > t.v)",
    # IN / EXISTS as values and inside OR
    "SELECT id, k IN (SELECT k FROM u) AS m FROM t",
    "SELECT id, k NOT IN (SELECT k FROM un) AS m FROM t",
    "SELECT id, v IN (SELECT w FROM u WHERE u.k = t.k) AS m FROM t",
    "SELECT id, EXISTS (SELECT * FROM u WHERE u.k = t.k) AS m FROM t",
    "SELECT id FROM t WHERE v > 60 OR EXISTS (SELECT * FROM u WHERE u.k = t.k)",
    "SELECT id FROM t WHERE v > 60 OR k IN (SELECT k FROM u WHERE w > 20)",
    "SELECT id FROM t WHERE NOT (k IN (SELECT k FROM u)) OR id = 1",
    # scalar subqueries, uncorrelated: 1 row, 0 rows
    "SELECT id FROM t WHERE v > (SELECT avg(w) FROM u)",
    "SELECT id, (SELECT max(w) FROM u) AS m FROM t",
    "SELECT id, (SELECT w FROM u WHERE w = 25) AS m FROM t",
    "SELECT id, (SELECT w FROM u WHERE w = 1000) AS m FROM t",
    "SELECT id FROM t WHERE v = (SELECT w FROM u WHERE w = 1000)",
    "SELECT (SELECT count(*) FROM u) AS c",
    # correlated scalar with aggregates, including the count bug
    "SELECT id FROM t WHERE v > (SELECT avg(w) FROM u WHERE u.k = t.k)",
    "SELECT id, (SELECT count(*) FROM u WHERE u.k = t.k) AS c FROM t",
    "SELECT id, (SELECT count(w) + 1 FROM u WHERE u.k = t.k) AS c FROM t",
    "SELECT id, (SELECT sum(w) FROM u WHERE u.k = t.k) AS c FROM t",
    "SELECT id FROM t WHERE (SELECT count(*) FROM u WHERE u.k = t.k) = 0",
    "SELECT id FROM t WHERE v < (SELECT 2 * min(w) FROM u WHERE u.k = t.k AND u.s = t.s)",
    # correlated scalar without aggregate: at most one row per key here
    "SELECT id, (SELECT w FROM un WHERE un.k = t.k AND un.w <> 3) AS x FROM t",
    # subqueries in HAVING and with CTEs
    "SELECT k, sum(v) FROM t GROUP BY k HAVING sum(v) > (SELECT avg(w) FROM u)",
    "WITH c AS (SELECT k, sum(w) AS sw FROM u GROUP BY k) "
    "SELECT k FROM c WHERE sw = (SELECT max(sw) FROM c)",
    # nested: IN containing a correlated scalar
    "SELECT id FROM t WHERE k IN (SELECT k FROM u WHERE w > "
    "(SELECT avg(w) FROM un WHERE un.k = u.k) AND k IN (SELECT k FROM un))",
    # correlation pulled through GROUP BY / DISTINCT
    "SELECT id FROM t WHERE EXISTS (SELECT s FROM u WHERE u.k = t.k GROUP BY s HAVING count(*) > 1)",
    "SELECT id FROM t WHERE s IN (SELECT DISTINCT s FROM u WHERE u.k = t.k)",
    "SELECT id, (SELECT count(DISTINCT s) FROM u WHERE u.k = t.k) AS c FROM t",
    # JOIN ... ON with subqueries
    "SELECT t.id, un.w FROM t JOIN un ON t.k = un.k AND un.w < (SELECT avg(w) FROM un)",
    "SELECT t.id, un.w FROM t JOIN un ON t.k = un.k AND EXISTS (SELECT * FROM u WHERE u.w = un.w * 5)",
    # several subqueries in one WHERE
    "SELECT id FROM t WHERE EXISTS (SELECT * FROM u WHERE u.k = t.k) "
    "AND NOT EXISTS (SELECT * FROM un WHERE un.k = t.k AND un.w > 3) AND v > (SELECT min(w) FROM u)",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_subquery_matches_duckdb(db, sql):
    assert_matches_duckdb(sql, db, CONFIGS)


@pytest.mark.parametrize("sql", [
    "SELECT id FROM t ORDER BY (SELECT count(*) FROM u WHERE u.k = t.k) DESC, id",
    "SELECT id, v FROM t ORDER BY v - (SELECT max(w) FROM u) NULLS FIRST, id LIMIT 5",
])
def test_subquery_in_order_by(db, sql):
    assert_matches_duckdb(sql, db, CONFIGS, ordered=True)


def test_scalar_subquery_with_many_rows_fails(db):
    con = pqdb_with_views(db)
    with pytest.raises(ExecutionError, match="More than one row returned by a subquery"):
        con.sql("SELECT id, (SELECT w FROM u) FROM t").fetchall()
    with pytest.raises(ExecutionError, match="More than one row returned by a subquery"):
        con.sql("SELECT id, (SELECT w FROM u WHERE u.k = t.k) FROM t").fetchall()
    # no outer row evaluates it: no error (as DuckDB)
    assert con.sql("SELECT id FROM t WHERE id < 0 AND v = (SELECT w FROM u)").fetchall() == []


@pytest.mark.parametrize("sql, what", [
    ("SELECT id FROM t WHERE v > (SELECT w FROM u WHERE u.k = t.k LIMIT 1)", "LIMIT"),
    ("SELECT id FROM t WHERE v > (SELECT avg(w) FROM u WHERE u.k < t.k)", "equality"),
    ("SELECT id FROM t WHERE EXISTS (SELECT count(*) FROM u WHERE u.k = t.k)", "aggregate"),
    ("SELECT id FROM t WHERE EXISTS (SELECT * FROM u WHERE EXISTS "
     "(SELECT * FROM un WHERE un.k = t.k))", "more than one level"),
    ("SELECT k, sum(v) FROM t GROUP BY k HAVING sum(v) > (SELECT avg(w) FROM u WHERE u.k = t.k)",
     "correlated subquery after GROUP BY"),
    ("SELECT k FROM t GROUP BY k, (SELECT max(w) FROM u)", "subquery in GROUP BY"),
    ("SELECT id FROM t WHERE v = ANY (SELECT w FROM u)", "ANY"),
    ("SELECT t.id FROM t LEFT JOIN un ON t.k = un.k AND un.w IN (SELECT w FROM u)", "LEFT JOIN"),
])
def test_unsupported_correlation_is_named(db, sql, what):
    con = pqdb_with_views(db)
    with pytest.raises(UnsupportedFeatureError, match=what):
        con.sql(sql).fetchall()
