"""Start-up: what a user waits for in a fresh process, pqdb against Python +
DuckDB timed in the same run (issue 23).

    python bench/startup.py --data /work/main/data/sf1 [--repeat 3]
                            [--queries 1-22] [--cold-queries 1,3,6]
                            [--baseline /path/to/other/checkout]

Cases, each a fresh process, the whole process timed (interpreter start,
imports, connect, query, exit):
  SELECT 1        ``pqdb -c`` / the Python API / ``python -c "import duckdb; ..."``
  tiny file       count(*) of nation.parquet (25 rows), the same three ways
  TPC-H Qn        ``python -m tpch.peers cold ENGINE DIR 2 n``: the process, and
                  in it the query's first run alone (the runner's "cold" time,
                  set-up excluded)
with numba's compilation cache warm (the kernels compiled before, in the
package's ``__pycache__``) and cold (NUMBA_CACHE_DIR an empty directory for
each process: every kernel the process needs compiles).  Engines alternate
per repetition; the median is reported, with pqdb / DuckDB ratios and their
geometric means.  ``--baseline``: another checkout of pqdb (e.g. main)
timed in the same run, its ``pqdb -c`` and first runs in extra columns.
Cold TPC-H runs take minutes each (compilation), hence
only ``--cold-queries``."""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tpch.queries import parse_query_list  # noqa: E402  (no engine import: light)

PY = sys.executable
PQDB = [PY, "-m", "engine.cli"]


def timed(cmd: list[str], env: dict, repo: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=3600)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])} failed: {proc.stderr.strip()[-400:]}")
    return took, proc.stdout


def environment(cold: bool, repo: str) -> tuple[dict, str | None]:
    env = dict(os.environ, PYTHONPATH=repo)
    env.pop("PYTHONDONTWRITEBYTECODE", None)     # users' imports read .pyc files
    tmp = None
    if cold:
        tmp = tempfile.mkdtemp(prefix="pqdb-cold-numba-")
        env["NUMBA_CACHE_DIR"] = tmp
    else:
        env.pop("NUMBA_CACHE_DIR", None)
    return env, tmp


def run_case(cmd: list[str], cold: bool, repo: str = REPO) -> tuple[float, str]:
    env, tmp = environment(cold, repo)
    try:
        return timed(cmd, env, repo)
    finally:
        if tmp is not None:
            subprocess.run(["rm", "-rf", tmp], check=False)


def simple_cases(data: str) -> list[tuple[str, dict]]:
    nation = os.path.join(data, "nation.parquet")
    one, tiny = "SELECT 1", f"SELECT count(*) FROM '{nation}'"
    api = "import engine; engine.connect().sql({!r}).fetchall()"
    duck = "import duckdb; duckdb.connect().sql({!r}).fetchall()"
    return [(name, {"pqdb -c": PQDB + ["-c", sql],
                    "pqdb API": [PY, "-c", api.format(sql)],
                    "duckdb": [PY, "-c", duck.format(sql)]})
            for name, sql in (("SELECT 1", one), ("tiny file", tiny))]


def query_cmd(engine: str, data: str, q: int) -> list[str]:
    return [PY, "-m", "tpch.peers", "cold", engine, data, "2", str(q)]


def measure(runs: dict, cold: bool, repeat: int, parse: bool = False) -> dict:
    """``runs``: name -> (command, checkout).  Each repetition runs every
    command once, in turn (the machine's drift hits all alike); per name the
    median process seconds and, when ``parse``, the median first-run seconds."""
    procs = {k: [] for k in runs}
    firsts = {k: [] for k in runs}
    for _ in range(repeat):
        for name, (cmd, repo) in runs.items():
            took, out = run_case(cmd, cold, repo)
            procs[name].append(took)
            if parse:
                got = json.loads(out.strip().splitlines()[-1])
                if "error" in got:
                    raise RuntimeError(got["error"])
                firsts[name].append(got["seconds"])
    return {k: (statistics.median(procs[k]),
                statistics.median(firsts[k]) if parse else None) for k in runs}


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="/work/main/data/sf1")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--queries", default="1-22")
    ap.add_argument("--cold-queries", default="1,3,6")
    ap.add_argument("--json", help="write the measurements here too")
    ap.add_argument("--baseline", help="another pqdb checkout timed in the same run")
    ap.add_argument("--caches", default="warm,cold", help="which cache states to time")
    args = ap.parse_args(argv)
    rows, report = [], {"data": args.data, "repeat": args.repeat}
    for cache in [c for c in ("warm", "cold") if c in args.caches.split(",")]:
        cold = cache == "cold"
        if not cold:                                  # warm the caches: one untimed run each
            for _, cmds in simple_cases(args.data):
                for cmd in cmds.values():
                    run_case(cmd, False)
                if args.baseline:
                    run_case(cmds["pqdb -c"], False, args.baseline)
            for q in parse_query_list(args.queries):
                run_case(query_cmd("pqdb", args.data, q), False)
                if args.baseline:
                    run_case(query_cmd("pqdb", args.data, q), False, args.baseline)
        for name, cmds in simple_cases(args.data):
            runs = {k: (c, REPO) for k, c in cmds.items()}
            if args.baseline:
                runs["baseline"] = (cmds["pqdb -c"], args.baseline)
            t = {k: v[0] for k, v in measure(runs, cold, args.repeat).items()}
            rows.append((cache, name, t["pqdb -c"], t["pqdb API"], None, t["duckdb"], None,
                         t.get("baseline"), None))
        qs = parse_query_list(args.queries if not cold else args.cold_queries)
        for q in qs:
            runs = {"pqdb": (query_cmd("pqdb", args.data, q), REPO),
                    "duckdb": (query_cmd("duckdb", args.data, q), REPO)}
            if args.baseline:
                runs["baseline"] = (query_cmd("pqdb", args.data, q), args.baseline)
            t = measure(runs, cold, args.repeat, True)
            (p_proc, p_first), (d_proc, d_first) = t["pqdb"], t["duckdb"]
            b_proc, b_first = t.get("baseline", (None, None))
            rows.append((cache, f"TPC-H Q{q}", p_proc, None, p_first, d_proc, d_first,
                         b_proc, b_first))
            print(f"  {cache} Q{q}: pqdb {p_proc:.3f}/{p_first:.3f} s, "
                  f"duckdb {d_proc:.3f}/{d_first:.3f} s", file=sys.stderr)
    report["rows"] = rows
    print(f"Start-up, fresh processes, median of {args.repeat}; data {args.data}; seconds.")
    print("process = the whole process; first run = the query alone (tpch.peers cold).\n")
    extra = " baseline -c / process | baseline first run |" if args.baseline else ""
    print("| cache | case | pqdb -c / process | pqdb API | pqdb first run | duckdb process "
          "| duckdb first run | process ratio | first-run ratio |" + extra)
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if extra else ""))
    fmt = lambda x: "" if x is None else f"{x:.3f}"         # noqa: E731
    for cache, name, p, api, pf, d, df, b, bf in rows:
        ratio = f"{p / d:.2f}x"
        fr = f"{pf / df:.2f}x" if pf is not None else ""
        tail = f" {fmt(b)} | {fmt(bf)} |" if extra else ""
        print(f"| {cache} | {name} | {fmt(p)} | {fmt(api)} | {fmt(pf)} | {fmt(d)} | {fmt(df)} "
              f"| {ratio} | {fr} |" + tail)
    for cache in ("warm", "cold"):
        qrows = [r for r in rows if r[0] == cache and r[1].startswith("TPC-H")]
        if qrows:
            print(f"\n{cache}, TPC-H geomean over {len(qrows)} queries: process "
                  f"{geomean([r[2] for r in qrows]):.3f} s vs "
                  f"{geomean([r[5] for r in qrows]):.3f} s "
                  f"({geomean([r[2] / r[5] for r in qrows]):.2f}x); first run "
                  f"{geomean([r[4] for r in qrows]):.3f} s vs "
                  f"{geomean([r[6] for r in qrows]):.3f} s "
                  f"({geomean([r[4] / r[6] for r in qrows]):.2f}x)")
            if args.baseline:
                print(f"{cache}, baseline: process {geomean([r[7] for r in qrows]):.3f} s, "
                      f"first run {geomean([r[8] for r in qrows]):.3f} s "
                      f"({geomean([r[8] / r[6] for r in qrows]):.2f}x DuckDB)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
