"""What counting every plan node's rows costs a query (cardinality feedback,
planner/feedback.py): each TPC-H query's plan run with and without the
per-block row counters (engine.analyze.QueryProfile(timed=False)), in turn
on one connection with statistics off (so the plan is the same and nothing
is recorded), best of --repeat each.  Printed, not asserted.

    .venv/bin/python bench/feedback_overhead.py --data data/sf1 --threads 2 --repeat 5
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import engine  # noqa: E402
from engine.analyze import QueryProfile  # noqa: E402
from planner import plan_query  # noqa: E402
from tpch.queries import query_text, view_statements  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_ROOT, "data", "sf1"))
    ap.add_argument("--queries", default=",".join(str(q) for q in range(1, 23)))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    con = engine.connect(threads=args.threads, statistics=False)
    for stmt in view_statements(args.data):
        con.sql(stmt)
    print(f"{args.data}, {args.threads} threads, best of {args.repeat}, in turn")
    print(f"{'q':>3} {'plain':>8} {'counted':>8} {'ratio':>6}")
    ratios = []
    for q in (int(x) for x in args.queries.split(",")):
        sql = query_text(q)
        con.sql(sql).fetchall()                        # warm: kernels, cached bytes
        plain = counted = math.inf
        for _ in range(max(args.repeat, 1)):
            plan = plan_query(sql, con.catalog)
            t0 = time.perf_counter()
            con.run_plan(plan)
            plain = min(plain, time.perf_counter() - t0)
            plan = plan_query(sql, con.catalog)
            t0 = time.perf_counter()
            con.run_plan(plan, profile=QueryProfile(timed=False))
            counted = min(counted, time.perf_counter() - t0)
        ratios.append(counted / plain)
        print(f"{q:>3} {plain:8.3f} {counted:8.3f} {ratios[-1]:6.3f}", flush=True)
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"counted / plain (geomean over {len(ratios)} queries): {geo:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
