"""Equivalence classes of join columns (planner/rules/join_ordering.py):
where statistics exist, equalities between columns are closed under
transitivity, the join order may use the implied ones, and every join takes
one key per class.  Results must equal DuckDB's, NULL keys included."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from planner import plan_query
from planner.logical import Join

from .duck_statistics import DuckStatistics, DuckStatsCatalog


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    rng = np.random.default_rng(11)
    out = tmp_path_factory.mktemp("classes")

    def ints(n, hi, nulls=0.05, dtype=pa.int64()):
        return pa.array(rng.integers(0, hi, n), dtype, mask=rng.random(n) < nulls)

    tables = {
        "a": pa.table({"x": ints(3000, 400), "y": ints(3000, 400)}),
        "b": pa.table({"x": ints(800, 400), "z": ints(800, 50)}),
        "c": pa.table({"x": pa.array(np.arange(400), pa.int64()), "w": ints(400, 20, 0.0)}),
        "d": pa.table({"k": ints(200, 20, 0.1), "x": ints(200, 400)}),
        "e": pa.table({"x32": ints(500, 400, dtype=pa.int32())}),
    }
    for name, t in tables.items():
        pq.write_table(t, out / f"{name}.parquet")
    return str(out)


def _con(root, threads):
    con = engine.connect(":memory:", threads=threads)
    con.catalog.table_statistics = lambda files: DuckStatistics(files[0])
    for t in "abcde":
        con.sql(f"CREATE VIEW {t} AS SELECT * FROM '{root}/{t}.parquet'")
    return con


def _joins(node):
    if isinstance(node, Join):
        yield node
    for c in node.children:
        yield from _joins(c)


def _plan(root, sql):
    cat = DuckStatsCatalog({t: f"SELECT * FROM '{root}/{t}.parquet'" for t in "abcde"})
    return plan_query(sql, cat)


CASES = [
    # (sql, inner-join keys in the plan)
    ("SELECT count(*), sum(a.y + b.z + c.w) FROM a, b, c WHERE a.x = b.x AND b.x = c.x "
     "AND c.w < 5", 2),
    # a redundant third equality: still one key per join
    ("SELECT count(*), sum(a.y) FROM a, b, c WHERE a.x = b.x AND b.x = c.x AND a.x = c.x "
     "AND c.w = 3", 2),
    # four members and another equality between two of the leaves
    ("SELECT count(*), sum(b.z), min(d.k) FROM a, b, c, d WHERE a.x = b.x AND b.x = c.x "
     "AND d.x = a.x AND c.w = d.k", 4),
    # a residual over two members' tables
    ("SELECT count(*) FROM a, b, c WHERE a.x = b.x AND b.x = c.x AND a.y < c.w + b.z", 2),
    # two columns of one leaf in the class: no class, the equalities as written
    ("SELECT count(*) FROM a, b, c WHERE a.x = b.x AND a.y = b.x AND b.x = c.x", 3),
    # an INTEGER column compared with BIGINT ones (a cast): no class
    ("SELECT count(*) FROM a, e, c WHERE a.x = e.x32 AND e.x32 = c.x AND c.w < 3", 2),
    # a left join below the region is one leaf
    ("SELECT count(*), sum(t.z) FROM (SELECT a.x, b.z FROM a LEFT JOIN b ON a.y = b.x) t, c, d "
     "WHERE t.x = c.x AND c.x = d.x AND d.k = 4", 2),
]


@pytest.mark.parametrize("sql,keys", CASES)
def test_results_equal_duckdb(root, sql, keys):
    import duckdb
    duck = duckdb.connect()
    for t in "abcde":
        duck.execute(f"CREATE VIEW {t} AS SELECT * FROM '{root}/{t}.parquet'")
    want = duck.execute(sql).fetchall()
    for threads in (1, 2):
        assert _con(root, threads).sql(sql).fetchall() == want
    plan = _plan(root, sql)
    inner = [j for j in _joins(plan) if j.kind == "inner"]
    assert sum(len(j.left_keys) for j in inner) == keys


def test_implied_edge_is_used(root):
    """a and c are both filtered, b is not: the plan joins a with c on
    a.x = c.x, which no conjunct names, before b."""
    from planner.cardinality import column_origin
    sql = ("SELECT count(*) FROM a, b, c WHERE a.x = b.x AND b.x = c.x AND c.w = 3 "
           "AND a.y < 100")
    plan = _plan(root, sql)
    pairs = set()
    for j in _joins(plan):
        for lk, rk in zip(j.left_keys, j.right_keys):
            pairs.add(frozenset((column_origin(j.left, lk.index).scan.alias,
                                 column_origin(j.right, rk.index).scan.alias)))
    assert frozenset(("a", "c")) in pairs, pairs
    assert len(pairs) == 2
