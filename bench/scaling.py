"""Thread scaling: TPC-H queries with threads=1 and threads=N in one run.

    .venv/bin/python bench/scaling.py --data data/sf1 [--queries 1,3,6] [--threads 2] [--repeat 3]

Prints per-query times, the speedup, the peak resident memory of the process
while the query ran with N threads, and the geometric mean of the speedups.
Queries that pqdb cannot run yet are reported as such.
"""

from __future__ import annotations

import argparse
import math

import engine
from engine.errors import PqdbError
from engine.memory_probe import PeakMemory
from tpch.queries import query_text, view_statements
from timing import best_time  # bench/timing.py, next to this script


def _connect(data: str, threads: int):
    con = engine.connect(threads=threads)
    for stmt in view_statements(data):
        con.sql(stmt)
    return con




def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--queries", default=",".join(str(q) for q in range(1, 23)))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--whole-row-groups", action="store_true",
                    help="one morsel per row group (the scan before issue 5), for comparison")
    args = ap.parse_args(argv)
    if args.whole_row_groups:
        from engine.operators.scan import ScanSource
        ScanSource._cut = lambda self, path, rg, cols, n: [(path, rg, cols, 0, n, n)]
    one, many = _connect(args.data, 1), _connect(args.data, args.threads)
    print(f"{'query':>6} {'1 thread':>10} {str(args.threads) + ' threads':>10} {'speedup':>8} "
          f"{'peak MiB':>9}")
    speedups = []
    for q in (int(x) for x in args.queries.split(",")):
        sql = query_text(q)
        try:
            t1 = best_time(one, sql, args.repeat)
            tn = best_time(many, sql, args.repeat)
        except PqdbError as e:
            print(f"Q{q:02d}    not run: {str(e).splitlines()[0][:80]}")
            continue
        speedups.append(t1 / tn)
        with PeakMemory() as peak:
            many.sql(sql).fetchall()
        print(f"Q{q:02d}   {t1:10.3f} {tn:10.3f} {t1 / tn:7.2f}x {peak.mib:9.0f}", flush=True)
    if speedups:
        geo = math.exp(sum(map(math.log, speedups)) / len(speedups))
        print(f"geometric mean speedup over {len(speedups)} queries: {geo:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
