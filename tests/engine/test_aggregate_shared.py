"""Aggregation with shared argument subexpressions (evaluated once per
block) and sum/avg pairs over the same argument (one shared state), plus
scans whose filters select rows before the other columns decode: SQL vs
DuckDB, for several thread counts and block sizes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.test_executor_helpers import assert_matches_duckdb, write_sample_tables

CONFIGS = [(1, 65536), (2, 1000), (2, 777)]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    return write_sample_tables(tmp_path_factory.mktemp("aggshared"))


QUERIES = [
    # Q1-like: a product reused inside another product, sum and avg of one argument
    """SELECT s IS NULL AS sn, k % 3 AS g,
              sum(d), avg(d), sum(d * (1 - d)), sum(d * (1 - d) * (1 + d)),
              avg(k), sum(k), count(*), count(d), min(d * (1 - d))
       FROM t1 WHERE dt <= DATE '1995-12-01' GROUP BY ALL""",
    # a filter that keeps few rows: other columns decode only the kept rows
    """SELECT sum(d), count(s), min(s), max(f), sum(id)
       FROM t1 WHERE dt >= DATE '1995-03-01' AND dt < DATE '1995-03-20' AND k < 100""",
    # CASE above a shared subtree: the branch is not hoisted
    """SELECT k % 5 AS g, sum(CASE WHEN d > 0 THEN d * 2 ELSE 0 END), sum(d * 2)
       FROM t1 GROUP BY ALL""",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_shared_subexpressions_and_selective_scans(tables, sql):
    p1, _ = tables
    assert_matches_duckdb(sql, {"t1": p1}, CONFIGS)


CODED = [
    # NULL-free dictionary-encoded string keys: group ids from the codes
    "SELECT name, count(*), sum(v), min(v) FROM t2 GROUP BY name",
    "SELECT name, substring(name, 1, 6) AS p, sum(v) FROM t2 WHERE v < 700 GROUP BY ALL",
    # a nullable string key next to a coded one: the general path
    "SELECT name, s, count(*) FROM t2 GROUP BY ALL",
]


@pytest.mark.parametrize("sql", CODED)
def test_group_by_dictionary_codes(tables, sql):
    _, p2 = tables
    assert_matches_duckdb(sql, {"t2": p2}, CONFIGS)


def test_scan_yields_coded_vectors(tables):
    from engine.operators.aggregate import coded_group_ids
    from engine.block import Vector
    from engine.operators.scan import CodedVector, column_vector
    from engine.kernels.hashtable import GroupTable
    from planner import types as T
    from scan import open_parquet
    _, p2 = tables
    pf = open_parquet(p2)
    col = pf.column_index("name")
    vec = column_vector(pf, 0, col, T.VARCHAR)
    assert isinstance(vec, CodedVector)
    # the rows' views are gathered only when read; selecting rows keeps codes alone
    from engine.operators.filter import select_vector
    picked = select_vector(vec, np.arange(len(vec)) % 3 == 0)
    assert vec._data is None and isinstance(picked, CodedVector) and picked._data is None
    assert (picked.data == vec.data[::3]).all()
    assert (vec.dictionary[vec.codes] == vec.data).all()
    part = vec.slice(10, 50)
    assert isinstance(part, CodedVector) and (part.dictionary[part.codes] == part.data).all()
    table = GroupTable(1, 1)
    gid = coded_group_ids(table, [vec], len(vec))
    w, strs, heap = table.keys()
    assert (strs[gid, 0] == vec.data[:, 0]).all()
    assert coded_group_ids(GroupTable(1, 1), [vec, Vector(T.VARCHAR, vec.data, None, vec.heap)], len(vec)) is None
