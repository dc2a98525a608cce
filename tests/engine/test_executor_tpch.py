"""TPC-H shaped plans (SF 0.01) built by hand, compared with DuckDB."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from planner import logical as L
from planner import types as T
from planner.expressions import AggregateCall, Call, ColumnRef, Literal
from tests.engine.test_executor_helpers import (agg, assert_rows_equal, call, duck, lit, ref,
                                                run, scan)

CONFIGS = [(1, 65536), (2, 4096), (4, 1000)]


def days(y, m, d):
    return (dt.date(y, m, d) - dt.date(1970, 1, 1)).days


@pytest.fixture(scope="module")
def tp(tpch_sf001):
    return {t: os.path.join(tpch_sf001, f"{t}.parquet")
            for t in ("lineitem", "orders", "customer", "nation", "supplier")}


def q1_plan(path):
    s = scan(path, ["l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_returnflag",
                    "l_linestatus", "l_shipdate"])
    c = {f.name: ColumnRef(i, f.type, f.name) for i, f in enumerate(s.schema)}
    s.filters = [call("le", c["l_shipdate"], lit(days(1998, 9, 2), T.DATE))]
    one = Literal(100, T.DECIMAL(3, 2))
    t_sub = T.arithmetic_type("sub", one.type, c["l_discount"].type)
    disc_price = Call("mul", [c["l_extendedprice"], Call("sub", [one, c["l_discount"]], t_sub)],
                      T.arithmetic_type("mul", c["l_extendedprice"].type, t_sub))
    t_add = T.arithmetic_type("add", one.type, c["l_tax"].type)
    charge = Call("mul", [disc_price, Call("add", [one, c["l_tax"]], t_add)],
                  T.arithmetic_type("mul", disc_price.type, t_add))
    aggs = [agg("sum", c["l_quantity"]), agg("sum", c["l_extendedprice"]),
            agg("sum", disc_price), agg("sum", charge), agg("avg", c["l_quantity"]),
            agg("avg", c["l_extendedprice"]), agg("avg", c["l_discount"]), agg("count_star")]
    a = L.Aggregate(s, [c["l_returnflag"], c["l_linestatus"]], aggs)
    return L.Sort(a, [L.SortKey(ColumnRef(0, T.VARCHAR)), L.SortKey(ColumnRef(1, T.VARCHAR))])


def test_q1(tp):
    want = duck("""select l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice),
        sum(l_extendedprice*(1-l_discount)), sum(l_extendedprice*(1-l_discount)*(1+l_tax)),
        avg(l_quantity), avg(l_extendedprice), avg(l_discount), count(*) from lineitem
        where l_shipdate <= date '1998-09-02' group by 1, 2 order by 1, 2""",
                lineitem=tp["lineitem"])
    for threads, rows in CONFIGS:
        assert_rows_equal(run(q1_plan(tp["lineitem"]), threads, rows), want, ordered=True)


def test_q3(tp):
    cust = scan(tp["customer"], ["c_custkey", "c_mktsegment"])
    cust.filters = [call("eq", ref(cust, "c_mktsegment"), lit("BUILDING", T.VARCHAR))]
    orders = scan(tp["orders"], ["o_orderkey", "o_custkey", "o_orderdate", "o_shippriority"])
    orders.filters = [call("lt", ref(orders, "o_orderdate"), lit(days(1995, 3, 15), T.DATE))]
    li = scan(tp["lineitem"], ["l_orderkey", "l_extendedprice", "l_discount", "l_shipdate"])
    li.filters = [call("gt", ref(li, "l_shipdate"), lit(days(1995, 3, 15), T.DATE))]
    oc = L.Join(orders, cust, "inner", [ref(orders, "o_custkey")], [ref(cust, "c_custkey")])
    j = L.Join(li, oc, "inner", [ref(li, "l_orderkey")], [ref(oc, "o_orderkey")])
    off = len(li.schema)
    one = Literal(100, T.DECIMAL(3, 2))
    t_sub = T.arithmetic_type("sub", one.type, ref(j, "l_discount").type)
    rev = Call("mul", [ref(j, "l_extendedprice"), Call("sub", [one, ref(j, "l_discount")], t_sub)],
               T.arithmetic_type("mul", ref(j, "l_extendedprice").type, t_sub))
    g = L.Aggregate(j, [ref(j, "l_orderkey"), ref(oc, "o_orderdate", off),
                        ref(oc, "o_shippriority", off)], [agg("sum", rev)])
    plan = L.Limit(L.Sort(g, [L.SortKey(ColumnRef(3, g.schema[3].type), False),
                              L.SortKey(ColumnRef(1, T.DATE))]), 10)
    want = duck("""select l_orderkey, o_orderdate, o_shippriority,
        sum(l_extendedprice * (1 - l_discount)) as revenue
        from customer, orders, lineitem where c_mktsegment = 'BUILDING'
        and c_custkey = o_custkey and l_orderkey = o_orderkey
        and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
        group by l_orderkey, o_orderdate, o_shippriority
        order by revenue desc, o_orderdate limit 10""", **tp)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(plan, threads, rows), want, ordered=True)


def test_q13_left_join_residual(tp):
    cust = scan(tp["customer"], ["c_custkey"])
    orders = scan(tp["orders"], ["o_orderkey", "o_custkey", "o_comment"])
    off = 1
    like = Call("like", [ColumnRef(off + 2, T.VARCHAR), Literal("%special%requests%", T.VARCHAR)],
                T.BOOLEAN)
    j = L.Join(cust, orders, "left", [ref(cust, "c_custkey")], [ref(orders, "o_custkey")],
               Call("not", [like], T.BOOLEAN))
    g1 = L.Aggregate(j, [ColumnRef(0, T.BIGINT)], [agg("count", ColumnRef(1, T.BIGINT))])
    g2 = L.Aggregate(g1, [ColumnRef(1, T.BIGINT)], [agg("count_star")])
    plan = L.Sort(g2, [L.SortKey(ColumnRef(1, T.BIGINT), False),
                       L.SortKey(ColumnRef(0, T.BIGINT), False)])
    want = duck("""select c_count, count(*) as custdist from (select c_custkey, count(o_orderkey)
        from customer left outer join orders on c_custkey = o_custkey
        and o_comment not like '%special%requests%' group by c_custkey) as c_orders (c_custkey,
        c_count) group by c_count order by custdist desc, c_count desc""", **tp)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(plan, threads, rows), want, ordered=True)


def test_q21_semi_anti_residual(tp):
    cols = ["l_orderkey", "l_suppkey", "l_receiptdate", "l_commitdate"]
    l1 = scan(tp["lineitem"], cols)
    late = call("gt", ref(l1, "l_receiptdate"), ref(l1, "l_commitdate"))
    l1 = L.Filter(l1, late)
    l2 = scan(tp["lineitem"], cols)
    l3 = L.Filter(scan(tp["lineitem"], cols), late)
    ne = call("ne", ColumnRef(1, T.BIGINT), ColumnRef(5, T.BIGINT))
    semi = L.Join(l1, l2, "semi", [ColumnRef(0, T.BIGINT)], [ColumnRef(0, T.BIGINT)], ne)
    anti = L.Join(semi, l3, "anti", [ColumnRef(0, T.BIGINT)], [ColumnRef(0, T.BIGINT)], ne)
    plan = L.Aggregate(anti, [ColumnRef(1, T.BIGINT)], [agg("count_star")])
    want = duck("""select l1.l_suppkey, count(*) from lineitem l1
        where l1.l_receiptdate > l1.l_commitdate
        and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey
                    and l2.l_suppkey <> l1.l_suppkey)
        and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey
                    and l3.l_suppkey <> l1.l_suppkey and l3.l_receiptdate > l3.l_commitdate)
        group by 1""", **tp)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(plan, threads, rows), want)


def test_group_by_strings_many_groups(tp):
    o = scan(tp["orders"], ["o_orderkey", "o_custkey", "o_comment", "o_clerk", "o_totalprice"])
    plan = L.Aggregate(o, [ref(o, "o_clerk")],
                       [agg("count_star"), agg("min", ref(o, "o_comment")),
                        agg("max", ref(o, "o_comment")), agg("sum", ref(o, "o_totalprice")),
                        agg("count", ref(o, "o_custkey"), distinct=True)])
    want = duck("""select o_clerk, count(*), min(o_comment), max(o_comment), sum(o_totalprice),
        count(distinct o_custkey) from orders group by o_clerk""", **tp)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(plan, threads, rows), want)
    s = L.Sort(o, [L.SortKey(ref(o, "o_comment"), False), L.SortKey(ref(o, "o_orderkey"))])
    want = duck("select o_orderkey, o_custkey, o_comment, o_clerk, o_totalprice from orders "
                "order by o_comment desc, o_orderkey", **tp)
    assert_rows_equal(run(s, 2, 2000), want, ordered=True)
