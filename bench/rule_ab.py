"""One optimizer rule on and off, in one connection: which TPC-H plans it
changes and what each changed query takes both ways.

    .venv/bin/python bench/rule_ab.py --data data/sf1 --rule eager_aggregation \\
        [--queries 1-22] [--repeat 3] [--threads 2] [--plans]

Each query runs once first (statistics and feedback in place, as for a
second run); then, when the plan differs without the rule, both plans run
``--repeat`` times in turn and the best of each is printed (``--plans``
prints the plan with the rule too).  Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import engine  # noqa: E402
import planner.optimizer as optimizer  # noqa: E402
from tpch.queries import parse_query_list, query_text, view_statements  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--rule", required=True, help="a function name in planner.optimizer.RULES")
    ap.add_argument("--queries", default="1-22")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--plans", action="store_true")
    args = ap.parse_args(argv)
    with_rule = optimizer.RULES
    without = tuple(r for r in with_rule if r.__name__ != args.rule)
    if len(without) == len(with_rule):
        ap.error(f"no rule {args.rule!r} in planner.optimizer.RULES")
    con = engine.connect(threads=args.threads)
    for stmt in view_statements(args.data):
        con.sql(stmt)
    print(f"{args.data}, rule {args.rule}, {args.threads} threads, best of {args.repeat}")
    changed = 0
    try:
        for q in parse_query_list(args.queries):
            sql = query_text(q)
            con.sql(sql).fetchall()
            optimizer.RULES = with_rule
            plan_on = con.sql("EXPLAIN " + sql).fetchall()[0][0]
            optimizer.RULES = without
            plan_off = con.sql("EXPLAIN " + sql).fetchall()[0][0]
            if plan_on == plan_off:
                continue
            changed += 1
            best = {"with": float("inf"), "without": float("inf")}
            for _ in range(args.repeat):
                for name, rules in (("with", with_rule), ("without", without)):
                    optimizer.RULES = rules
                    t0 = time.perf_counter()
                    con.sql(sql).fetchall()
                    best[name] = min(best[name], time.perf_counter() - t0)
            print(f"Q{q:<3} with {best['with']:.3f} s  without {best['without']:.3f} s  "
                  f"ratio {best['with'] / best['without']:.2f}")
            if args.plans:
                print(plan_on)
    finally:
        optimizer.RULES = with_rule
    print(f"plans changed: {changed}")


if __name__ == "__main__":
    main()
