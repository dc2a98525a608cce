"""Thread scaling: TPC-H queries with threads=1 and threads=N in one run.

    .venv/bin/python bench/scaling.py --data data/sf1 [--queries 1,3,6] [--threads 2]
        [--repeat 3] [--no-peer]

For every query: pqdb's best time with 1 and with N threads, the speedup, the
CPU time per wall second of the N-thread run (how many cores pqdb kept busy),
and -- unless --no-peer -- DuckDB's own 1-thread and N-thread times on the
same files in the same run, as the calibration of what this machine allows.
The 1-thread and N-thread runs of a query are taken in turn (bench/timing.py
best_times_paired): this VM's speed drifts by 10-20% within seconds, and
timing a query's 1-thread runs before its N-thread runs let a slow stretch
fall on one side of the ratio only.
Prints the geometric means of both speedups.  Queries that pqdb cannot run
yet are reported as such.
"""

from __future__ import annotations

import argparse
import math
import resource
import time

import engine
from engine.errors import PqdbError
from tpch.queries import query_text, view_statements
from timing import best_times_paired  # bench/timing.py, next to this script


def _connect(data: str, threads: int):
    con = engine.connect(threads=threads)
    for stmt in view_statements(data):
        con.sql(stmt)
    return con


def _duckdb(data: str, threads: int):
    import duckdb                       # benchmark peer only, never the product
    con = duckdb.connect()
    con.execute(f"SET threads={threads}")
    for stmt in view_statements(data):
        con.execute(stmt)
    return con


def _cores_busy(con, sql: str) -> float:
    """CPU seconds per wall second of one run of sql."""
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    con.sql(sql).fetchall()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return cpu / wall if wall > 0 else 0.0


def _geomean(xs) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--queries", default=",".join(str(q) for q in range(1, 23)))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-peer", action="store_true", help="do not time DuckDB")
    ap.add_argument("--whole-row-groups", action="store_true",
                    help="one morsel per row group (the scan before issue 5), for comparison")
    args = ap.parse_args(argv)
    if args.whole_row_groups:
        from engine.operators.scan import ScanSource
        ScanSource._cut = lambda self, path, rg, cols, n: [(path, rg, cols, 0, n, n)]
    n = args.threads
    one, many = _connect(args.data, 1), _connect(args.data, n)
    peers = None if args.no_peer else (_duckdb(args.data, 1), _duckdb(args.data, n))
    head = f"{'query':>6} {'1 thread':>9} {f'{n} threads':>10} {'speedup':>8} {'cores':>6}"
    if peers:
        head += f" | {'DuckDB 1':>9} {f'DuckDB {n}':>9} {'speedup':>8}"
    print(head)
    ours, theirs = [], []
    for q in (int(x) for x in args.queries.split(",")):
        sql = query_text(q)
        try:
            t1, tn = best_times_paired([one, many], sql, args.repeat)
        except PqdbError as e:
            print(f"Q{q:02d}    not run: {str(e).splitlines()[0][:80]}")
            continue
        ours.append(t1 / tn)
        line = f"Q{q:02d}   {t1:9.3f} {tn:10.3f} {t1 / tn:7.2f}x {_cores_busy(many, sql):6.2f}"
        if peers:
            d1, dn = best_times_paired(peers, sql, args.repeat)
            theirs.append(d1 / dn)
            line += f" | {d1:9.3f} {dn:9.3f} {d1 / dn:7.2f}x"
        print(line, flush=True)
    if ours:
        print(f"geometric mean speedup over {len(ours)} queries: pqdb {_geomean(ours):.2f}x"
              + (f", DuckDB {_geomean(theirs):.2f}x" if theirs else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
