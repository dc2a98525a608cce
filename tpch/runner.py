"""pqdb-tpch: generate TPC-H data and run the 22 queries on pqdb and peers.

    pqdb-tpch generate --sf 0.1 --out data/sf0.1
    pqdb-tpch run --sf 1 --data data/sf1 --engines pqdb,duckdb --repeat 3 --json out.json

Every result is validated: against the expected answers when the scale factor
has them, else (and for the columns whose text differs on tpchgen-cli data)
against DuckDB on the same files.  Times are the minimum of --repeat warm runs
after one cold run; the table prints the pqdb/DuckDB ratio and geometric means.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from tpch import answers
from tpch.generate import generate
from tpch.queries import query_numbers, query_text, view_statements


class EngineRunner:
    name = "?"

    def run(self, sql: str) -> tuple[list[str], list[tuple]]:
        raise NotImplementedError


class PqdbRunner(EngineRunner):
    name = "pqdb"

    def __init__(self, data_dir: str, threads: int):
        import engine
        self.con = engine.connect(threads=threads)
        for stmt in view_statements(data_dir):
            self.con.sql(stmt)

    def run(self, sql):
        result = self.con.sql(sql)
        return result.columns, result.fetchall()


class DuckDBRunner(EngineRunner):
    name = "duckdb"

    def __init__(self, data_dir: str, threads: int):
        import duckdb
        self.con = duckdb.connect()
        self.con.execute(f"SET threads = {threads}")
        for stmt in view_statements(data_dir):
            self.con.execute(stmt)

    def run(self, sql):
        cur = self.con.execute(sql)
        return [d[0] for d in cur.description], cur.fetchall()


ENGINES = {"pqdb": PqdbRunner, "duckdb": DuckDBRunner}


def validate(number: int, sf: float, columns, rows, reference) -> str:
    """'ok', or a short reason why the result is wrong."""
    try:
        diff = answers.check_against_answers(number, sf, columns, rows)
        if diff is not None:
            return f"WRONG vs answers: {diff}"
        skip = answers.TEXT_COLUMNS_DIFFER.get(number)
        if skip and reference is not None:
            diff = answers.compare_rows(rows, reference[1], columns)
            if diff is not None:
                return f"WRONG vs duckdb: {diff}"
        return "ok"
    except LookupError:
        if reference is None:
            return "unvalidated"
        diff = answers.compare_rows(rows, reference[1], columns)
        return "ok" if diff is None else f"WRONG vs duckdb: {diff}"


def run_benchmark(sf: float, data_dir: str, engines: list[str], queries: list[int],
                  repeat: int, threads: int, out=sys.stdout) -> dict:
    runners = {}
    report = {"sf": sf, "threads": threads, "repeat": repeat, "queries": {}}
    for name in engines:
        if name not in ENGINES:
            raise SystemExit(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
        try:
            runners[name] = ENGINES[name](data_dir, threads)
        except Exception as e:   # a missing peer is reported, not hidden
            report.setdefault("engine_errors", {})[name] = f"{type(e).__name__}: {e}"
            print(f"engine {name} unavailable: {e}", file=out)
    reference_runner = runners.get("duckdb")
    if reference_runner is None and "duckdb" in ENGINES:
        try:
            reference_runner = DuckDBRunner(data_dir, threads)
        except Exception:
            reference_runner = None
    for q in queries:
        sql = query_text(q)
        reference = reference_runner.run(sql) if reference_runner is not None else None
        entry = {}
        for name, runner in runners.items():   # engines interleaved per query
            times, status = [], "ok"
            try:
                t0 = time.perf_counter()
                cols, rows = runner.run(sql)
                cold = time.perf_counter() - t0
                status = validate(q, sf, cols, rows, reference)
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    runner.run(sql)
                    times.append(time.perf_counter() - t0)
            except Exception as e:
                status = f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:150]}"
                cold = None
            entry[name] = {"cold": cold, "warm": min(times) if times else None, "status": status}
        report["queries"][q] = entry
        print(_row(q, entry, engines), file=out, flush=True)
    report["geomean"] = _geomeans(report, engines)
    print(_footer(report, engines), file=out)
    return report


def _fmt(t):
    return "   -    " if t is None else f"{t:8.3f}"


def _row(q, entry, engines):
    parts = [f"Q{q:02d}"]
    for name in engines:
        e = entry.get(name, {})
        parts.append(_fmt(e.get("warm")))
    p, d = entry.get("pqdb", {}).get("warm"), entry.get("duckdb", {}).get("warm")
    parts.append(f"{p / d:7.2f}x" if p and d else "    -   ")
    bad = [f"{n}: {e['status']}" for n, e in entry.items() if e["status"] != "ok"]
    if bad:
        parts.append("  " + "; ".join(bad))
    return " ".join(parts)


def _geomeans(report, engines):
    out = {}
    ok_queries = [q for q, e in report["queries"].items()
                  if all(e.get(n, {}).get("status") == "ok" and e[n]["warm"] for n in engines if n in e)]
    for name in engines:
        ts = [report["queries"][q][name]["warm"] for q in ok_queries if name in report["queries"][q]]
        out[name] = math.exp(sum(math.log(t) for t in ts) / len(ts)) if ts else None
    out["queries_in_geomean"] = ok_queries
    return out


def _footer(report, engines):
    g = report["geomean"]
    parts = ["geo " + " ".join(_fmt(g.get(n)) for n in engines)]
    if g.get("pqdb") and g.get("duckdb"):
        parts.append(f"{g['pqdb'] / g['duckdb']:7.2f}x over {len(g['queries_in_geomean'])} queries")
    return " ".join(parts)


def _parse_queries(text: str | None) -> list[int]:
    if not text:
        return query_numbers()
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="pqdb-tpch", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="write TPC-H tables as Parquet (tpchgen-cli)")
    g.add_argument("--sf", type=float, required=True)
    g.add_argument("--out", required=True)
    g.add_argument("--force", action="store_true")
    r = sub.add_parser("run", help="run queries on engines, validate, time")
    r.add_argument("--sf", type=float, required=True)
    r.add_argument("--data", required=True)
    r.add_argument("--engines", default="pqdb,duckdb")
    r.add_argument("--queries", default=None, help="e.g. 1,3,6 or 1-22")
    r.add_argument("--repeat", type=int, default=3)
    r.add_argument("--threads", type=int, default=0, help="0 = all cores")
    r.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.command == "generate":
        t0 = time.perf_counter()
        generate(args.sf, args.out, force=args.force)
        print(f"TPC-H sf{args.sf:g} in {args.out} ({time.perf_counter() - t0:.1f} s)")
        return 0
    import os
    threads = args.threads or os.cpu_count() or 1
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    print(f"TPC-H sf{args.sf:g}, {threads} threads, min of {args.repeat} warm runs (s)")
    print("     " + " ".join(f"{n:>8}" for n in engines) + "  pqdb/duckdb")
    report = run_benchmark(args.sf, args.data, engines, _parse_queries(args.queries),
                           args.repeat, threads)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2, default=str)
    failures = [q for q, e in report["queries"].items()
                if e.get("pqdb", {}).get("status", "ok") != "ok"]
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
