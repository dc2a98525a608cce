"""Subquery binding (DependentJoin + OuterRef) and decorrelation (plan shapes
of the TPC-H subquery queries; names and types against DuckDB)."""

from __future__ import annotations

from collections import Counter

import pytest

from planner import bind_query, plan_query
from planner.errors import UnsupportedFeatureError
from planner.explain import explain
from planner.expressions import Call, OuterRef, walk
from planner.logical import DependentJoin, Join, Node
from planner.rules.decorrelation import node_exprs
from tpch.queries import query_text

from .helpers import FakeCatalog, nodes


def join_kinds(plan: Node) -> Counter:
    return Counter(n.kind for n in nodes(plan) if isinstance(n, Join))


# bound: DependentJoin kinds; planned: join kinds that must appear
EXPECTED = {
    2: ({"single": 1}, {"left": 1}),
    4: ({"semi": 1}, {"semi": 1}),
    11: ({"single": 1}, {}),
    15: ({"single": 1}, {}),
    16: ({"mark_in": 1}, {"mark_in": 1}),
    17: ({"single": 1}, {"left": 1}),
    18: ({"semi": 1}, {"semi": 1}),
    20: ({"semi": 2, "single": 1}, {"semi": 3, "left": 1}),  # + semi-join reduction
    21: ({"semi": 1, "anti": 1}, {"semi": 1, "anti": 1}),
    22: ({"single": 1, "anti": 1}, {"anti": 1}),
}
# uncorrelated scalar over an ungrouped aggregate: joined with its one row
ONE_ROW_JOINS = {11, 15, 22}


@pytest.mark.parametrize("q", sorted(EXPECTED))
def test_binder_makes_dependent_joins(q, tpch_catalog):
    bound = bind_query(query_text(q), tpch_catalog)
    kinds = Counter(n.kind for n in nodes(bound) if isinstance(n, DependentJoin))
    assert kinds == Counter(EXPECTED[q][0]), explain(bound)


@pytest.mark.parametrize("q", sorted(EXPECTED))
def test_decorrelated_plan(q, tpch_catalog, duckdb_tpch):
    plan = plan_query(query_text(q), tpch_catalog)
    text = explain(plan)
    assert not any(isinstance(n, DependentJoin) for n in nodes(plan)), text
    assert not any(isinstance(e, OuterRef) for n in nodes(plan) for x in node_exprs(n)
                   for e in walk(x)), text
    kinds = join_kinds(plan)
    for kind, count in EXPECTED[q][1].items():
        assert kinds[kind] == count, text
    for n in nodes(plan):           # every subquery join became a hash join
        if isinstance(n, Join) and n.kind in ("semi", "anti", "left", "mark_in"):
            assert n.left_keys, text
    one_row = [n for n in nodes(plan) if isinstance(n, Join) and n.kind in ("cross", "inner")
               and _ungrouped_aggregate(n.right)]
    assert len(one_row) == (1 if q in ONE_ROW_JOINS else 0), text
    expected = [(r[0], r[1]) for r in duckdb_tpch.execute("describe " + query_text(q)).fetchall()]
    assert [(f.name, str(f.type)) for f in plan.schema] == expected


def _ungrouped_aggregate(node: Node) -> bool:
    from planner.logical import Aggregate, Project
    while isinstance(node, Project):
        node = node.child
    return isinstance(node, Aggregate) and not node.groups


def test_q21_keeps_inequality_as_residual(tpch_catalog):
    plan = plan_query(query_text(21), tpch_catalog)
    for n in nodes(plan):
        if isinstance(n, Join) and n.kind in ("semi", "anti"):
            assert len(n.left_keys) == 1 and n.residual is not None
            assert n.residual.func == "ne"


def test_count_bug_coalesces_empty_groups(small_dir):
    cat = FakeCatalog()
    sql = (f"SELECT a, (SELECT count(*) FROM '{small_dir}/u.parquet' u WHERE u.a = t.a) AS c "
           f"FROM '{small_dir}/t.parquet' t")
    plan = plan_query(sql, cat)
    assert join_kinds(plan)["left"] == 1
    assert any(isinstance(e, Call) and e.func == "coalesce"
               for n in nodes(plan) for x in node_exprs(n) for e in walk(x)), explain(plan)


def test_uncorrelated_exists_reads_one_row(small_dir):
    from planner.logical import Limit
    sql = (f"SELECT a FROM '{small_dir}/t.parquet' WHERE EXISTS "
           f"(SELECT * FROM '{small_dir}/u.parquet')")
    plan = plan_query(sql, FakeCatalog())
    assert any(isinstance(n, Limit) and n.limit == 1 for n in nodes(plan)), explain(plan)


def test_outer_reference_binds_to_enclosing_scope(small_dir):
    sql = (f"SELECT a FROM '{small_dir}/t.parquet' t WHERE EXISTS "
           f"(SELECT * FROM '{small_dir}/u.parquet' u WHERE u.a = t.a AND c > t.b)")
    bound = bind_query(sql, FakeCatalog())
    refs = [e for n in nodes(bound) for x in node_exprs(n) for e in walk(x)
            if isinstance(e, OuterRef)]
    assert sorted((r.name, r.index) for r in refs) == [("a", 0), ("b", 1)]


@pytest.mark.parametrize("sql, what", [
    ("SELECT a FROM '{d}/t.parquet' t WHERE b > (SELECT c FROM '{d}/u.parquet' u "
     "WHERE u.a = t.a LIMIT 1)", "LIMIT"),
    ("SELECT a FROM '{d}/t.parquet' t WHERE b > (SELECT sum(c) FROM '{d}/u.parquet' u "
     "WHERE u.a < t.a)", "equality"),
    ("SELECT a FROM '{d}/t.parquet' t WHERE b IN (SELECT t.a + c FROM '{d}/u.parquet' u)",
     "SELECT list"),
])
def test_undecorrelatable_subqueries_are_named(small_dir, sql, what):
    with pytest.raises(UnsupportedFeatureError, match=what):
        plan_query(sql.format(d=small_dir), FakeCatalog())


def test_subquery_must_return_one_column(small_dir):
    from planner.errors import BinderError
    with pytest.raises(BinderError, match="2 columns"):
        plan_query(f"SELECT a FROM '{small_dir}/t.parquet' WHERE a IN "
                   f"(SELECT a, c FROM '{small_dir}/u.parquet')", FakeCatalog())
