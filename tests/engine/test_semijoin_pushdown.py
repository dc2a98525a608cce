"""Semi and anti joins pushed down to the input that holds their keys
(planner/rules/semijoin_pushdown.py): results equal DuckDB's at 1, 2 and 8
threads and small blocks, where the rule fires (through inner and cross
joins, projections, filters, the preserved side of a left join, with
residuals on both sides, NULL keys) and where it must not (keys from both
join inputs, the NULL-padded side of a left join, below a LIMIT, NOT IN,
a subquery side larger than the left input)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from planner import plan_query
from planner.explain import explain
from planner import optimizer
from planner.rules.semijoin_pushdown import semijoin_pushdown
from tests.connections import pqdb_with_views
from tests.engine.test_executor_helpers import assert_rows_equal, duck

CONFIGS = [(1, 1000), (2, 700), (8, 1000)]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(23)
    root = tmp_path_factory.mktemp("sjp")
    nd, nf, ng = 2000, 40_000, 5000
    tables = {
        "d": pa.table({
            "k": pa.array(np.arange(nd), mask=rng.random(nd) < 0.02, type=pa.int64()),
            "cat": pa.array(rng.integers(0, 20, nd), pa.int64()),
            "name": pa.array([f"name-{i}" if i % 3 else f"a-long-dimension-name-{i}"
                              for i in range(nd)]),
        }),
        "f": pa.table({
            "k": pa.array(rng.integers(0, nd + 100, nf), mask=rng.random(nf) < 0.03,
                          type=pa.int64()),
            "k2": pa.array(rng.integers(0, 3000, nf), pa.int64()),
            "v": pa.array(rng.integers(-50, 100, nf), pa.int64()),
        }),
        "g": pa.table({
            "k": pa.array(rng.integers(0, nd + 100, ng), mask=rng.random(ng) < 0.05,
                          type=pa.int64()),
            "w": pa.array(rng.integers(0, 30, ng), pa.int64()),
        }),
    }
    paths = {}
    for name, t in tables.items():
        paths[name] = str(root / f"{name}.parquet")
        pq.write_table(t, paths[name], row_group_size=900)
    return paths


def _pushed(con, sql, monkeypatch) -> bool:
    """Whether the rule changes the plan."""
    with_rule = explain(plan_query(sql, con.catalog))
    with monkeypatch.context() as m:
        m.setattr(optimizer, "RULES", tuple(r for r in optimizer.RULES
                                            if r is not semijoin_pushdown))
        without = explain(plan_query(sql, con.catalog))
    return with_rule != without


def _check(files, sql, pushed, monkeypatch):
    want = duck(sql, **files)
    ordered = "ORDER BY" in sql
    for threads, rows in CONFIGS:
        con = pqdb_with_views(files, threads=threads, block_rows=rows)
        assert _pushed(con, sql, monkeypatch) == pushed
        assert_rows_equal(con.sql(sql).fetchall(), want, ordered=ordered)


FIRES = [
    # IN through an inner join to the dimension side (NULL keys on all sides)
    """SELECT f.v, d.name FROM f JOIN d ON f.k = d.k
       WHERE d.k IN (SELECT k FROM g WHERE w < 4)""",
    # EXISTS with a residual over both sides
    """SELECT f.v, d.k FROM f, d WHERE f.k = d.k
       AND EXISTS (SELECT 1 FROM g WHERE g.k = d.k AND g.w > d.cat + 5 AND g.w < 9)""",
    # NOT EXISTS (anti join) with a residual
    """SELECT f.v, d.k FROM f, d WHERE f.k = d.k
       AND NOT EXISTS (SELECT 1 FROM g WHERE g.k = d.k AND g.w > d.cat + 3 AND g.w < 12)""",
    # the preserved side of a left join
    """SELECT d.k, f.v FROM d LEFT JOIN f ON d.k = f.k AND f.v > 90
       WHERE d.k IN (SELECT k FROM g WHERE w = 3)""",
    # through a projection that renames, and an aggregate above
    """SELECT kk, count(*), sum(v) FROM
         (SELECT d.k AS kk, f.v AS v FROM f JOIN d ON f.k = d.k) x
       WHERE kk IN (SELECT k FROM g WHERE w < 3) GROUP BY kk""",
]


@pytest.mark.parametrize("sql", FIRES)
def test_pushdown_fires_and_matches_duckdb(files, sql, monkeypatch):
    _check(files, sql, True, monkeypatch)


NEVER = [
    # the key reads both join inputs
    """SELECT f.v, d.k FROM f JOIN d ON f.k = d.k
       WHERE f.k2 + d.cat IN (SELECT k FROM g WHERE w < 4)""",
    # the key is on the NULL-padded side of a left join
    """SELECT d.k, f.v FROM d LEFT JOIN f ON d.k = f.k AND f.v > 95
       WHERE f.k2 IN (SELECT k FROM g WHERE w < 4)""",
    # NOT IN keeps SQL's NULL rules (a mark join, never moved)
    """SELECT f.v, d.k FROM f JOIN d ON f.k = d.k
       WHERE d.k NOT IN (SELECT k FROM g WHERE w < 4)""",
    # the subquery side is larger than the joined rows: the engine builds on them
    """SELECT f.v, d.k FROM f JOIN d ON f.k = d.k
       WHERE d.cat = 3 AND d.name LIKE 'name-1%' AND d.k IN (SELECT k FROM f)""",
]


@pytest.mark.parametrize("sql", NEVER)
def test_pushdown_does_not_fire_where_it_must_not(files, sql, monkeypatch):
    _check(files, sql, False, monkeypatch)


def test_pushdown_stops_above_a_limit(files, monkeypatch):
    """The join moves to its input, never below the LIMIT that input ends in."""
    sql = """SELECT x.v, d.k FROM (SELECT * FROM f ORDER BY v, k2, k LIMIT 30000) x
             JOIN d ON x.k = d.k WHERE x.k IN (SELECT k FROM g WHERE w < 4)"""
    con = pqdb_with_views(files, threads=2, block_rows=1000)
    plan = plan_query(sql, con.catalog)
    stack = [plan]
    while stack:                # no semi join anywhere below the LIMIT
        n = stack.pop()
        if type(n).__name__ == "Limit":
            assert "Join semi" not in explain(n) and "Join semi" not in \
                "\n".join(explain(c) for c in n.children), explain(plan)
            continue
        stack.extend(n.children)
    _check(files, sql, True, monkeypatch)
