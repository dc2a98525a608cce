"""TPC-H queries end to end: pqdb's results against the expected answers and
against DuckDB on the same files."""

from __future__ import annotations

import duckdb
import pytest

import engine
from tpch import answers
from tpch.queries import query_text, view_statements

# Queries pqdb runs (subqueries are decorrelated since issue 4 item 1); any
# other is expected to fail with a clear error.
SUPPORTED = set(range(1, 23))


def _pqdb(data_dir: str, threads: int = 2):
    con = engine.connect(threads=threads)
    for stmt in view_statements(data_dir):
        con.sql(stmt)
    return con


def _duck(data_dir: str):
    con = duckdb.connect()
    for stmt in view_statements(data_dir):
        con.execute(stmt)
    return con


def _check(q: int, sf: float, data_dir: str):
    sql = query_text(q)
    result = _pqdb(data_dir).sql(sql)
    rows = result.fetchall()
    ref = _duck(data_dir).execute(sql).fetchall()
    diff = answers.compare_rows(rows, ref, result.columns)
    assert diff is None, f"Q{q} vs DuckDB: {diff}"
    try:
        diff = answers.check_against_answers(q, sf, result.columns, rows)
    except LookupError:
        return
    assert diff is None, f"Q{q} vs answers: {diff}"


def _params(queries):
    out = []
    for q in range(1, 23):
        marks = []
        if q not in queries:
            marks.append(pytest.mark.xfail(strict=True, raises=engine.errors.PqdbError,
                                           reason="needs subqueries (issue 4)"))
        out.append(pytest.param(q, marks=marks, id=f"q{q:02d}"))
    return out


@pytest.mark.parametrize("q", _params(SUPPORTED))
def test_tpch_sf001(q, tpch_sf001):
    _check(q, 0.01, tpch_sf001)


@pytest.mark.slow
@pytest.mark.parametrize("q", [1, 3, 6, 17, 21])
def test_tpch_sf01(q, tpch_sf01):
    _check(q, 0.1, tpch_sf01)
