"""TPC-H queries: output names/types against DuckDB, and plan shapes
(pushdown, pruning, join keys, join order)."""

import pytest

from planner import plan_query
from planner.explain import explain
from planner.expressions import ColumnRef, walk
from planner.logical import Aggregate, Filter, Join, Node, Project, Scan

from .helpers import nodes
from .tpch_texts import QUERIES


def scans(node: Node) -> dict[str, Scan]:
    return {n.alias: n for n in nodes(node) if isinstance(n, Scan)}


def joins(node: Node) -> list[Join]:
    return [n for n in nodes(node) if isinstance(n, Join)]


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_output_names_and_types_match_duckdb(name, tpch_catalog, duckdb_tpch):
    plan = plan_query(QUERIES[name], tpch_catalog)
    expected = [(r[0], r[1]) for r in duckdb_tpch.execute("describe " + QUERIES[name]).fetchall()]
    assert [(f.name, str(f.type)) for f in plan.schema] == expected


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_no_cross_products_and_no_filters_left_above_joins(name, tpch_catalog):
    plan = plan_query(QUERIES[name], tpch_catalog)
    for j in joins(plan):
        assert j.kind == "inner" and j.left_keys, explain(plan)
    for n in nodes(plan):
        if isinstance(n, Filter):
            assert not any(isinstance(x, Join) for x in nodes(n.child)), explain(plan)


def test_q1_pushdown_and_pruning(tpch_catalog):
    plan = plan_query(QUERIES["q1"], tpch_catalog)
    scan = scans(plan)["lineitem"]
    assert [f.name for f in scan.schema] == [
        "l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_returnflag",
        "l_linestatus", "l_shipdate"]
    (flt,) = scan.filters
    # l_shipdate <= DATE '1998-09-02': compared as int32 days, not timestamps
    assert flt.func == "le" and isinstance(flt.args[0], ColumnRef)
    assert str(flt.args[1].type) == "DATE" and flt.args[1].value == 10471
    assert not any(isinstance(n, Filter) for n in nodes(plan))


def test_q6_all_conjuncts_in_scan(tpch_catalog):
    plan = plan_query(QUERIES["q6"], tpch_catalog)
    scan = scans(plan)["lineitem"]
    assert len(scan.filters) == 5
    assert sorted(f.name for f in scan.schema) == [
        "l_discount", "l_extendedprice", "l_quantity", "l_shipdate"]
    between = [f for f in scan.filters if f.func in ("ge", "le") and f.args[0].name == "l_discount"]
    assert [(f.func, f.args[1].value) for f in between] == [("ge", 5), ("le", 7)]


def test_q3_join_order_and_build_sides(tpch_catalog):
    plan = plan_query(QUERIES["q3"], tpch_catalog)
    s = scans(plan)
    assert len(s["customer"].filters) == 1 and len(s["orders"].filters) == 1
    assert len(s["lineitem"].filters) == 1
    assert [f.name for f in s["customer"].schema] == ["c_custkey", "c_mktsegment"]
    top = joins(plan)[0]
    # lineitem (largest) probes; customer joins orders below on the build side
    assert "lineitem" in scans(top.left) and "lineitem" not in scans(top.right)
    inner = joins(top.right)[0]
    assert set(scans(inner.right)) == {"customer"}


def test_join_order_is_not_textual(tpch_catalog):
    sql = ("select count(*) from lineitem, orders, customer "
           "where l_orderkey = o_orderkey and o_custkey = c_custkey")
    plan = plan_query(sql, tpch_catalog)
    for j in joins(plan):
        from planner.cardinality import estimate
        assert estimate(j.right) <= estimate(j.left), explain(plan)
    top = joins(plan)[0]
    assert "lineitem" in scans(top.left)
    # every key pair compares the same types
    for j in joins(plan):
        for lk, rk in zip(j.left_keys, j.right_keys):
            assert lk.type == rk.type


def test_q5_uses_every_equality(tpch_catalog):
    plan = plan_query(QUERIES["q5"], tpch_catalog)
    keys = sum(len(j.left_keys) for j in joins(plan))
    assert keys == 6 and len(joins(plan)) == 5
    assert scans(plan)["region"].filters[0].func == "eq"


def test_explicit_join_and_where_pushdown(tpch_catalog):
    sql = ("select n_name, count(*) from nation join region on n_regionkey = r_regionkey "
           "where r_name = 'EUROPE' and n_nationkey > 3 group by n_name")
    plan = plan_query(sql, tpch_catalog)
    s = scans(plan)
    assert len(s["region"].filters) == 1 and len(s["nation"].filters) == 1
    (j,) = joins(plan)
    assert j.kind == "inner" and j.residual is None


def test_left_join_keeps_semantics(tpch_catalog):
    sql = ("select c_custkey, o_orderkey from customer left join orders "
           "on c_custkey = o_custkey and o_totalprice > 1000 where c_nationkey = 3")
    plan = plan_query(sql, tpch_catalog)
    (j,) = joins(plan)
    assert j.kind == "left" and len(j.left_keys) == 1 and j.residual is None
    assert "customer" in scans(j.left)
    s = scans(plan)
    assert len(s["orders"].filters) == 1 and len(s["customer"].filters) == 1


def test_aggregate_subquery_filter_pushdown(tpch_catalog):
    sql = ("select * from (select o_custkey, sum(o_totalprice) as total from orders "
           "group by o_custkey) t where o_custkey < 100 and total > 10")
    plan = plan_query(sql, tpch_catalog)
    assert len(scans(plan)["orders"].filters) == 1
    having = [n for n in nodes(plan) if isinstance(n, Filter)]
    assert len(having) == 1 and isinstance(having[0].child, Aggregate)


def test_count_star_reads_one_narrow_column(tpch_catalog):
    plan = plan_query("select count(*) from orders", tpch_catalog)
    assert [f.name for f in scans(plan)["orders"].schema] == ["o_orderdate"]   # 4 bytes


def test_count_star_with_a_filter_reads_only_the_filtered_column(tpch_catalog):
    """The Project above the scan used to keep its first expression, so the
    scan read l_orderkey beside l_shipdate (a filtered count took twice the
    decode)."""
    for sql in ("select count(*) from lineitem where l_shipdate < date '1995-01-01'",
                "select count(*) from (select l_orderkey + 1 from lineitem "
                "where l_shipdate < date '1995-01-01')"):
        plan = plan_query(sql, tpch_catalog)
        assert [f.name for f in scans(plan)["lineitem"].schema] == ["l_shipdate"]


def test_cte_used_twice(tpch_catalog):
    sql = ("with big as (select o_orderkey, o_custkey from orders where o_totalprice > 100000) "
           "select count(*) from big a, big b where a.o_custkey = b.o_custkey")
    plan = plan_query(sql, tpch_catalog)
    orders = [n for n in nodes(plan) if isinstance(n, Scan)]
    assert len(orders) == 2 and all(len(s.filters) == 1 for s in orders)
    assert all(j.left_keys for j in joins(plan))


def test_explain_text(tpch_catalog):
    text = explain(plan_query(QUERIES["q3"], tpch_catalog))
    assert "Scan" in text and "Join inner" in text


def test_explain_module_renders_names_and_estimates(tpch_catalog):
    from planner.explain import explain as explain_plan
    text = explain_plan(plan_query(QUERIES["q6"], tpch_catalog))
    assert "l_shipdate >= DATE '1994-01-01'" in text
    assert "l_discount >= 0.05" in text
    # every line ends in the estimate and its source; without statistics the
    # sources are footer row counts and default selectivities
    import re
    for line in text.splitlines():
        assert re.search(r"  \(~[0-9,]+ rows, (footer|default)\)$", line), line
    assert "(~6,001,215 rows, footer)" not in text        # SF0.01
    assert re.search(r"\(~60,175 rows, footer\)", explain_plan(
        plan_query("select l_orderkey from lineitem", tpch_catalog)))


@pytest.mark.parametrize("name", ["q1", "q3", "q5", "q10", "q14"])
def test_a_cached_parse_is_shared_and_never_changed_by_planning(name, tpch_catalog):
    """Parsed statements are kept by their text (planner/frontend.py); the
    binder and the optimizer must leave the shared tree as parsed, and a
    second planning of it gives the same plan."""
    from planner.frontend import parse_statements, parse_uncached
    text = QUERIES[name]
    (first,) = parse_statements(text)
    (again,) = parse_statements(text)
    assert again.ast is first.ast
    before = first.ast.sql(dialect="duckdb")
    plans = [explain(plan_query(text, tpch_catalog)) for _ in range(2)]
    assert first.ast.sql(dialect="duckdb") == before
    assert first.ast == parse_uncached(text)
    assert plans[0] == plans[1]
