"""Cardinality feedback (planner/feedback.py): a completed query leaves the
actual rows of the subplans it misestimated; the next query planning the
same subplan (same files, same literals) uses them, source ``feedback``."""

from __future__ import annotations

import json
import shutil

import duckdb
import pyarrow.parquet as pq
import pytest

import engine
from engine.analyze import QueryProfile
from planner import plan_query
from planner import logical as L
from planner.feedback import FeedbackStore, node_key
from tests.connections import pqdb_with_tpch
from tpch.queries import query_text

HEAVY = ("SELECT o_orderkey, o_totalprice FROM orders WHERE o_orderkey IN "
         "(SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > {n}) "
         "ORDER BY o_orderkey")


def _analyze(con, sql: str) -> dict:
    return json.loads(con.sql("EXPLAIN (ANALYZE, FORMAT JSON) " + sql).fetchall()[0][0])


def _nodes(tree):
    yield tree
    for c in tree["children"]:
        yield from _nodes(c)


def _having(tree) -> dict:
    return next(n for n in _nodes(tree) if n["operator"].startswith("Filter (sum("))


def _semi(tree) -> dict:
    return next(n for n in _nodes(tree) if n["operator"].startswith("Join semi"))


def _store(con) -> FeedbackStore:
    return con.catalog.statistics.feedback


@pytest.fixture
def con(tpch_sf001):
    c = pqdb_with_tpch(tpch_sf001, threads=2)
    yield c
    c.close()


def test_second_run_uses_what_the_first_saw(con, duckdb_tpch):
    sql = HEAVY.format(n=250)
    want = duckdb_tpch.execute(sql).fetchall()
    first = _analyze(con, sql)
    assert _having(first)["estimate_source"] == "default"
    assert _having(first)["q_error"] > 10            # 20% of the groups: far off
    assert len(_store(con)) > 0
    second = _analyze(con, sql)
    for node in (_having(second), _semi(second)):
        assert node["estimate_source"] == "feedback", node
        assert node["q_error"] <= 1.01, node
        assert node["actual_rows"] == _having(first)["actual_rows"]
    text = con.sql("EXPLAIN ANALYZE " + sql).fetchall()[0][0]
    assert "feedback; actual" in text
    assert con.sql(sql).fetchall() == want


def test_plain_runs_record_too(con):
    sql = HEAVY.format(n=250)
    con.sql(sql).fetchall()                           # no EXPLAIN: rows counted anyway
    plan = plan_query(sql, con.catalog)
    from planner.cardinality import estimate_with_source
    having = next(n for n in _walk(plan) if isinstance(n, L.Filter))
    assert estimate_with_source(having).source == "feedback"


def _walk(node):
    yield node
    for c in node.children:
        yield from _walk(c)


def test_other_literals_do_not_match(con):
    con.sql(HEAVY.format(n=250)).fetchall()
    other = _analyze(con, HEAVY.format(n=240))
    assert _having(other)["estimate_source"] == "default"
    again = _analyze(con, HEAVY.format(n=250))
    assert _having(again)["estimate_source"] == "feedback"


def test_off_with_statistics_false(tpch_sf001):
    con = pqdb_with_tpch(tpch_sf001, threads=2, statistics=False)
    sql = HEAVY.format(n=250)
    for _ in range(2):
        tree = _analyze(con, sql)
        assert all(n["estimate_source"] != "feedback" for n in _nodes(tree))
    assert len(_store(con)) == 0
    con.close()


def test_limit_cut_off_records_nothing_below_it(con):
    cut = ("SELECT * FROM (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey "
           "HAVING sum(l_quantity) > 100) LIMIT 3")
    assert len(con.sql(cut).fetchall()) == 3
    assert len(_store(con)) == 0
    whole = cut.replace("LIMIT 3", "LIMIT 1000000")    # the input ends first: recorded
    con.sql(whole).fetchall()
    assert len(_store(con)) > 0


def test_failed_query_records_nothing(con):
    bad = ("SELECT l_orderkey FROM lineitem GROUP BY l_orderkey "
           "HAVING sum(l_quantity) > 250 AND min(l_linenumber) // 0 > 1")
    with pytest.raises(engine.Error):
        con.sql(bad).fetchall()
    assert len(_store(con)) == 0
    con.sql(bad.replace(" // 0", " // 1")).fetchall()
    assert len(_store(con)) > 0


def test_interrupted_query_records_nothing(con):
    shape = "SELECT count(*) FROM {a}, {b} WHERE {x} + {y} < 0"
    con.sql("SET query_timeout = '300ms'")
    with pytest.raises(engine.QueryTimeout):            # 9e8 pairs
        con.sql(shape.format(a="lineitem", b="orders", x="l_quantity",
                             y="o_totalprice")).fetchall()
    assert len(_store(con)) == 0
    con.sql(shape.format(a="nation", b="region", x="n_nationkey",      # completed: recorded
                         y="r_regionkey")).fetchall()
    assert len(_store(con)) > 0


def test_rewritten_file_loses_its_feedback(tpch_sf001, tmp_path):
    path = str(tmp_path / "lineitem.parquet")
    shutil.copy(f"{tpch_sf001}/lineitem.parquet", path)
    con = engine.connect(threads=2)
    sql = (f"SELECT l_orderkey FROM '{path}' GROUP BY l_orderkey "
           f"HAVING sum(l_quantity) > 250 ORDER BY 1")
    con.sql(sql).fetchall()
    assert _having(_analyze(con, sql))["estimate_source"] == "feedback"
    table = pq.read_table(path)
    pq.write_table(table.slice(0, table.num_rows // 2), path)      # same path, new content
    tree = _analyze(con, sql)
    assert _having(tree)["estimate_source"] == "default"
    want = duckdb.sql(sql).fetchall()
    assert con.sql(sql).fetchall() == want
    assert _having(_analyze(con, sql))["estimate_source"] == "feedback"


def test_store_is_bounded():
    store = FeedbackStore(capacity=3)
    for i in range(5):
        store.put(bytes([i]), i, (b"a", b"b"))
    assert len(store) == 3 and store.get(bytes([0])) is None and store.get(bytes([4])) == 4
    assert store.leaf_known(b"a")
    store.clear()
    assert len(store) == 0 and not store.leaf_known(b"a")


@pytest.mark.parametrize("q", [3, 5, 18, 21])
def test_counting_runs_count_what_analyze_counts(con, q):
    """The rows of a plain run (counters only) equal EXPLAIN ANALYZE's."""
    plan = plan_query(query_text(q), con.catalog)
    counted, timed = QueryProfile(timed=False), QueryProfile()
    con.run_plan(plan, profile=counted)
    con.run_plan(plan, profile=timed)
    a = {k: r.rows for k, r in counted.operator_runs(plan).items()}
    b = {k: r.rows for k, r in timed.operator_runs(plan).items()}
    assert a == b and any(v for v in a.values())


def test_key_ignores_join_order_and_semi_join_place(con):
    """The same rows written two ways (join order, the IN on either
    side of the join) have one key; another literal another key."""
    base = ("SELECT o_orderkey, l_quantity FROM {a}, {b} WHERE o_orderkey = l_orderkey "
            "AND o_totalprice > 1000 AND l_orderkey IN "
            "(SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > {n})")
    one = plan_query(base.format(a="orders", b="lineitem", n=250), con.catalog)
    two = plan_query(base.format(a="lineitem", b="orders", n=250).replace(
        "l_orderkey IN", "o_orderkey IN"), con.catalog)
    three = plan_query(base.format(a="orders", b="lineitem", n=240), con.catalog)
    assert node_key(one) is not None
    assert node_key(one) == node_key(two) != node_key(three)


@pytest.mark.parametrize("q", [3, 10, 18, 21])
def test_second_run_joins_within_a_factor_two(con, q):
    """After one run, every join of the plan is estimated within 2x (what
    was further off is now observed, and the join orderer's sets build on
    it); the rows stay DuckDB's (tests/stats/test_results_unchanged.py)."""
    sql = query_text(q)
    con.sql(sql).fetchall()
    tree = _analyze(con, sql)
    joins = [n for n in _nodes(tree) if n["operator"].startswith("Join")]
    assert joins and all(n["q_error"] <= 2.0 for n in joins), \
        [(n["operator"], n["estimated_rows"], n["actual_rows"]) for n in joins]


def test_region_sets_use_and_scale_by_observations():
    from planner.feedback import RegionFeedback
    seen = RegionFeedback([], [], [], [])
    seen.observed = {0b011: 50.0}                     # leaves 0 and 1: 50 rows seen
    base = {0b001: 100.0, 0b010: 10.0, 0b100: 5.0, 0b011: 1000.0, 0b110: 50.0,
            0b101: 500.0, 0b111: 5000.0}
    card = seen.card(base.__getitem__)
    assert card(0b011) == 50.0                        # observed
    assert card(0b111) == pytest.approx(5000.0 * 50 / 1000)   # scaled by the correction
    assert card(0b110) == 50.0 and card(0b001) == 100.0        # no observed subset


@pytest.mark.parametrize("q", [3, 5, 9, 21])
def test_feedback_estimates_are_their_subplans_rows(con, q):
    """After a run, every estimate that comes from feedback is the row count
    of its subplan run alone: nodes that saw fewer rows because a join
    filter made their scan drop some (engine/filtering/join_keys.py) leave
    no observation."""
    from planner.cardinality import estimate_with_source
    sql = query_text(q)
    con.sql(sql).fetchall()                     # collects statistics
    con.sql(sql).fetchall()                     # observes with them
    stmt = con.statements(sql)[-1]
    plan = plan_query(stmt.ast, con.catalog, params=None, sql=stmt.sql)
    stack, checked = [plan], 0
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        est = estimate_with_source(node)
        if est.source == "feedback":
            assert est.value == len(con.run_plan(node)), (q, type(node).__name__)
            checked += 1
    assert checked >= 5, checked
