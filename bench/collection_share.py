"""The collection share of TPC-H first runs, for one or more checkouts of
pqdb timed in turn (printed, not asserted).

Per checkout and round, one process runs every query in a fresh
connection with ``statistics = false`` and then in a fresh connection
collecting (after a warm-up pass over all queries: numba caches loaded),
taking wall and process CPU time.  Checkouts alternate round by round,
so that a loaded, drifting host weighs on each alike; per query the best
of the rounds counts.  share = (on - off) / on, geomean over the queries
as bench/adaptivity.py prints it.

    .venv/bin/python bench/collection_share.py --data data/sf1 --rounds 5 \\
        --roots base=/tmp/pqdb-base,new=.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
sys.path.insert(0, ".")
import engine
from tpch.queries import query_text, view_statements
data, threads, qs = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")]
def connect(**options):
    con = engine.connect(threads=threads, **options)
    for stmt in view_statements(data):
        con.sql(stmt)
    return con
warm = connect()
for q in qs:
    warm.sql(query_text(q)).fetchall()
warm.close()
out = {}
for q in qs:
    got = {}
    for on in (False, True):
        con = connect(statistics=on)
        c0, t0 = time.process_time(), time.perf_counter()
        con.sql(query_text(q)).fetchall()
        got["on" if on else "off"] = (time.perf_counter() - t0, time.process_time() - c0)
        con.close()
    out[q] = got
print(json.dumps(out))
"""


def geomean(xs) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_ROOT, "data", "sf1"))
    ap.add_argument("--queries", default=",".join(str(q) for q in range(1, 23)))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--roots", default=f"this={_ROOT}",
                    help="name=checkout,... (each checkout's own code is imported)")
    args = ap.parse_args(argv)
    roots = dict(item.split("=", 1) for item in args.roots.split(","))
    data = os.path.abspath(args.data)
    runs = {name: {} for name in roots}              # name -> q -> {"on": [...], "off": [...]}
    order = list(roots.items())
    for r in range(args.rounds):
        for name, root in (order if r % 2 == 0 else order[::-1]):
            p = subprocess.run([sys.executable, "-c", CHILD, data, str(args.threads),
                                args.queries], cwd=os.path.abspath(root), capture_output=True,
                               text=True)
            if p.returncode:
                print(p.stderr[-3000:], file=sys.stderr)
                return 1
            for q, got in json.loads(p.stdout.strip().splitlines()[-1]).items():
                slot = runs[name].setdefault(int(q), {"on": [], "off": []})
                for k in ("on", "off"):
                    slot[k].append(got[k])
        print(f"round {r + 1} of {args.rounds} done", flush=True)
    print(f"{args.data}, {args.threads} threads, best of {args.rounds} rounds "
          f"(wall on / off, share; process CPU share)")
    print(f"{'q':>3} " + "".join(f"| {name:>12} {'on':>6} {'off':>6} {'share':>6} {'cpu':>6} "
                                 for name in roots))
    ratios = {name: ([], []) for name in roots}
    for q in sorted(next(iter(runs.values()))):
        line = f"{q:>3} "
        for name in roots:
            on, off = runs[name][q]["on"], runs[name][q]["off"]
            won, woff = min(x[0] for x in on), min(x[0] for x in off)
            con, coff = min(x[1] for x in on), min(x[1] for x in off)
            ratios[name][0].append(won / woff)
            ratios[name][1].append(con / coff)
            line += (f"| {'':>12} {won:6.3f} {woff:6.3f} {(won - woff) / won * 100:5.1f}% "
                     f"{(con - coff) / con * 100:5.1f}% ")
        print(line)
    for name in roots:
        w, c = geomean(ratios[name][0]), geomean(ratios[name][1])
        print(f"{name}: collection share of the first run (geomean) {(1 - 1 / w) * 100:.1f}% "
              f"wall, {(1 - 1 / c) * 100:.1f}% process CPU (aim <= 15%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
