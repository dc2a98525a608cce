"""EXPLAIN ANALYZE and EXPLAIN (FORMAT JSON) (engine/analyze.py,
planner/explain.py): every plan node's actual rows equal the rows of its
subplan run as a query of its own, the root's DuckDB's count; the JSON
shape; the io line over a local file and over HTTP (fetched, then cached);
a failing query's error comes out of EXPLAIN ANALYZE."""

from __future__ import annotations

import json
import os
import re

import pytest

import engine
from engine.analyze import QueryProfile
from planner import logical as L
from planner import plan_query
from planner.explain import explain_tree, q_error
from tests.connections import pqdb_with_tpch
from tpch.queries import query_text

# joins and aggregates (3, 5, 9), semi and anti joins (4, 16, 21, 22), an
# outer join (13), IN over a HAVING aggregate (18), a view used twice (15),
# HAVING over a scalar subquery (11)
QUERIES = [3, 4, 5, 9, 11, 13, 15, 16, 18, 21, 22]


def _plan(con, sql):
    stmt = con.statements(sql)[-1]
    return plan_query(stmt.ast, con.catalog, params=None, sql=stmt.sql)


def _nodes(node, parent=None):
    yield node, parent
    for c in node.children:
        yield from _nodes(c, node)


def _under_plain_limit(node, parents) -> bool:
    """Below a LIMIT without ORDER BY the input may stop early."""
    p = parents.get(id(node))
    while p is not None:
        if isinstance(p, L.Limit) and not isinstance(p.child, L.Sort):
            return True
        p = parents.get(id(p))
    return False


@pytest.fixture(scope="module")
def con(tpch_sf001):
    c = pqdb_with_tpch(tpch_sf001, threads=2)
    yield c
    c.close()


def check_subplans(con, duck, sql: str, label: str) -> int:
    """Analyze ``sql``; every node's actual rows are its subplan's rows run
    alone (below a LIMIT without ORDER BY: at most those), the root's
    DuckDB's.  Returns the nodes compared."""
    plan = _plan(con, sql)
    profile = QueryProfile()
    result = con.run_plan(plan, profile=profile)
    runs = profile.operator_runs(plan)
    assert runs[id(plan)].rows == len(result) == len(duck.execute(sql).fetchall())
    parents = {id(n): p for n, p in _nodes(plan)}
    checked = 0
    for node, _ in _nodes(plan):
        run = runs[id(node)]
        assert run.rows is not None, f"{label}: {type(node).__name__} has no actual rows"
        assert run.time_s >= 0
        alone = len(con.run_plan(node))
        if _under_plain_limit(node, parents) or run.note == "after a join filter":
            assert run.rows <= alone
            continue
        assert run.rows == alone, f"{label}: {type(node).__name__} {run.note!r}"
        checked += 1
    return checked


@pytest.mark.parametrize("q", QUERIES)
def test_actual_rows_are_each_subplans_rows(con, duckdb_tpch, q):
    assert check_subplans(con, duckdb_tpch, query_text(q), f"Q{q}") >= 5


@pytest.mark.parametrize("q", [3, 5, 9])
def test_actual_rows_without_join_filters(con, duckdb_tpch, q):
    """Join filters off: every node, those under a join, as its subplan."""
    con.sql("SET join_filters = false")
    try:
        assert check_subplans(con, duckdb_tpch, query_text(q), f"Q{q}") >= 8
    finally:
        con.sql("SET join_filters = true")


OTHER_SHAPES = [
    "SELECT n_name, rank() OVER (PARTITION BY n_regionkey ORDER BY n_name) FROM nation",
    "SELECT n_name FROM nation UNION ALL SELECT r_name FROM region WHERE r_regionkey > 1",
    "SELECT n_name FROM nation UNION SELECT r_name FROM region",
    "SELECT n_name, r_name FROM nation FULL OUTER JOIN region "
    "ON n_regionkey = r_regionkey AND r_name <> 'ASIA'",
    "SELECT n_name, r_name FROM nation RIGHT JOIN region ON n_regionkey = r_regionkey + 1",
    "SELECT count(*) FROM nation a, region b WHERE a.n_regionkey < b.r_regionkey",
    "SELECT a.n_name, b.r_name FROM nation a, region b",
    "SELECT DISTINCT o_orderstatus FROM orders",
    "WITH x AS (SELECT n_regionkey AS k, count(*) AS c FROM nation GROUP BY 1) "
    "SELECT * FROM x a JOIN x b ON a.k = b.k",
    "SELECT c_name FROM customer WHERE c_custkey NOT IN "
    "(SELECT o_custkey FROM orders WHERE o_totalprice > 300000)",
    "SELECT o_orderpriority, count(*) FROM orders GROUP BY 1 HAVING count(*) > 2990",
    "SELECT l_orderkey FROM lineitem WHERE l_quantity > 49 LIMIT 5",
    "SELECT c_custkey, (SELECT max(o_totalprice) FROM orders WHERE o_custkey = c_custkey) "
    "FROM customer WHERE c_custkey < 50",
]


@pytest.mark.parametrize("sql", OTHER_SHAPES)
def test_actual_rows_of_other_operators(con, duckdb_tpch, sql):
    assert check_subplans(con, duckdb_tpch, sql, sql) >= 1


def test_nodes_of_each_kind_are_counted(con):
    """The queries above reach every way a node's rows are counted."""
    notes, kinds = set(), set()
    for q in QUERIES:
        plan = _plan(con, query_text(q))
        profile = QueryProfile()
        con.run_plan(plan, profile=profile)
        runs = profile.operator_runs(plan)
        for node, _ in _nodes(plan):
            notes.add(runs[id(node)].note)
            kinds.add(node.kind if isinstance(node, L.Join) else type(node).__name__)
    assert {"top-N: the rows it sorted", "shared"} <= notes
    assert {"inner", "semi", "anti", "left", "Aggregate", "Scan", "Filter"} <= kinds


def test_limit_without_order_counts_the_rows_produced(con):
    plan = _plan(con, "SELECT l_orderkey FROM lineitem LIMIT 7")
    profile = QueryProfile()
    con.run_plan(plan, profile=profile)
    runs = profile.operator_runs(plan)
    assert runs[id(plan)].rows == 7
    scan = next(n for n, _ in _nodes(plan) if isinstance(n, L.Scan))
    assert 7 <= runs[id(scan)].rows <= 60175


def test_text_lines(con):
    out = con.sql("EXPLAIN ANALYZE " + query_text(5)).fetchall()[0][0]
    lines = out.splitlines()
    tree = [ln for ln in lines if ln.lstrip().startswith(("Scan", "Join", "Project", "Filter",
                                                          "Aggregate", "Sort", "Limit"))]
    pattern = re.compile(r"\(~[\d,]+ rows, (sample|hll|key|synopses|footer|default|feedback); "
                         r"actual [\d,]+ rows, q-error \d+\.\d\d, \d+\.\d{3} s")
    assert tree and all(pattern.search(ln) for ln in tree), out
    assert re.fullmatch(r"io: requests [\d,]+, bytes fetched [\d,]+, bytes from cache [\d,]+",
                        lines[-2]), lines[-2]
    assert re.fullmatch(r"total: \d+\.\d{3} s", lines[-1])


def test_skipped_line_names_the_source(tmp_path):
    """A sorted file: footer statistics skip row groups, the scan says so."""
    import duckdb
    path = str(tmp_path / "sorted.parquet")
    duckdb.sql(f"COPY (SELECT range AS x FROM range(100000)) TO '{path}' "
               "(FORMAT PARQUET, ROW_GROUP_SIZE 10000)")
    import pyarrow.parquet as pq
    meta = pq.ParquetFile(path).metadata
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    out_groups = [g for g in groups if g.column(0).statistics.min >= 15000]
    rows = sum(g.num_rows for g in out_groups)
    assert len(out_groups) >= 7
    con = engine.connect(threads=2)
    out = con.sql(f"EXPLAIN ANALYZE SELECT count(*) FROM '{path}' WHERE x < 15000")
    text = out.fetchall()[0][0]
    assert f"skipped: footer {rows:,} rows ({len(out_groups)} row groups)" in text, text
    tree = json.loads(con.sql(f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM '{path}' "
                              "WHERE x < 15000").fetchall()[0][0])
    scan = tree
    while scan["children"]:
        scan = scan["children"][0]
    assert scan["skipped"]["footer"] == {"row_groups": len(out_groups), "rows": rows}
    assert scan["actual_rows"] == 15000


def _walk(tree):
    yield tree
    for c in tree["children"]:
        yield from _walk(c)


def test_json_shape(con):
    sql = query_text(21)
    con.sql(sql).fetchall()            # statistics in place: the plan below is EXPLAIN's
    res = con.sql("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
    assert res.columns == ["explain"] and len(res.fetchall()) == 1
    tree = json.loads(con.sql("EXPLAIN (ANALYZE, FORMAT JSON) " + sql).fetchall()[0][0])
    assert set(tree["io"]) == {"requests", "bytes_fetched", "bytes_from_cache"}
    base = {"operator", "estimated_rows", "actual_rows", "estimate_source", "time_s",
            "children", "q_error"}
    plan = _plan(con, sql)
    want = [n["operator"] for n in _walk(explain_tree(plan))]
    assert [n["operator"] for n in _walk(tree)] == want
    for node in _walk(tree):
        assert base <= set(node) <= base | {"skipped", "note", "io", "total_time_s"}
        assert isinstance(node["actual_rows"], int) and isinstance(node["time_s"], float)
        assert node["q_error"] == pytest.approx(q_error(node["estimated_rows"],
                                                        node["actual_rows"]), rel=1e-3)
    assert tree["actual_rows"] == len(con.sql(sql))
    plain = json.loads(con.sql("EXPLAIN (FORMAT JSON) " + sql).fetchall()[0][0])
    for node in _walk(plain):
        assert set(node) == {"operator", "estimated_rows", "estimate_source", "children"}
    assert [n["operator"] for n in _walk(plain)] == want


def test_options():
    con = engine.connect()
    for text in ("EXPLAIN ANALYZE SELECT 1", "EXPLAIN (ANALYZE) SELECT 1",
                 "EXPLAIN (ANALYZE true, FORMAT TEXT) SELECT 1", "explain analyze (SELECT 1)"):
        assert "actual 1 rows" in con.sql(text).fetchall()[0][0], text
    assert "actual" not in con.sql("EXPLAIN (ANALYZE false) SELECT 1").fetchall()[0][0]
    assert "actual" not in con.sql("EXPLAIN (SELECT 1)").fetchall()[0][0]
    with pytest.raises(engine.NotSupportedError, match="EXPLAIN FORMAT YAML is not supported"):
        con.sql("EXPLAIN (FORMAT YAML) SELECT 1")
    with pytest.raises(engine.NotSupportedError, match="EXPLAIN option VERBOSE is not supported"):
        con.sql("EXPLAIN (VERBOSE) SELECT 1")


def test_failing_query_raises_its_error(con):
    sql = "SELECT CAST(l_comment AS INTEGER) FROM lineitem"
    with pytest.raises(engine.Error) as plain:
        con.sql(sql).fetchall()
    with pytest.raises(type(plain.value)) as analyzed:
        con.sql("EXPLAIN ANALYZE " + sql)
    assert str(analyzed.value) == str(plain.value)
    assert "actual" not in con.sql("EXPLAIN " + sql).fetchall()[0][0]   # not run


def test_io_line_is_the_statements_io(tpch_sf001):
    con = engine.connect(threads=2)
    path = os.path.join(tpch_sf001, "orders.parquet")
    sql = f"SELECT sum(o_totalprice) FROM '{path}'"
    first = con.sql("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
    io = json.loads(first.fetchall()[0][0])["io"]
    assert io == first.io and io["requests"] > 0 and io["bytes_fetched"] > 0
    second = con.sql("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
    io2 = json.loads(second.fetchall()[0][0])["io"]
    assert io2 == second.io and io2["bytes_fetched"] == 0 and io2["bytes_from_cache"] > 0


def test_io_line_over_http(http_server, tpch_sf001):
    url = http_server.add("analyze_orders.parquet", os.path.join(tpch_sf001, "orders.parquet"))
    con = engine.connect(threads=2)
    sql = f"SELECT sum(o_totalprice) FROM '{url}'"
    http_server.clear_log()
    first = json.loads(con.sql("EXPLAIN (ANALYZE, FORMAT JSON) " + sql).fetchall()[0][0])
    sent = sum(r.sent for r in http_server.data_requests("analyze_orders.parquet"))
    assert first["io"]["bytes_fetched"] == sent > 0
    assert first["io"]["requests"] >= 1
    text = con.sql("EXPLAIN ANALYZE " + sql).fetchall()[0][0]
    line = next(ln for ln in text.splitlines() if ln.startswith("io:"))
    got = dict(re.findall(r"(requests|bytes fetched|bytes from cache) ([\d,]+)", line))
    assert int(got["bytes fetched"].replace(",", "")) == 0
    assert int(got["bytes from cache"].replace(",", "")) > 0
