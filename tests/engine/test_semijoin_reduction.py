"""Semi-join reduction of grouped join inputs (planner/rules/semijoin_reduction.py):
where it fires the aggregation reads only rows whose group key the other
side has; results equal DuckDB's at 1, 2 and 8 threads and small blocks,
where it fires and where it must not (right/full joins, NOT IN, LIMIT and
window functions over the aggregate, unfiltered or unselective sources,
NULL keys on both sides)."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from planner import logical as L
from planner import optimizer
from planner.rules.semijoin_reduction import semijoin_reduction
from tests.connections import pqdb_with_views
from tests.engine.test_executor_helpers import assert_matches_duckdb, assert_rows_equal, duck

CONFIGS = [(1, 1000), (2, 700), (8, 1000)]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(17)
    root = tmp_path_factory.mktemp("sjr")
    nd = 2000
    dk = np.arange(nd, dtype=np.int64)
    d = pa.table({
        "k": pa.array(dk, mask=rng.random(nd) < 0.02),
        "cat": pa.array(rng.integers(0, 20, nd), pa.int32()),
        "name": pa.array([f"name-{i}" if i % 3 else f"a-long-dimension-name-{i}"
                          for i in range(nd)]),
    })
    nf = 40_000
    fk = rng.integers(0, nd + 200, nf)            # some keys have no dimension row
    f = pa.table({
        "k": pa.array(fk, mask=rng.random(nf) < 0.03),
        "k2": pa.array(rng.integers(0, 5, nf), pa.int64()),
        "v": pa.array(rng.integers(-50, 100, nf), pa.int64()),
        "q": pa.array([None if x < 0 else decimal.Decimal(int(x)).scaleb(-2)
                       for x in rng.integers(-5, 5000, nf)], pa.decimal128(12, 2)),
    })
    paths = {"d": str(root / "d.parquet"), "f": str(root / "f.parquet")}
    pq.write_table(d, paths["d"], row_group_size=700)
    pq.write_table(f, paths["f"], row_group_size=6000)
    return paths


def _reductions(con, sql) -> int:
    """Aggregations whose input the rule semi-joined to a source."""
    from planner import plan_query
    plan = plan_query(sql, con.catalog)
    count, stack = 0, [plan]
    while stack:
        n = stack.pop()
        if isinstance(n, L.Aggregate) and isinstance(n.child, L.Join) and \
                n.child.kind == "semi":
            count += 1
        stack.extend(n.children)
    return count


def _check(files, sql, reductions, ordered=False):
    want = duck(sql, **files)
    for threads, rows in CONFIGS:
        con = pqdb_with_views(files, threads=threads, block_rows=rows)
        assert _reductions(con, sql) == reductions
        assert_rows_equal(con.sql(sql).fetchall(), want, ordered=ordered)


FIRES = [
    # Q17's shape: a correlated aggregate, decorrelated into a left join
    """SELECT d.k, d.name FROM d WHERE d.cat = 3
       AND (SELECT sum(v) FROM f WHERE f.k = d.k) > 100""",
    # a correlated count: dimension rows without a group count 0 (the count bug)
    """SELECT d.k FROM d WHERE d.cat = 6 AND (SELECT count(*) FROM f WHERE f.k = d.k) < 18""",
    # an explicit inner join with a grouped derived table (NULL keys in both)
    """SELECT d.k, d.name, s.total, s.n FROM d
       JOIN (SELECT k, sum(v) AS total, count(*) AS n FROM f GROUP BY k) s ON d.k = s.k
       WHERE d.cat = 3""",
    # a left join keeps the dimension rows without a group
    """SELECT d.k, s.total FROM d
       LEFT JOIN (SELECT k, sum(q) AS total FROM f GROUP BY k) s ON d.k = s.k
       WHERE d.cat = 4 ORDER BY d.k NULLS FIRST""",
    # the aggregate on the left side of the join
    """SELECT s.k, s.total FROM (SELECT k, avg(v) AS total FROM f GROUP BY k) s, d
       WHERE s.k = d.k AND d.cat = 7 AND d.name LIKE 'name-%'""",
    # IN with GROUP BY and HAVING (semi join; the key passes a projection and a filter)
    """SELECT d.k, d.name FROM d WHERE d.cat = 5
       AND d.k IN (SELECT k FROM f GROUP BY k HAVING count(*) > 18)""",
    # EXISTS over a grouped subquery
    """SELECT d.k FROM d WHERE d.cat = 2 AND EXISTS
       (SELECT 1 FROM (SELECT k, max(v) AS m FROM f GROUP BY k) g WHERE g.k = d.k AND g.m > 97)""",
    # NOT EXISTS (anti join): unmatched groups never matter
    """SELECT d.k FROM d WHERE d.cat = 2 AND NOT EXISTS
       (SELECT 1 FROM (SELECT k, max(v) AS m FROM f GROUP BY k) g WHERE g.k = d.k AND g.m > 97)""",
    # two keys, each reduced by the filtered dimension (k2 by CAST(d.cat AS BIGINT))
    """SELECT d.k, s.k2, s.total FROM d
       JOIN (SELECT k, k2, sum(v) AS total FROM f GROUP BY k, k2) s ON d.k = s.k AND d.cat = s.k2
       WHERE d.cat = 1""",
    # a group expression, and a key passed on through an inner join
    """SELECT d.k, s.total FROM d JOIN d AS e ON d.k = e.k
       JOIN (SELECT k % 1000 AS m, sum(v) AS total FROM f GROUP BY k % 1000) s ON e.k = s.m
       WHERE d.cat = 8""",
]


@pytest.mark.parametrize("sql", FIRES)
def test_reduction_fires_and_matches_duckdb(files, sql):
    _check(files, sql, reductions=1, ordered="ORDER BY" in sql)


NEVER = [
    # right and full joins output the groups nobody matches
    """SELECT d.k, s.k, s.total FROM d
       RIGHT JOIN (SELECT k, sum(v) AS total FROM f GROUP BY k) s ON d.k = s.k AND d.cat = 3""",
    """SELECT d.k, s.k, s.total FROM (SELECT * FROM d WHERE cat = 3) d
       FULL JOIN (SELECT k, sum(v) AS total FROM f GROUP BY k) s ON d.k = s.k""",
    # NOT IN: a NULL group key makes unmatched rows NULL (mark_in)
    """SELECT d.k, d.k NOT IN (SELECT k FROM f GROUP BY k HAVING count(*) > 22) FROM d
       WHERE d.cat = 3""",
    # LIMIT over the groups picks rows that the filter would change
    """SELECT d.k, s.total FROM d
       JOIN (SELECT k, sum(v) AS total FROM f GROUP BY k ORDER BY total DESC, k LIMIT 40) s
       ON d.k = s.k WHERE d.cat = 3""",
    # a window over the groups sees all of them
    """SELECT d.k, s.r FROM d
       JOIN (SELECT k, rank() OVER (ORDER BY sum(v) DESC) AS r FROM f GROUP BY k) s
       ON d.k = s.k WHERE d.cat = 3""",
    # no selective source: every dimension row
    """SELECT d.k, s.total FROM d
       JOIN (SELECT k, sum(v) AS total FROM f GROUP BY k) s ON d.k = s.k""",
    # an ungrouped aggregate
    """SELECT d.k FROM d WHERE d.cat = 3 AND d.k < (SELECT avg(v) FROM f)""",
]


@pytest.mark.parametrize("sql", NEVER)
def test_reduction_does_not_fire_where_it_must_not(files, sql):
    _check(files, sql, reductions=0)


def test_rule_off_gives_the_same_plan_results(files, monkeypatch):
    """The reduced plan and the unreduced one answer alike (and the rule is
    what makes the difference)."""
    sql = FIRES[1]
    con = pqdb_with_views(files, threads=2, block_rows=1000)
    reduced = con.sql(sql).fetchall()
    monkeypatch.setattr(optimizer, "RULES", tuple(r for r in optimizer.RULES
                                                  if r is not semijoin_reduction))
    con = pqdb_with_views(files, threads=2, block_rows=1000)
    assert _reductions(con, sql) == 0
    assert_rows_equal(con.sql(sql).fetchall(), reduced)


@pytest.mark.parametrize("sql", [
    "SELECT sum(v) FROM f HAVING sum(v) > 0",
    "SELECT sum(v) FROM f HAVING sum(v) < 0",
    "SELECT k, sum(q) FROM f GROUP BY k HAVING sum(q) > 40000 AND count(*) > 3",
    "SELECT k2, count(*) FROM f GROUP BY k2 HAVING min(v) > 1000",
])
def test_having_applied_in_the_aggregation(files, sql, monkeypatch):
    """HAVING runs per merged partition (and on one-thread and small results)."""
    from engine.operators import aggregate
    monkeypatch.setattr(aggregate, "PARTITIONED_MERGE_GROUPS", 100)
    assert_matches_duckdb(sql, files, CONFIGS)
