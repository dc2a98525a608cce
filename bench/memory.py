"""Peak resident memory per TPC-H query: pqdb against DuckDB, each query and
engine alone in a fresh process.

    .venv/bin/python bench/memory.py --data data/sf1 [--queries 1-22] [--threads 2]
        [--engines pqdb,duckdb] [--no-warmup] [--env PQDB_MALLOC_TUNING=0] [--json out.json]
    .venv/bin/python bench/memory.py --data data/sf1 --breakdown --queries 18,20

Per query and engine a fresh Python process (``python -m tpch.benchmark
memory``) sets the engine up (views over the files, tpch/queries.py), runs
the query once untimed (the warm-up; ``--no-warmup`` measures the first run),
then resets the kernel's peak RSS and runs it again.  Printed: the RSS right
before the measured run ("before": interpreter, numpy, numba, the engine's
kernels and whatever the warm-up left in caches), the peak RSS during it
(VmHWM, absolute), the time of the measured run, and pqdb's peak / DuckDB's
peak per query and at most.

``--breakdown`` runs pqdb only, in-process per query in a fresh process,
and adds what pqdb holds: the buffer manager's cached bytes, the chunk-state
cache's bytes, the peak bytes reserved on memory_limit by operators and scans,
and the peak of numpy/Python allocations traced by tracemalloc (slower).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tpch.benchmark import peak_in_subprocess  # noqa: E402
from tpch.queries import parse_query_list  # noqa: E402

MIB = 1 << 20


def _mib(v) -> str:
    return "-" if v is None else f"{v / MIB:.0f}"


def compare(args, env) -> dict:
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    results: dict = {}
    head = f"{'query':>5}"
    for n in engines:
        head += f" {n[:6] + ' before':>13} {n[:6] + ' peak':>11} {n[:6] + ' s':>8}"
    if "pqdb" in engines and "duckdb" in engines:
        head += f" {'pqdb/duckdb':>11}"
    print(head, flush=True)
    ratios = []
    for q in args.queries:
        row = f"Q{q:02d}  "
        results[q] = {}
        for n in engines:
            m = peak_in_subprocess(n, args.data, args.threads, q, warmup=args.warmup, env=env)
            results[q][n] = m
            if "error" in m:
                row += f" {'error':>13} {'-':>11} {'-':>8}"
                print(f"  Q{q:02d} {n}: {m['error']}", file=sys.stderr)
                continue
            row += (f" {_mib(m['rss_before_bytes']):>13} {_mib(m['peak_bytes']):>11}"
                    f" {m['seconds']:8.3f}")
        if "pqdb" in engines and "duckdb" in engines:
            a, b = results[q]["pqdb"].get("peak_bytes"), results[q]["duckdb"].get("peak_bytes")
            if a and b:
                ratios.append((a / b, q))
                row += f" {a / b:11.2f}"
            else:
                row += f" {'-':>11}"
        print(row, flush=True)
    for n in engines:
        peaks = [(r[n]["peak_bytes"], q) for q, r in results.items() if "peak_bytes" in r[n]]
        if peaks:
            top = max(peaks)
            print(f"{n}: max peak {_mib(top[0])} MiB (Q{top[1]:02d})")
    if ratios:
        top = max(ratios)
        print(f"pqdb/duckdb peak: max {top[0]:.2f} (Q{top[1]:02d})")
    return results


# ------------------------------------------------------------ --breakdown
def breakdown_child(data: str, threads: int, query: int, warmup: bool, trace: bool) -> dict:
    """pqdb only, in this fresh process: the measured run's peak RSS and
    what pqdb held (see the module doc)."""
    import gc
    import tracemalloc

    import engine
    from engine import context
    from engine.memory_probe import process_status, reset_peak_rss
    from scan import row_ranges
    from tpch.queries import query_text, view_statements

    trackers = []
    original = context.ExecutionContext.__post_init__

    def capture(self):
        original(self)
        trackers.append(self.memory)

    context.ExecutionContext.__post_init__ = capture
    con = engine.connect(threads=threads)
    for stmt in view_statements(data):
        con.sql(stmt)
    sql = query_text(query)
    if warmup:
        con.sql(sql).fetchall()
    gc.collect()
    bm = con.catalog.buffer_manager
    before = process_status().get("VmRSS", 0)
    cached_before = bm.bytes_cached
    cache = getattr(row_ranges, "chunk_cache", None)       # absent before the budgets

    def cache_bytes():
        return cache.bytes_cached if cache is not None else None

    states_before = cache_bytes()
    trackers.clear()
    if trace:
        tracemalloc.start()
    reset_peak_rss()
    con.sql(sql).fetchall()
    status = process_status()
    traced = tracemalloc.get_traced_memory()[1] if trace else None
    if trace:
        tracemalloc.stop()
    reserved = max((t.peak for t in trackers), default=0)
    return {"rss_before": before, "peak": status.get("VmHWM", 0),
            "rss_after": status.get("VmRSS", 0), "traced_peak": traced,
            "buffer_cache_before": cached_before, "buffer_cache_after": bm.bytes_cached,
            "buffer_cache_peak": getattr(bm, "peak_bytes", None),
            "chunk_states_before": states_before,
            "chunk_states_after": cache_bytes(),
            "reserved_peak": reserved}


def breakdown(args, env) -> dict:
    print(f"{'query':>5} {'before':>7} {'peak':>6} {'after':>6} {'traced':>7} {'bm<':>5} {'bm>':>5}"
          f" {'bm^':>5} {'cs<':>5} {'cs>':>5} {'reserved':>8}   (MiB)", flush=True)
    out = {}
    full_env = dict(os.environ)
    full_env.update(env)
    for q in args.queries:
        cmd = [sys.executable, os.path.abspath(__file__), "--breakdown-child", str(q),
               "--data", args.data, "--threads", str(args.threads)]
        cmd += [] if args.warmup else ["--no-warmup"]
        cmd += ["--no-trace"] if not args.trace else []
        proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            print(f"Q{q:02d}   error: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
            continue
        m = out[q] = json.loads(lines[-1])
        print(f"Q{q:02d}  {_mib(m['rss_before']):>7} {_mib(m['peak']):>6} {_mib(m['rss_after']):>6}"
              f" {_mib(m['traced_peak']):>7} {_mib(m['buffer_cache_before']):>5}"
              f" {_mib(m['buffer_cache_after']):>5} {_mib(m['buffer_cache_peak']):>5}"
              f" {_mib(m['chunk_states_before']):>5} {_mib(m['chunk_states_after']):>5}"
              f" {_mib(m['reserved_peak']):>8}", flush=True)
    print("before/peak/after: RSS; traced: tracemalloc peak during the run; bm: buffer-manager "
          "cache before (<), after (>), peak (^); cs: chunk-state cache; reserved: peak bytes "
          "reserved on memory_limit")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="data/sf1")
    ap.add_argument("--queries", default="1-22")
    ap.add_argument("--engines", default="pqdb,duckdb")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="measure the first run (default: one warm-up run, then the measured one)")
    ap.add_argument("--env", action="append", default=[],
                    help="KEY=VALUE for the measured processes (e.g. PQDB_MALLOC_TUNING=0)")
    ap.add_argument("--breakdown", action="store_true", help="pqdb only: what its peak holds")
    ap.add_argument("--no-trace", dest="trace", action="store_false",
                    help="--breakdown without tracemalloc")
    ap.add_argument("--breakdown-child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--json", default=None, help="write the numbers as JSON")
    args = ap.parse_args(argv)
    if args.breakdown_child is not None:
        m = breakdown_child(args.data, args.threads, args.breakdown_child, args.warmup, args.trace)
        sys.stdout.write("\n" + json.dumps(m) + "\n")
        sys.stdout.flush()
        os._exit(0)
    args.queries = parse_query_list(args.queries)
    env = dict(kv.split("=", 1) for kv in args.env)
    print(f"TPC-H {args.data}, {args.threads} threads, "
          f"{'warm-up run then measured run' if args.warmup else 'first run measured'}, "
          f"each in a fresh process; MiB" + (f"; env {env}" if env else ""), flush=True)
    results = breakdown(args, env) if args.breakdown else compare(args, env)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
