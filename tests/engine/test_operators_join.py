"""Hash join tests: every kind, NULL and duplicate keys, string and
multi-column keys, residual predicates; compared with DuckDB."""

from __future__ import annotations

import pytest

from planner import logical as L
from planner.expressions import ColumnRef
from planner import types as T
from tests.engine.test_executor_helpers import (agg, assert_rows_equal, call, duck, lit, ref,
                                                run, scan, write_sample_tables)

CONFIGS = [(1, 65536), (2, 1000), (4, 333)]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    return write_sample_tables(tmp_path_factory.mktemp("join"))


def _join(p1, p2, kind, keys, residual=None, left_cols=None, right_cols=None):
    a = scan(p1, left_cols)
    b = scan(p2, right_cols)
    lk = [ref(a, k) for k, _ in keys]
    rk = [ref(b, k) for _, k in keys]
    res = residual(a, b, len(a.schema)) if residual else None
    return L.Join(a, b, kind, lk, rk, res)


SQL = {
    "inner": "SELECT t1.id, t1.k, t1.s, t2.* FROM t1 JOIN t2 ON {on}",
    "left": "SELECT t1.id, t1.k, t1.s, t2.* FROM t1 LEFT JOIN t2 ON {on}",
    "right": "SELECT t1.id, t1.k, t1.s, t2.* FROM t1 RIGHT JOIN t2 ON {on}",
    "full": "SELECT t1.id, t1.k, t1.s, t2.* FROM t1 FULL JOIN t2 ON {on}",
    "semi": "SELECT t1.id, t1.k, t1.s FROM t1 SEMI JOIN t2 ON {on}",
    "anti": "SELECT t1.id, t1.k, t1.s FROM t1 ANTI JOIN t2 ON {on}",
}


@pytest.mark.parametrize("kind", list(SQL))
@pytest.mark.parametrize("keys", [[("k", "k")], [("s", "s")], [("k", "k"), ("s", "s")]])
def test_join_kinds(tables, kind, keys):
    p1, p2 = tables
    plan = _join(p1, p2, kind, keys, left_cols=["id", "k", "s"])
    on = " AND ".join(f"t1.{a} = t2.{b}" for a, b in keys)
    want = duck(SQL[kind].format(on=on), t1=p1, t2=p2)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(plan, threads, rows), want)


@pytest.mark.parametrize("kind", list(SQL))
def test_join_residual(tables, kind):
    p1, p2 = tables

    def residual(a, b, off):
        return call("lt", ref(a, "id"), call("mul", ref(b, "v", off), lit(3, T.BIGINT),
                                             typ=T.BIGINT))
    plan = _join(p1, p2, kind, [("k", "k")], residual, left_cols=["id", "k", "s"])
    want = duck(SQL[kind].format(on="t1.k = t2.k AND t1.id < t2.v * 3"), t1=p1, t2=p2)
    for threads, rows in CONFIGS[:2]:
        assert_rows_equal(run(plan, threads, rows), want)


def test_join_decimal_date_double_keys(tables):
    p1, _ = tables
    a = scan(p1, ["id", "d", "dt", "f"])
    b = L.Filter(scan(p1, ["id", "d", "dt", "f"]), call("lt", ref(a, "id"), lit(800, T.BIGINT)))
    for key in ("d", "dt", "f"):
        plan = L.Join(a, b, "inner", [ref(a, key)], [ref(b, key)])
        want = duck(f"SELECT a.*, b.* FROM (SELECT id, d, dt, f FROM t1) a JOIN "
                    f"(SELECT id, d, dt, f FROM t1 WHERE id < 800) b ON a.{key} = b.{key}",
                    t1=p1)
        assert_rows_equal(run(plan, 2, 1000), want)


def test_cross_join(tables):
    p1, p2 = tables
    a = scan(p1, ["id", "k"])
    a = L.Filter(a, call("lt", ref(a, "id"), lit(40, T.BIGINT)))
    b = scan(p2, ["v", "name"])
    b = L.Filter(b, call("lt", ref(b, "v"), lit(30, T.BIGINT)))
    plan = L.Join(a, b, "cross", [], [])
    want = duck("SELECT t1.id, t1.k, t2.v, t2.name FROM t1, t2 WHERE t1.id < 40 AND t2.v < 30",
                t1=p1, t2=p2)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(plan, threads, rows), want)


def test_join_then_aggregate_and_sort(tables):
    p1, p2 = tables
    j = _join(p1, p2, "inner", [("s", "s")], left_cols=["id", "k", "s"])
    # schema: id, k, s, k, s, v, name
    g = L.Aggregate(j, [ref(j, "name", 0)], [agg("count_star"), agg("sum", ref(j, "v")),
                                             agg("max", ref(j, "s"))])
    plan = L.Limit(L.Sort(g, [L.SortKey(ColumnRef(1, T.BIGINT), False),
                              L.SortKey(ColumnRef(0, T.VARCHAR), True)]), 15)
    want = duck("SELECT t2.name, count(*), sum(v), max(t1.s) FROM t1 JOIN t2 ON t1.s = t2.s "
                "GROUP BY t2.name ORDER BY 2 DESC, 1 LIMIT 15", t1=p1, t2=p2)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(plan, threads, rows), want, ordered=True)


def test_empty_build_side(tables):
    p1, p2 = tables
    a = scan(p1, ["id", "k"])
    b = scan(p2, ["k", "v"])
    b = L.Filter(b, call("lt", ref(b, "v"), lit(-1, T.BIGINT)))
    for kind, n in (("inner", 0), ("left", 3000), ("semi", 0), ("anti", 3000)):
        plan = L.Join(a, b, kind, [ref(a, "k")], [ref(b, "k")])
        assert len(run(plan, 2, 1000)) == n
