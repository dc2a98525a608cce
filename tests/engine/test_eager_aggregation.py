"""Eager aggregation (planner/rules/eager_aggregation.py) against DuckDB.

Each query runs twice on one connection: the first run collects the
statistics that let the rule fire, the second runs the rewritten plan
(asserted from EXPLAIN: a GROUP BY below the join).  Both must give
DuckDB's rows: left joins with customers without orders (count 0,
count(*) 1, sum NULL), NULL join keys on both sides, NULLs in the
aggregated columns, groups on the other input's and the aggregated
input's columns, a residual, expressions as arguments, inner joins with
either input aggregated, and shapes where the rule must not fire."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from tests.engine.test_executor_helpers import assert_rows_equal, duck


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    d = tmp_path_factory.mktemp("eager")
    rng = np.random.default_rng(21)
    nc, no = 3_000, 60_000
    c_key = np.arange(nc, dtype=np.int64)
    customers = pa.table({
        "c_id": pa.array(c_key, mask=(c_key % 997) == 5),               # a few NULL keys
        "c_region": pa.array(c_key % 7),
        "c_name": pa.array([f"customer-{i:05d}" for i in c_key]),
    })
    o_cust = rng.integers(0, nc * 2 // 3, no)       # a third of the customers: no orders
    orders = pa.table({
        "o_id": pa.array(np.arange(no, dtype=np.int64)),
        "o_cust": pa.array(o_cust, mask=rng.random(no) < 0.01),
        "o_qty": pa.array(rng.integers(1, 50, no), mask=rng.random(no) < 0.05,
                          type=pa.int32()),
        "o_price": pa.array([decimal.Decimal(int(x)).scaleb(-2)
                             for x in rng.integers(100, 10 ** 6, no)], pa.decimal128(12, 2)),
        "o_w": pa.array(rng.normal(size=no)),
        "o_status": pa.array(rng.choice(["F", "O", "P"], no)),
    })
    paths = {}
    for name, t in (("customers", customers), ("orders", orders)):
        paths[name] = str(d / f"{name}.parquet")
        pq.write_table(t, paths[name], row_group_size=20_000)
    return paths


FIRES = [
    # Q13's shape: count of the right side of a left join
    "SELECT c_id, count(o_id) AS n FROM customers LEFT JOIN orders ON c_id = o_cust GROUP BY c_id",
    "SELECT n, count(*) FROM (SELECT c_id, count(o_id) AS n FROM customers LEFT JOIN orders "
    "ON c_id = o_cust GROUP BY c_id) GROUP BY n",
    # count(*), sums (NULL when no partner), min/max, NULLs in arguments
    "SELECT c_id, c_name, count(*), sum(o_qty), min(o_price), max(o_status), sum(o_price), "
    "count(o_qty) FROM customers LEFT JOIN orders ON c_id = o_cust GROUP BY c_id, c_name",
    # groups on the other input only (several customers per group)
    "SELECT c_region, count(o_id), sum(o_qty), max(o_w) FROM customers LEFT JOIN orders "
    "ON c_id = o_cust GROUP BY c_region",
    # inner joins: expressions of the aggregated input, its columns as groups
    "SELECT c_region, o_status, sum(o_qty * 2), count(*), sum(o_w) FROM customers JOIN orders "
    "ON c_id = o_cust GROUP BY c_region, o_status",
    "SELECT c_name, sum(o_price) FROM orders JOIN customers ON o_cust = c_id GROUP BY c_name",
    # a residual over the aggregated input's grouped column
    "SELECT c_region, count(*) FROM customers JOIN orders ON c_id = o_cust "
    "AND o_status <> c_name GROUP BY c_region",
    # the join keeps few orders (TPC-H Q18's shape): the join's key filter
    # reaches the orders scan below the pre-aggregation, which then sees
    # only those orders
    "SELECT c_name, sum(o_qty), count(*) FROM orders JOIN customers ON o_cust = c_id "
    "WHERE c_name LIKE '%77%' GROUP BY c_name",
]

KEEPS = [
    # an argument over both inputs, DISTINCT, avg, an expression under a left join
    "SELECT c_region, sum(o_qty + c_region) FROM customers JOIN orders ON c_id = o_cust "
    "GROUP BY c_region",
    "SELECT c_region, count(DISTINCT o_status) FROM customers JOIN orders ON c_id = o_cust "
    "GROUP BY c_region",
    "SELECT c_region, avg(o_qty) FROM customers JOIN orders ON c_id = o_cust GROUP BY c_region",
    "SELECT c_id, sum(coalesce(o_qty, 1)) FROM customers LEFT JOIN orders ON c_id = o_cust "
    "GROUP BY c_id",
    "SELECT c_id, count(*) FROM customers LEFT JOIN orders ON c_id = o_cust "
    "AND o_qty > c_region GROUP BY c_id",
    # a left join keeps few orders: no key filter reaches its orders (the
    # built side), so aggregating all of them first would cost more
    "SELECT c_name, sum(o_qty), count(*) FROM customers LEFT JOIN orders ON c_id = o_cust "
    "WHERE c_name LIKE '%77%' GROUP BY c_name",
]


def _connect(shop, threads):
    con = engine.connect(threads=threads)
    for name, path in shop.items():
        con.sql(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    return con


def _pre_aggregated(con, sql) -> bool:
    """A GROUP BY below a join in the plan."""
    lines = con.sql("EXPLAIN " + sql).fetchall()[0][0].splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("Join"):
            depth = len(line) - len(line.lstrip())
            for below in lines[i + 1:]:
                if len(below) - len(below.lstrip()) <= depth:
                    break
                if below.lstrip().startswith("Aggregate"):
                    return True
    return False


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("sql", FIRES)
def test_fires_and_matches_duckdb(shop, sql, threads):
    con = _connect(shop, threads)
    want = duck(sql, **shop)
    assert_rows_equal(con.sql(sql).fetchall(), want, ordered=False)      # collects
    assert _pre_aggregated(con, sql), con.sql("EXPLAIN " + sql).fetchall()[0][0]
    assert_rows_equal(con.sql(sql).fetchall(), want, ordered=False)


@pytest.mark.parametrize("sql", KEEPS)
def test_keeps_and_matches_duckdb(shop, sql):
    con = _connect(shop, 2)
    want = duck(sql, **shop)
    assert_rows_equal(con.sql(sql).fetchall(), want, ordered=False)
    assert not _pre_aggregated(con, sql)
    assert_rows_equal(con.sql(sql).fetchall(), want, ordered=False)


def test_without_statistics_nothing_moves(shop):
    con = _connect(shop, 2)
    con.sql("SET statistics = false")
    sql = FIRES[0]
    con.sql(sql).fetchall()
    assert not _pre_aggregated(con, sql)


def test_the_join_filter_reaches_below_the_pre_aggregation(shop):
    """The pre-aggregation of a selective join aggregates only the orders
    whose customer is in the built side (EXPLAIN ANALYZE: its rows are the
    ones left after the join's key filter)."""
    con = _connect(shop, 2)
    sql = FIRES[-1]
    con.sql(sql).fetchall()
    plan = con.sql("EXPLAIN ANALYZE " + sql).fetchall()[0][0].splitlines()
    pre = [line for line in plan if line.lstrip().startswith("Aggregate groups=[o_cust]")]
    assert len(pre) == 1 and "after a join filter" in pre[0], "\n".join(plan)
    (scan,) = [line for line in plan if "Scan" in line and "o_cust" in line]
    skipped = plan[plan.index(scan) + 1]
    assert "join filter" in skipped, "\n".join(plan)


@pytest.mark.parametrize("sql", [
    # a GROUP BY subquery probing a selective join: filtered below the GROUP BY
    "SELECT c_name, s, n FROM (SELECT o_cust, sum(o_qty) AS s, count(*) AS n FROM orders "
    "GROUP BY o_cust) t JOIN customers ON o_cust = c_id WHERE c_name LIKE '%77%'",
    # the key among other group columns
    "SELECT c_name, o_status, s FROM (SELECT o_status, o_cust, sum(o_qty) AS s FROM orders "
    "GROUP BY o_status, o_cust) t JOIN customers ON o_cust = c_id WHERE c_name LIKE '%77%'",
    # two identical pre-aggregations, computed once for both joins: the
    # first join's filter must not drop the rows the second one needs
    "SELECT c_name, sum(o_qty), count(*) FROM orders JOIN customers ON o_cust = c_id "
    "WHERE c_name LIKE '%77%' GROUP BY c_name UNION ALL "
    "SELECT c_name, sum(o_qty), count(*) FROM orders JOIN customers ON o_cust = c_id "
    "WHERE c_name LIKE '%1%' GROUP BY c_name",
    # a GROUP BY the plan reads twice (a CTE)
    "WITH t AS (SELECT o_cust, sum(o_qty) AS s FROM orders GROUP BY o_cust) "
    "SELECT (SELECT count(*) FROM t), (SELECT sum(s) FROM t), count(*), sum(s) "
    "FROM t JOIN customers ON o_cust = c_id WHERE c_name LIKE '%77%'",
    # HAVING above the GROUP BY
    "SELECT c_name, s FROM (SELECT o_cust, sum(o_qty) AS s FROM orders GROUP BY o_cust "
    "HAVING count(*) > 25) t JOIN customers ON o_cust = c_id WHERE c_name LIKE '%7%'",
])
@pytest.mark.parametrize("threads", [1, 2])
def test_group_by_under_a_filtering_join_matches_duckdb(shop, sql, threads):
    con = _connect(shop, threads)
    want = duck(sql, **shop)
    for _ in range(2):                      # without and with statistics
        assert_rows_equal(con.sql(sql).fetchall(), want, ordered=False)
