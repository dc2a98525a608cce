"""Writes tests/planner/tpch_sf1_stats.py: the TPC-H SF1 numbers behind the
fake statistics of tests/planner/tpch_statistics.py, taken from DuckDB.

    python -m tests.planner.make_tpch_sf1_stats /path/to/sf1

Row counts, every column's distinct count and the primary keys of the
eight tables; then the queries of test_tpch_join_orders.py are planned with
the statistics known so far, and every filter set (rows, and distinct
counts under it) the planner asked about and the data lacked is counted
in DuckDB, until planning asks nothing new.  Last, every join of the final
plans is turned into SQL (``plan_sql``) and counted: the actual rows that
the q-error report compares the estimates with.  Run it again when the
planner starts asking other questions (the test then says which).
"""

from __future__ import annotations

import os
import pprint
import sys
import types

import duckdb

from planner import plan_query
from planner.explain import aggregate_text, render
from planner.logical import Aggregate, Filter, Join, Limit, Project, Scan, Sort

from . import tpch_statistics
from .test_tpch_join_orders import QUERIES, join_signatures
from .tpch_statistics import TpchStatsCatalog

OUT = os.path.join(os.path.dirname(__file__), "tpch_sf1_stats.py")
TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")
# the TPC-H primary keys; checked below (distinct = rows)
KEYS = {"customer": [("c_custkey",)], "lineitem": [("l_orderkey", "l_linenumber")],
        "nation": [("n_nationkey",)], "orders": [("o_orderkey",)], "part": [("p_partkey",)],
        "partsupp": [("ps_partkey", "ps_suppkey")], "region": [("r_regionkey",)],
        "supplier": [("s_suppkey",)]}


def plan_sql(node) -> str:
    """A query over the TPC-H views whose rows are node's rows (columns
    c0, c1, ...)."""
    def names(n, prefix=""):
        return [f"{prefix}c{i}" for i in range(len(n.schema))]

    if isinstance(node, Scan):
        table = os.path.basename(node.files[0]).split(".")[0]
        cols = [node.table_columns[c].name for c in node.columns]
        where = " AND ".join(render(f, cols) for f in node.filters)
        return (f"SELECT {', '.join(f'{c} AS c{i}' for i, c in enumerate(cols))} FROM {table}"
                + (f" WHERE {where}" if where else ""))
    if isinstance(node, (Sort, Limit)):
        return plan_sql(node.child)
    if isinstance(node, Filter):
        return (f"SELECT * FROM ({plan_sql(node.child)}) t "
                f"WHERE {render(node.predicate, names(node.child))}")
    if isinstance(node, Project):
        cn = names(node.child)
        return (f"SELECT {', '.join(f'{render(e, cn)} AS c{i}' for i, e in enumerate(node.exprs))}"
                f" FROM ({plan_sql(node.child)}) t")
    if isinstance(node, Aggregate):
        cn = names(node.child)
        items = [render(g, cn) for g in node.groups] + [
            aggregate_text(a, cn).replace("count_star()", "count(*)") for a in node.aggregates]
        group = f" GROUP BY {', '.join(render(g, cn) for g in node.groups)}" if node.groups else ""
        return (f"SELECT {', '.join(f'{x} AS c{i}' for i, x in enumerate(items))} "
                f"FROM ({plan_sql(node.child)}) t{group}")
    if isinstance(node, Join):
        ln, rn = names(node.left, "l."), names(node.right, "r.")
        cond = [f"{render(a, ln)} = {render(b, rn)}"
                for a, b in zip(node.left_keys, node.right_keys)]
        if node.residual is not None:
            cond.append(render(node.residual, ln + rn))
        on = " AND ".join(cond) or "TRUE"
        left, right = plan_sql(node.left), plan_sql(node.right)
        if node.kind in ("semi", "anti"):
            neg = "NOT " if node.kind == "anti" else ""
            return (f"SELECT * FROM ({left}) l WHERE {neg}EXISTS "
                    f"(SELECT 1 FROM ({right}) r WHERE {on})")
        kind = {"inner": "JOIN", "cross": "JOIN", "left": "LEFT JOIN"}[node.kind]
        nl = len(node.left.schema)
        rcols = ", ".join(f"r.c{j} AS c{nl + j}" for j in range(len(node.right.schema)))
        return f"SELECT l.*, {rcols} FROM ({left}) l {kind} ({right}) r ON {on}"
    raise NotImplementedError(type(node).__name__)


def _base(con) -> types.SimpleNamespace:
    data = types.SimpleNamespace(ROWS={}, DISTINCT={}, KEYS=KEYS, FILTERED={},
                                 FILTERED_DISTINCT={}, ACTUALS={})
    for t in TABLES:
        cols = [r[0] for r in con.execute(f"DESCRIBE {t}").fetchall()]
        counts = con.execute(f"SELECT count(*), {', '.join(f'count(DISTINCT {c})' for c in cols)} "
                             f"FROM {t}").fetchone()
        data.ROWS[t] = counts[0]
        data.DISTINCT[t] = dict(zip(cols, counts[1:]))
        for key in KEYS[t]:
            n = con.execute(f"SELECT count(*) FROM (SELECT DISTINCT {', '.join(key)} "
                            f"FROM {t})").fetchone()[0]
            assert n == counts[0], (t, key)
        print(t, counts[0], file=sys.stderr)
    return data


def main(sf1: str) -> None:
    con = duckdb.connect()
    for t in TABLES:
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM '{sf1}/{t}.parquet'")
    data = _base(con)
    catalog = TpchStatsCatalog(sf1, data)
    for _ in range(5):
        tpch_statistics.MISSES.clear()
        plans = {q: plan_query(sql, catalog) for q, sql in QUERIES.items()}
        if not tpch_statistics.MISSES:
            break
        for miss in sorted(tpch_statistics.MISSES):
            if miss[0] == "filtered":
                _, t, key = miss
                data.FILTERED[(t, key)] = con.execute(
                    f"SELECT count(*) FROM {t} WHERE {key}").fetchone()[0]
            else:
                _, t, col, key = miss
                data.FILTERED_DISTINCT[(t, col, key)] = con.execute(
                    f"SELECT count(DISTINCT {col}) FROM {t} WHERE {key}").fetchone()[0]
            print(miss, file=sys.stderr)
    else:
        raise RuntimeError(f"planning keeps asking: {sorted(tpch_statistics.MISSES)}")
    for q, plan in plans.items():
        data.ACTUALS[q] = {}
        for sig, join in join_signatures(plan):
            data.ACTUALS[q][sig] = con.execute(
                f"SELECT count(*) FROM ({plan_sql(join)}) x").fetchone()[0]
            print(q, sig, data.ACTUALS[q][sig], file=sys.stderr)
    with open(OUT, "w") as f:
        f.write('"""TPC-H SF1 numbers from DuckDB for tests/planner/tpch_statistics.py;\n'
                'written by tests/planner/make_tpch_sf1_stats.py (do not edit)."""\n\n')
        f.write("# ruff: noqa: E501\n")
        for name in ("ROWS", "DISTINCT", "KEYS", "FILTERED", "FILTERED_DISTINCT", "ACTUALS"):
            f.write(f"{name} = {pprint.pformat(getattr(data, name), width=100)}\n\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/main/data/sf1")
