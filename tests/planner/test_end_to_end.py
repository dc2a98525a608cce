"""Plans executed by the engine (engine.api) against DuckDB on TPC-H SF0.01."""

import datetime as dt
import math
from decimal import Decimal

import pytest

from tests.connections import pqdb_with_tpch

from .tpch_texts import QUERIES


@pytest.fixture(scope="module")
def cons(tpch_sf001, duckdb_tpch):
    return pqdb_with_tpch(tpch_sf001), duckdb_tpch


def same(a, b) -> bool:
    if isinstance(a, (float, Decimal)) or isinstance(b, (float, Decimal)):
        if a is None or b is None:
            return a is b
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def check(cons, sql, params=None, ordered=True):
    ours, duck = cons
    got = ours.sql(sql, params).fetchall()
    want = duck.execute(sql, params or []).fetchall()
    if not ordered:
        got, want = sorted(got, key=repr), sorted(want, key=repr)
    assert len(got) == len(want), (got[:3], want[:3])
    for g, w in zip(got, want):
        assert len(g) == len(w) and all(same(x, y) for x, y in zip(g, w)), (g, w)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_tpch(cons, name):
    check(cons, QUERIES[name])


@pytest.mark.parametrize("sql", [
    "select n_name, r_name from nation join region on n_regionkey = r_regionkey order by n_name",
    "select n_name, r_name from nation join region using (r_regionkey) order by 1"
    .replace("using (r_regionkey)", "on n_regionkey = r_regionkey"),
    "select c_custkey, count(o_orderkey) from customer left join orders on c_custkey = o_custkey "
    "and o_totalprice > 300000 group by c_custkey order by 2 desc, 1 limit 10",
    "select distinct o_orderpriority from orders order by o_orderpriority desc",
    "select o_orderkey from orders order by o_totalprice desc, o_orderkey limit 5 offset 3",
    "select extract(year from o_orderdate) as y, count(*) from orders group by y order by y",
    "select substring(c_name, 1, 8) || '!', upper(c_mktsegment), length(c_comment) "
    "from customer where c_custkey < 5 order by 1",
    "select count(*) from lineitem where l_shipdate between date '1995-01-01' "
    "and date '1995-01-01' + interval 3 month and l_shipmode not in ('MAIL', 'AIR')",
    "select count(*) from part where p_type like '%BRASS' and p_name not like 'a%'",
    "select case when o_totalprice > 100000 then 'big' when o_totalprice > 50000 then 'mid' "
    "else 'small' end as size, count(*) from orders group by 1 order by 1",
    "with t as (select o_custkey, sum(o_totalprice) as s from orders group by o_custkey) "
    "select count(*) from t a, t b where a.o_custkey = b.o_custkey + 1",
    "select l_returnflag, sum(l_quantity) from lineitem group by l_returnflag "
    "having sum(l_quantity) > 1000 order by 1",
    "select o_orderdate + 7 as d, o_orderdate - interval 1 day from orders "
    "order by o_orderkey limit 3",
])
def test_queries_match_duckdb(cons, sql):
    check(cons, sql)


def test_parameters_end_to_end(cons):
    check(cons, "select count(*) from orders where o_orderdate >= ? and o_totalprice > ? "
          "and o_orderpriority = ?", [dt.date(1995, 1, 1), Decimal("1000.50"), "1-URGENT"])
