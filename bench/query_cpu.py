"""Time TPC-H queries on pqdb by wall *and* process CPU time (min of N warm
runs).  On a shared machine the CPU time of a one-thread run is the steady
number to compare changes by; the tpch runner (pqdb-tpch run) is the
benchmark of record against DuckDB.

    .venv/bin/python bench/query_cpu.py --queries 1,3,6 --threads 1 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import engine  # noqa: E402
from tpch.queries import query_text, view_statements  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_ROOT, "data", "sf1"))
    ap.add_argument("--queries", default="1,3,6")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    con = engine.connect(threads=args.threads)
    for stmt in view_statements(args.data):
        con.sql(stmt)
    print(f"{args.data}, {args.threads} thread(s), min of {args.repeat} warm runs")
    for q in [int(x) for x in args.queries.split(",")]:
        sql = query_text(q)
        con.sql(sql).fetchall()                      # warm: numba cache, buffers
        wall = cpu = float("inf")
        for _ in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            con.sql(sql).fetchall()
            wall = min(wall, time.perf_counter() - t)
            cpu = min(cpu, time.process_time() - c)
        print(f"Q{q:02d}  wall {wall:.3f} s  cpu {cpu:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
