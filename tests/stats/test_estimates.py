"""The estimates the planner gets, against exact numbers from DuckDB
(tests/planner/duck_statistics.py) on TPC-H SF0.01: rows after a scan's
filters (q-errors), distinct counts, key guesses."""

from __future__ import annotations

import os
import statistics as pystats

import duckdb
import pytest

from planner import plan_query
from planner.logical import Scan
from tests.connections import pqdb_with_tpch
from tests.planner.duck_statistics import DuckStatistics
from tpch.queries import query_text


def q_error(est: float, actual: float) -> float:
    est, actual = max(est, 1.0), max(actual, 1.0)
    return max(est / actual, actual / est)


def _scans(node):
    if isinstance(node, Scan):
        yield node
    for c in node.children:
        yield from _scans(c)


@pytest.fixture(scope="module")
def warmed(tpch_sf001):
    """A connection that has run all 22 queries (statistics of every column
    they read), and the plans of the queries planned again."""
    con = pqdb_with_tpch(tpch_sf001, threads=2)
    for q in range(1, 23):
        con.sql(query_text(q)).fetchall()
    plans = {}
    for q in range(1, 23):
        stmt = con.statements(query_text(q))[-1]
        plans[q] = plan_query(stmt.ast, con.catalog, params=None, sql=stmt.sql)
    return con, plans


def test_filtered_rows_q_errors(warmed):
    _, plans = warmed
    duck = duckdb.connect()
    truth: dict = {}
    errors = []
    for q, plan in plans.items():
        for scan in _scans(plan):
            if not scan.filters or scan.statistics is None:
                continue
            path = scan.files[0]
            ref = truth.setdefault(path, DuckStatistics(path, duck))
            est = scan.statistics.filtered_rows(list(scan.filters), list(scan.columns))
            assert est is not None, (q, scan.alias)
            actual = ref.filtered_rows(list(scan.filters), list(scan.columns)).value
            rows = duck.execute(f"SELECT count(*) FROM '{path}'").fetchone()[0]
            errors.append((q_error(est.value, actual), q, os.path.basename(path), est, actual,
                           rows))
    errors.sort(key=lambda e: -e[0])
    assert len(errors) >= 25
    assert pystats.median(e[0] for e in errors) <= 1.2, errors[:5]
    # The sample (1024 rows, seeded by the files' identities: new temporary
    # files, a new sample each run) estimates a selectivity p with standard
    # deviation sqrt(p (1 - p) / 1024): each estimate must lie within 5 of
    # them (a fixed q-error bound failed now and then on a 1.2% filter: 12
    # sample rows).
    for err, q, name, est, actual, rows in errors:
        n = min(rows, 1024)
        p = max(actual / rows, 1 / n)      # (an empty result: one sample row's worth)
        sd_rows = rows * (p * (1 - p) / n) ** 0.5
        assert abs(est.value - actual) <= 5 * sd_rows + 1, (q, name, est, actual, rows)


def test_distinct_counts_and_keys(warmed, tpch_sf001):
    con, plans = warmed
    duck = duckdb.connect()
    stats = con.catalog.statistics
    checked = 0
    for table in ("orders", "lineitem", "customer", "partsupp", "part", "supplier"):
        path = os.path.join(tpch_sf001, f"{table}.parquet")
        est = stats.table_statistics([path])
        for i, name in enumerate(est.names):
            got = est.distinct(i, [], [])
            if got is None:
                continue
            want = duck.execute(f"SELECT count(DISTINCT {name}) FROM '{path}'").fetchone()[0]
            assert abs(got.value - want) <= 0.02 * want + 1, (table, name, got, want)
            checked += 1
    assert checked >= 30
    orders = stats.table_statistics([os.path.join(tpch_sf001, "orders.parquet")])
    assert orders.unique((0,)) is True and orders.unique((1,)) is False
    lineitem = stats.table_statistics([os.path.join(tpch_sf001, "lineitem.parquet")])
    assert lineitem.unique((0,)) is False
    assert lineitem.unique((1, 2)) is not True        # (partkey, suppkey) repeats in lineitem
    partsupp = stats.table_statistics([os.path.join(tpch_sf001, "partsupp.parquet")])
    assert partsupp.unique((0,)) is False
    assert partsupp.unique((0, 1)) is True            # Q9/Q20 asked: the pair sketch knows
    assert orders.key_guess([1, 0]) == (0,)
