"""Join orders planned with statistics the scans really collected (TPC-H
SF0.01: each query runs once, then is planned again), checked against the
plans of perfect SF1 statistics (tests/planner/test_tpch_join_orders.py's
catalog) and, through EXPLAIN (ANALYZE, FORMAT JSON), against the true
join sizes."""

from __future__ import annotations

import json
import re

import pytest

from planner import plan_query
from planner.logical import Join, Scan
from tests.connections import pqdb_with_tpch
from tests.planner.tpch_statistics import TpchStatsCatalog
from tpch.queries import query_text

TABLE_OF_PREFIX = {"l": "lineitem", "o": "orders", "c": "customer", "s": "supplier",
                   "n": "nation", "r": "region", "p": "part", "ps": "partsupp"}


def json_shape(node: dict) -> str:
    """The join tree of an EXPLAIN JSON tree: kind(left right), tables by name."""
    op = node["operator"]
    if op.startswith("Join"):
        left, right = node["children"]
        return f"{op.split()[1]}({json_shape(left)} {json_shape(right)})"
    if op.startswith("Scan"):
        return TABLE_OF_PREFIX[re.search(r"\[(\w+?)_", op).group(1)]
    kids = [s for s in (json_shape(c) for c in node["children"]) if s]
    return " ".join(kids)


def plan_shape(node) -> str:
    if isinstance(node, Join):
        return f"{node.kind}({plan_shape(node.left)} {plan_shape(node.right)})"
    if isinstance(node, Scan):
        return node.alias
    return " ".join(s for s in (plan_shape(c) for c in node.children) if s)


def joins(node: dict):
    if node["operator"].startswith("Join"):
        yield node
    for c in node["children"]:
        yield from joins(c)


@pytest.fixture(scope="module")
def analyzed(tpch_sf001):
    """q -> the second run's EXPLAIN (ANALYZE, FORMAT JSON) tree."""
    con = pqdb_with_tpch(tpch_sf001, threads=2)
    out = {}
    for q in (5, 9, 21):
        con.sql(query_text(q)).fetchall()                 # collects
        out[q] = json.loads(con.sql("EXPLAIN (ANALYZE, FORMAT JSON) "
                                    + query_text(q)).fetchall()[0][0])
    con.close()
    return out


@pytest.mark.parametrize("q", [9, 21])
def test_collected_statistics_give_the_plan_of_perfect_ones(analyzed, tpch_sf001, q):
    perfect = plan_query(query_text(q), TpchStatsCatalog(tpch_sf001))
    assert json_shape(analyzed[q]) == plan_shape(perfect)


def test_q5_starts_from_the_filtered_region(analyzed):
    """Q5: region (one of five) -> nation -> customer -> orders before
    lineitem; supplier is joined on both its keys (at SF0.01, with 100
    suppliers, before or after lineitem cost the same)."""
    shape = json_shape(analyzed[5])
    assert "inner(orders inner(customer inner(nation region)))" in shape, shape
    assert shape.count("inner(") == 5 and "lineitem" in shape and "supplier" in shape


@pytest.mark.parametrize("q", [5, 9, 21])
def test_join_q_errors(analyzed, q):
    """Inner joins within the issue's aim (10).  Q21's anti join is left
    out: it keeps the orders no other supplier was late on, 5% here, and
    no per-table statistic sees that (the residual '<>' keeps half)."""
    for j in joins(analyzed[q]):
        assert j["actual_rows"] is not None
        if j["operator"].startswith("Join anti"):
            continue
        assert j["q_error"] <= 10, (q, j["operator"], j["estimated_rows"], j["actual_rows"])
