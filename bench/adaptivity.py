"""What adaptive statistics cost and buy on TPC-H, next to DuckDB in the
same run (printed, not asserted).

Per query:
- first:  the query in a fresh connection (it collects statistics);
- off:    the same in a fresh connection with ``statistics = false``;
          collect% = (first - off) / first, the collection share;
- second: the query again on the first run's connection (statistics in
          place; best of --repeat);
- warm:   the query again on the statistics-off connection (best of
          --repeat): what the second run would take without statistics;
- max q / med q: the q-errors of the join estimates of the second run's
          plan (planned after exactly one run: statistics and cardinality
          feedback of the first), against the true sizes (DuckDB counts
          each join's subtree, turned into SQL);
- plan:   '*' when the second run's join plan differs from the first's;
- duckdb: DuckDB over the same Parquet files (best of --repeat).
Then geometric means, the aims of the statistics issue, and the size of
every table's statistics.

    .venv/bin/python bench/adaptivity.py --data data/sf1 --threads 2 --repeat 3
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics as pystats
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import engine  # noqa: E402
from planner import plan_query  # noqa: E402
from planner.cardinality import estimate  # noqa: E402
from planner.explain import explain, render  # noqa: E402
from planner.logical import Aggregate, Filter, Join, Limit, Project, Scan, Sort  # noqa: E402
from tpch.queries import TABLES, query_text, view_statements  # noqa: E402


# ---- join subtrees as SQL (counted by DuckDB) ------------------------------------------

def plan_sql(node) -> str:
    """A query over the TPC-H views whose rows are node's rows (columns c0, c1, ...)."""
    def names(n, prefix=""):
        return [f"{prefix}c{i}" for i in range(len(n.schema))]

    if isinstance(node, Scan):
        table = os.path.basename(node.files[0]).split(".")[0]
        cols = [node.table_columns[c].name for c in node.columns]
        where = " AND ".join(render(f, cols) for f in node.filters)
        return (f"SELECT {', '.join(f'{c} AS c{i}' for i, c in enumerate(cols)) or '1 AS c'} "
                f"FROM {table}" + (f" WHERE {where}" if where else ""))
    if isinstance(node, (Sort, Limit)) and not (isinstance(node, Limit) and node.limit):
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
        aggs = [("count(*)" if a.arg is None else
                 f"{a.func}({'DISTINCT ' if a.distinct else ''}{render(a.arg, cn)})")
                for a in node.aggregates]
        items = [render(g, cn) for g in node.groups] + aggs
        group = f" GROUP BY {', '.join(render(g, cn) for g in node.groups)}" if node.groups else ""
        return (f"SELECT {', '.join(f'{x} AS c{i}' for i, x in enumerate(items))} "
                f"FROM ({plan_sql(node.child)}) t{group}")
    if isinstance(node, Join) and node.kind in ("inner", "cross", "left", "semi", "anti"):
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
        kind = "LEFT JOIN" if node.kind == "left" else "JOIN"
        nl = len(node.left.schema)
        rcols = ", ".join(f"r.c{j} AS c{nl + j}" for j in range(len(node.right.schema)))
        rcols = f", {rcols}" if rcols else ""
        return f"SELECT l.*{rcols} FROM ({left}) l {kind} ({right}) r ON {on}"
    raise NotImplementedError(type(node).__name__)


def joins(node):
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Join):
            yield n
        stack.extend(n.children)


def q_errors(plan, duck, memo: dict, verbose: bool = False) -> list[float]:
    out = []
    for j in joins(plan):
        try:
            sql = plan_sql(j)
        except NotImplementedError:
            continue
        if sql not in memo:
            memo[sql] = duck.execute(f"SELECT count(*) FROM ({sql}) x").fetchone()[0]
        est, actual = max(estimate(j), 1.0), max(memo[sql], 1)
        out.append(max(est / actual, actual / est))
        if verbose:
            tables = sorted(os.path.basename(s.files[0]).split(".")[0] for s in scans(j))
            print(f"      {j.kind:5} {' '.join(tables):<45} est {est:>12,.0f} "
                  f"actual {actual:>12,} q {out[-1]:.2f}")
    return out


def scans(node):
    if isinstance(node, Scan):
        yield node
    for c in node.children:
        yield from scans(c)


_ESTIMATE = re.compile(r"\s*\(~[^)]*\)")


def join_plan(con, sql: str) -> str:
    """EXPLAIN text without the estimates: the plan's shape."""
    return _ESTIMATE.sub("", con.sql("EXPLAIN " + sql).fetchall()[0][0])


def plan_of(con, sql: str):
    stmt = con.statements(sql)[-1]
    return plan_query(stmt.ast, con.catalog, params=None, sql=stmt.sql)


# ---- timing -----------------------------------------------------------------------------

def connect(data: str, threads: int, **options):
    con = engine.connect(threads=threads, **options)
    for stmt in view_statements(data):
        con.sql(stmt)
    return con


def timed(con, sql: str) -> float:
    t0 = time.perf_counter()
    con.sql(sql).fetchall()
    return time.perf_counter() - t0


def best(fn, repeat: int) -> float:
    return min(fn() for _ in range(max(repeat, 1)))


def geomean(xs) -> float:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def statistics_sizes(con) -> dict:
    from stats.tables import statistics_nbytes
    from tpch.queries import table_path
    store = con.catalog.statistics.store
    out = {}
    for t in TABLES:
        files = con.catalog.resolve_files(table_path(con._bench_data, t))
        ids = tuple(con.catalog.file_identity(p) for p in files)
        fstats = [store.file(i) for i in ids]
        cols = max((len(f.columns) for f in fstats if f is not None), default=0)
        out[t] = (statistics_nbytes(fstats, store.sample(ids)), cols)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_ROOT, "data", "sf1"))
    ap.add_argument("--queries", default=",".join(str(q) for q in range(1, 23)))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="runs of second / DuckDB (best)")
    ap.add_argument("--first-repeat", type=int, default=2,
                    help="fresh connections per first run, stats on and off (best)")
    ap.add_argument("--no-qerror", action="store_true", help="skip the DuckDB join counts")
    ap.add_argument("--verbose", action="store_true", help="every join's estimate and size")
    args = ap.parse_args(argv)
    import duckdb
    queries = [int(x) for x in args.queries.split(",")]
    duck = duckdb.connect()
    duck.execute(f"SET threads = {args.threads}")
    for stmt in view_statements(args.data):
        duck.execute(stmt)
    warmup = connect(args.data, args.threads)                 # numba kernels loaded
    for q in queries:
        warmup.sql(query_text(q)).fetchall()
    warmup.close()
    counts: dict = {}
    rows = []
    last = None
    print(f"{args.data}, {args.threads} threads; first/off: best of {args.first_repeat} fresh "
          f"connections; second/duckdb: best of {args.repeat}")
    print(f"{'q':>3} {'first':>7} {'off':>7} {'collect':>8} {'second':>7} {'warm':>7} "
          f"{'max q':>7} {'med q':>6} {'plan':>4} {'duckdb':>7} {'2nd/duck':>8}")
    for q in queries:
        sql = query_text(q)
        firsts, offs, con, off = [], [], None, None
        for _ in range(max(args.first_repeat, 1)):
            if off is not None:
                off.close()
            off = connect(args.data, args.threads, statistics=False)
            offs.append(timed(off, sql))
            fresh = connect(args.data, args.threads)
            plan_before = join_plan(fresh, sql)
            firsts.append(timed(fresh, sql))
            if con is not None:
                con.close()
            con = fresh
        first, off_t = min(firsts), min(offs)
        # the second run's plan: after one run (statistics and feedback of it)
        changed = join_plan(con, sql) != plan_before
        errs = [] if args.no_qerror else q_errors(plan_of(con, sql), duck, counts,
                                                  args.verbose)
        second, warm = math.inf, math.inf
        for _ in range(max(args.repeat, 1)):          # in turn: both meet the same load
            second = min(second, timed(con, sql))
            warm = min(warm, timed(off, sql))
        off.close()
        duck.execute(sql).fetchall()                    # warm
        duck_t = best(lambda: _duck_time(duck, sql), args.repeat)
        share = (first - off_t) / first
        mx = max(errs) if errs else float("nan")
        med = pystats.median(errs) if errs else float("nan")
        rows.append((q, first, off_t, share, second, errs, changed, duck_t, warm))
        print(f"{q:>3} {first:7.3f} {off_t:7.3f} {share * 100:7.1f}% {second:7.3f} {warm:7.3f} "
              f"{mx:7.2f} {med:6.2f} {'*' if changed else '':>4} {duck_t:7.3f} "
              f"{second / duck_t:8.2f}", flush=True)
        if last is not None:
            last.close()
        last = con
    all_errs = [e for r in rows for e in r[5]]
    print()
    print(f"geomean first {geomean([r[1] for r in rows]):.3f} s, "
          f"off {geomean([r[2] for r in rows]):.3f} s, second {geomean([r[4] for r in rows]):.3f} s, DuckDB "
          f"{geomean([r[7] for r in rows]):.3f} s")
    print(f"collection share of the first run (geomean of first/off): "
          f"{(1 - 1 / geomean([r[1] / r[2] for r in rows])) * 100:.1f}% "
          f"(aim <= 15%)")
    print(f"second run / DuckDB (geomean): {geomean([r[4] / r[7] for r in rows]):.2f}x "
          f"(aim <= 0.85x); second run / warm run without statistics: "
          f"{geomean([r[4] / r[8] for r in rows]):.2f}x")
    for q in (5, 21):
        r = next((r for r in rows if r[0] == q), None)
        if r is not None:
            print(f"Q{q} second / DuckDB: {r[4] / r[7]:.2f}x (aim <= 1.2x)")
    if all_errs:
        print(f"join q-errors of the second runs: max {max(all_errs):.2f} (aim <= 10), "
              f"median {pystats.median(all_errs):.2f} (aim <= 2), {len(all_errs)} joins")
    print(f"plans changed by statistics: {sum(r[6] for r in rows)} of {len(rows)}")
    full = connect(args.data, args.threads)
    full._bench_data = args.data
    for q in queries:
        full.sql(query_text(q)).fetchall()
    print("statistics held after all queries (bytes, columns):")
    for t, (nbytes, cols) in statistics_sizes(full).items():
        print(f"  {t:<9} {nbytes:>9,} B  {cols} columns")
    return 0


def _duck_time(duck, sql: str) -> float:
    t0 = time.perf_counter()
    duck.execute(sql).fetchall()
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main())
