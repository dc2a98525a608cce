"""A subplan the query repeats (a CTE referenced twice) is computed once
(engine/executor.py, planner/fingerprint.py), with DuckDB's results."""

from __future__ import annotations

import pytest

from engine import executor
from planner import logical as L
from planner.fingerprint import fingerprint
from planner.expressions import Call, ColumnRef, Literal
from planner.types import BIGINT, DOUBLE, DataType
from tpch import answers
from tests.connections import pqdb_with_tpch
from tpch.queries import query_text


def _count_aggregates(monkeypatch):
    calls = []
    original = executor._Executor._materialize

    def counting(self, node):
        if isinstance(node, L.Aggregate):
            calls.append(node)
        return original(self, node)
    monkeypatch.setattr(executor._Executor, "_materialize", counting)
    return calls


CTE_TWICE = """
WITH rev AS (SELECT l_suppkey AS s, sum(l_extendedprice) AS r FROM lineitem
             WHERE l_quantity < 20 GROUP BY l_suppkey)
SELECT a.s, a.r FROM rev a, rev b WHERE a.s = b.s + 1 AND a.r > b.r ORDER BY a.s"""

CTE_DIFFERENT = """
WITH r1 AS (SELECT l_suppkey AS s, sum(l_extendedprice) AS r FROM lineitem
            WHERE l_quantity < 20 GROUP BY l_suppkey),
     r2 AS (SELECT l_suppkey AS s, sum(l_extendedprice) AS r FROM lineitem
            WHERE l_quantity < 21 GROUP BY l_suppkey)
SELECT r1.s, r1.r - r2.r FROM r1, r2 WHERE r1.s = r2.s ORDER BY 1"""


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("sql,aggregates", [(query_text(15), 2), (CTE_TWICE, 1),
                                             (CTE_DIFFERENT, 2)],
                         ids=["q15", "cte-twice", "cte-different"])
def test_repeated_subplan_computed_once(sql, aggregates, threads, tpch_sf001, duckdb_tpch,
                                        monkeypatch):
    con = pqdb_with_tpch(tpch_sf001, threads=threads)
    calls = _count_aggregates(monkeypatch)
    result = con.sql(sql)
    assert answers.compare_rows(result.fetchall(), duckdb_tpch.execute(sql).fetchall(),
                                result.columns) is None
    # Q15: the revenue aggregate once, plus max() over it
    assert len(calls) == aggregates


def test_fingerprint_tells_types_and_literals_apart():
    one_int, one_float = Literal(1, BIGINT), Literal(1.0, DOUBLE)
    assert fingerprint(one_int) != fingerprint(one_float)
    col = ColumnRef(0, BIGINT, "x")
    as_dec = Call("cast", [col], DataType("DECIMAL", 18, 2))
    as_dbl = Call("cast", [col], DOUBLE)
    assert repr(as_dec) == repr(as_dbl)               # EXPLAIN cannot tell them apart
    assert fingerprint(as_dec) != fingerprint(as_dbl)
    assert fingerprint(Call("cast", [ColumnRef(0, BIGINT, "x")], DOUBLE)) == fingerprint(as_dbl)
