"""Joins without equality keys: pqdb against DuckDB at growing sizes.

    .venv/bin/python bench/joins.py [--sizes 10000,100000,1000000] [--threads 2]
        [--repeat 3] [--data data/joins] [--no-memory] [--json out.json]

Two tables ``a`` and ``b`` of n rows each (x, y uniform in [0, 1e9), an
id), written once per size under --data.  Queries (the conditions scale
with n so that each returns about n pairs):

  inequality  SELECT count(*), sum(a.x), sum(b.y) FROM a, b WHERE a.x + C < b.y
              (C = 1e9 (1 - sqrt(2/n)): a selective a.x < b.y)
  band        SELECT count(*), sum(a.x - b.x) FROM a, b
              WHERE b.x BETWEEN a.x - W AND a.x + W          (W = 1e9 / n)

Times: the best of --repeat warm runs, pqdb's and DuckDB's runs taken in
turn in one process (bench/timing.py best_times_paired), both engines at
--threads.  Peak memory: each engine, query and size alone in a fresh
process (this script with --child): views made, one warm-up run, the
kernel's peak RSS (VmHWM) reset, the measured run; printed as the peak
over the RSS right before it.  Printed, never asserted; the answers of the
two engines are compared.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing import best_times_paired  # noqa: E402  (bench/timing.py)

MIB = 1 << 20
SPAN = 1_000_000_000


def queries(n: int) -> dict[str, str]:
    c = int(SPAN * (1 - math.sqrt(2 / n)))
    w = max(SPAN // n, 1)
    return {
        "inequality": f"SELECT count(*), sum(a.x), sum(b.y) FROM a, b WHERE a.x + {c} < b.y",
        "band": f"SELECT count(*), sum(a.x - b.x) FROM a, b "
                f"WHERE b.x BETWEEN a.x - {w} AND a.x + {w}",
    }


def write_tables(data: str, n: int) -> dict[str, str]:
    import numpy as np
    import pyarrow as pa                     # benchmark tooling only, never the product
    import pyarrow.parquet as pq
    out = {}
    for seed, name in ((1, "a"), (2, "b")):
        path = os.path.join(data, f"n{n}", f"{name}.parquet")
        out[name] = path
        if os.path.exists(path):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        rng = np.random.default_rng(seed)
        table = pa.table({"id": np.arange(n, dtype=np.int64),
                          "x": rng.integers(0, SPAN, n), "y": rng.integers(0, SPAN, n)})
        pq.write_table(table, path + ".tmp", row_group_size=122_880)
        os.replace(path + ".tmp", path)
    return out


def connect(engine_name: str, tables: dict, threads: int):
    if engine_name == "pqdb":
        import engine
        con = engine.connect(threads=threads)
    else:
        import duckdb
        con = duckdb.connect()
        con.execute(f"SET threads = {threads}")
    for name, path in tables.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    return con


def child(spec: dict) -> dict:
    """One engine, one query, in this fresh process: peak RSS of a warm run."""
    from engine.memory_probe import PeakMemory, current_rss
    con = connect(spec["engine"], spec["tables"], spec["threads"])
    con.sql(spec["sql"]).fetchall()
    before = current_rss()
    t0 = time.perf_counter()
    with PeakMemory() as peak:
        rows = con.sql(spec["sql"]).fetchall()
    return {"seconds": time.perf_counter() - t0, "before": before, "peak": peak.bytes,
            "rows": [list(map(str, r)) for r in rows]}


def peak_in_child(engine_name: str, tables: dict, threads: int, sql: str) -> dict:
    spec = {"engine": engine_name, "tables": tables, "threads": threads, "sql": sql}
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
                          capture_output=True, text=True, timeout=3600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    return json.loads(lines[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", default=os.path.join(REPO, "data", "joins"))
    ap.add_argument("--no-memory", dest="memory", action="store_false")
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print(f"joins without equality keys, {args.threads} threads, best of {args.repeat} warm "
          f"runs; peak RSS over the RSS before the run, each in a fresh process", flush=True)
    head = (f"{'rows/side':>10} {'query':<11} {'pqdb s':>8} {'duckdb s':>9} {'pqdb/duck':>9}"
            + (f" {'pqdb MiB':>9} {'duckdb MiB':>10}" if args.memory else "") + "  answer")
    print(head, flush=True)
    report = []
    for n in sizes:
        tables = write_tables(args.data, n)
        pq_con = connect("pqdb", tables, args.threads)
        dk_con = connect("duckdb", tables, args.threads)
        for name, sql in queries(n).items():
            got = pq_con.sql(sql).fetchall()
            want = dk_con.sql(sql).fetchall()
            same = [tuple(map(str, r)) for r in got] == [tuple(map(str, r)) for r in want]
            tp, td = best_times_paired([pq_con, dk_con], sql, args.repeat)
            entry = {"rows": n, "query": name, "sql": sql, "pqdb_s": tp, "duckdb_s": td,
                     "same_answer": same, "answer": [list(map(str, r)) for r in got]}
            line = f"{n:>10} {name:<11} {tp:8.3f} {td:9.3f} {tp / td:9.2f}"
            if args.memory:
                for eng in ("pqdb", "duckdb"):
                    m = peak_in_child(eng, tables, args.threads, sql)
                    entry[eng + "_memory"] = m
                    over = m["peak"] - m["before"] if "peak" in m else None
                    entry[eng + "_peak_over_mib"] = None if over is None else over / MIB
                line += (f" {entry['pqdb_peak_over_mib'] or float('nan'):9.1f}"
                         f" {entry['duckdb_peak_over_mib'] or float('nan'):10.1f}")
            line += "  " + ("same" if same else f"DIFFERENT: {got} vs {want}")
            print(line, flush=True)
            report.append(entry)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
