"""Compile pqdb's numba kernels ahead, into numba's cache, so that a user's
first query does not compile: ``python -m tpch.precompile [--jobs 2]``
(``make install`` runs it).

Kernels are compiled for the argument types queries hand them, so the
warm-up runs queries: the 22 TPC-H queries and a few more (windows, string
functions, set operations, casts) over TPC-H SF0.1 written by tpchgen-cli
into a temporary directory, split over ``--jobs`` processes, 2 threads each
(at SF0.01 one thread took every morsel, and the merges of per-thread
aggregation states the demo needs were never compiled).  Each kernel
lands in numba's cache (``__pycache__`` beside its module, or numba's user
cache directory when the package directory is read-only, or NUMBA_CACHE_DIR).
Two processes may compile the same kernel at once; numba writes each cache
file atomically, so the cache stays whole."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from tpch.queries import query_numbers, query_text, view_statements

# beyond TPC-H: operators and functions its queries do not reach
EXTRA_QUERIES = (
    "SELECT n_regionkey, n_nationkey, row_number() OVER (PARTITION BY n_regionkey "
    "ORDER BY n_name), sum(n_nationkey) OVER (ORDER BY n_nationkey ROWS BETWEEN 2 PRECEDING "
    "AND CURRENT ROW), rank() OVER (ORDER BY n_regionkey) FROM nation",
    "SELECT upper(c_name), lower(c_mktsegment), length(c_comment), trim(c_phone), "
    "concat(c_name, '-', c_nationkey), c_address LIKE '%a%', c_name ILIKE 'customer#0%' "
    "FROM customer ORDER BY c_custkey LIMIT 20",
    "SELECT o_orderpriority, count(DISTINCT o_custkey), min(o_orderdate), max(o_comment), "
    "avg(o_totalprice) FROM orders GROUP BY ALL ORDER BY 1",
    "SELECT s_suppkey FROM supplier UNION SELECT ps_suppkey FROM partsupp "
    "EXCEPT SELECT c_custkey FROM customer",
    "SELECT CAST(l_quantity AS VARCHAR), CAST(l_shipdate AS VARCHAR), "
    "CAST(l_extendedprice AS DOUBLE), extract(year FROM l_shipdate), "
    "date_trunc('month', l_shipdate), l_shipdate - INTERVAL 3 DAY "
    "FROM lineitem ORDER BY l_orderkey, l_linenumber LIMIT 50",
    "SELECT p_partkey, s_suppkey FROM part, supplier WHERE p_size BETWEEN s_nationkey "
    "AND s_nationkey + 1 AND p_partkey < 50 AND s_suppkey < 5",
    # casts from strings, and a constant whose cast runs at execution time
    "SELECT CAST(substring(c_phone, 1, 2) AS INTEGER), CAST(c_custkey AS VARCHAR)::BIGINT, "
    "CAST(substring(c_phone, 1, 2) AS DOUBLE), 1 + '7'::INTEGER FROM customer LIMIT 5",
)


def tpchgen_data(sf: float, out: str) -> str:
    from tpch.generate import generate
    return generate(sf, out)


def workload() -> list[str]:
    return [query_text(q) for q in query_numbers()] + list(EXTRA_QUERIES)


def run_share(data_dir: str, worker: int, jobs: int) -> dict:
    """Run this worker's share of the workload (every jobs-th query); the
    kernels compiled (cache misses) and the seconds taken."""
    from engine.compile_notice import CompileWatch
    watch = CompileWatch(stream=open(os.devnull, "w"), progress=False).install()
    import engine
    t0 = time.perf_counter()
    con = engine.connect(threads=2)     # >1: the merges of per-thread states compile too
    for stmt in view_statements(data_dir):
        con.sql(stmt)
    failed = []
    for i, sql in enumerate(workload()):
        if i % jobs == worker:
            try:
                con.sql(sql).fetchall()
            except engine.Error as e:      # reported, never hidden
                failed.append(f"{sql[:40]}...: {e}")
    con.close()
    return {"compiled": watch.compiled, "seconds": time.perf_counter() - t0, "failed": failed}


def precompile(jobs: int = 2, sf: float = 0.1, data_dir: str | None = None,
               out=sys.stderr) -> int:
    """Compile ahead in ``jobs`` processes; 0 on success."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pqdb-precompile-") as tmp:
        try:
            data = data_dir or tpchgen_data(sf, tmp)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
            print(f"pqdb: precompile: no warm-up data: {e}", file=out)
            return 1
        procs = [subprocess.Popen([sys.executable, "-m", "tpch.precompile", "--worker", str(k),
                                   "--jobs", str(jobs), "--data", data],
                                  stdout=subprocess.PIPE, text=True) for k in range(jobs)]
        results = []
        for p in procs:
            stdout, _ = p.communicate()
            lines = stdout.strip().splitlines()
            results.append(json.loads(lines[-1]) if p.returncode == 0 and lines
                           else {"error": f"worker exited with {p.returncode}"})
    compiled = sum(r.get("compiled", 0) for r in results)
    problems = [r["error"] for r in results if "error" in r]
    problems += [f for r in results for f in r.get("failed", [])]
    print(f"pqdb: precompiled {compiled} kernel signatures in {time.perf_counter() - t0:.1f} s "
          f"({jobs} processes)", file=out)
    for p in problems:
        print(f"pqdb: precompile: {p}", file=out)
    return 1 if problems else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tpch.precompile",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2, help="processes compiling at once (2)")
    ap.add_argument("--sf", type=float, default=0.1,
                    help="TPC-H scale factor of the warm-up data (0.1)")
    ap.add_argument("--data", help="a TPC-H data directory to use instead of generating one")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    if args.worker is not None:
        print(json.dumps(run_share(args.data, args.worker, args.jobs)))
        return 0
    return precompile(args.jobs, args.sf, args.data)


if __name__ == "__main__":
    sys.exit(main())
