"""pqdb-tpch: generate TPC-H data, report its layout, run the 22 queries on
pqdb and its peers, plot the results.

    pqdb-tpch generate --sf 1 --out data/sf1-spark --writer spark
    pqdb-tpch layout data/sf1-spark
    pqdb-tpch run --sf 1 --data data/sf1 --engines pqdb,duckdb,polars --out results/sf1
    pqdb-tpch plot results/sf1-*/report.json --out results/layouts.png

Writers: tpch/pipeline.  Engines and what "cold" and "warm" mean:
tpch/peers.py and tpch/benchmark.py.  Every result is validated (expected
answers, else DuckDB on the same files); failures are reported, not hidden.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from tpch.benchmark import markdown_report, run_benchmark, validate  # noqa: F401 - re-exported
from tpch.peers import ENGINES  # noqa: F401 - re-exported
from tpch.pipeline import WRITERS, generate_with_writer
from tpch.queries import parse_query_list


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="pqdb-tpch", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="write TPC-H tables as Parquet with a chosen writer")
    g.add_argument("--sf", type=float, required=True)
    g.add_argument("--out", required=True)
    g.add_argument("--writer", choices=WRITERS, default="tpchgen")
    g.add_argument("--row-group-rows", type=int, default=None, help="rows per row group")
    g.add_argument("--files", type=int, default=1, help="files per table")
    g.add_argument("--master", default=None, help="Spark master (default local[*])")
    g.add_argument("--driver-memory", default=None, help="Spark driver memory (default 4g)")
    g.add_argument("--source", default=None, help="where the tpchgen-cli rows are cached")
    g.add_argument("--force", action="store_true")
    lay = sub.add_parser("layout", help="the paper's Tab. 1 for a directory of Parquet tables")
    lay.add_argument("dirs", nargs="+")
    lay.add_argument("--json", default=None, help="also write the numbers as JSON")
    r = sub.add_parser("run", help="run queries on engines, validate, time")
    r.add_argument("--sf", type=float, required=True)
    r.add_argument("--data", required=True)
    r.add_argument("--engines", default="pqdb,duckdb",
                   help=f"comma-separated, of: {', '.join(ENGINES)}")
    r.add_argument("--queries", default=None, help="e.g. 1,3,6 or 1-22")
    r.add_argument("--repeat", type=int, default=3, help="warm runs (the minimum is kept)")
    r.add_argument("--threads", type=int, default=0, help="threads for every engine; 0 = all cores")
    r.add_argument("--cold", choices=("subprocess", "none"), default="subprocess",
                   help="cold run in a fresh process per engine and query, or none")
    r.add_argument("--cold-timeout", type=float, default=900.0)
    r.add_argument("--memory", action="store_true",
                   help="peak memory of every engine, each query in a fresh process")
    r.add_argument("--label", default=None, help="layout name in plots (default: data dir name)")
    r.add_argument("--out", default=None, help="directory for report.json, report.md, speedup.png")
    r.add_argument("--json", default=None, help="JSON report path")
    p = sub.add_parser("plot", help="PNG plots from report.json files")
    p.add_argument("reports", nargs="+")
    p.add_argument("--out", required=True, help="PNG path")
    p.add_argument("--engine", default="pqdb", help="engine whose times the layout plot shows")
    p.add_argument("--kind", choices=("auto", "speedup", "layout"), default="auto",
                   help="auto: speedup for one report, layout for several")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "generate":
        t0 = time.perf_counter()
        generate_with_writer(args.sf, args.out, args.writer, row_group_rows=args.row_group_rows,
                             files=args.files, master=args.master, driver_memory=args.driver_memory,
                             source=args.source, force=args.force)
        print(f"TPC-H sf{args.sf:g} ({args.writer}) in {args.out} ({time.perf_counter() - t0:.1f} s)")
        return 0
    if args.command == "layout":
        from tpch.layout import directory_layout, layout_json, markdown_layout
        everything = {}
        for d in args.dirs:
            layouts = directory_layout(d)
            print(markdown_layout(d, layouts))
            print()
            everything[d] = layout_json(layouts)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(everything, f, indent=2)
        return 0
    if args.command == "plot":
        return _plot(args)
    threads = args.threads or os.cpu_count() or 1
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    print(f"TPC-H sf{args.sf:g}, {threads} threads, min of {args.repeat} warm runs (s)", flush=True)
    report = run_benchmark(args.sf, args.data, engines, parse_query_list(args.queries), args.repeat,
                           threads, cold=args.cold, cold_timeout=args.cold_timeout,
                           label=args.label, memory=args.memory)
    write_outputs(report, args.out, args.json)
    failures = [q for q, e in report["queries"].items()
                if e.get("pqdb", {}).get("status", "ok") != "ok"]
    return 1 if failures else 0


def write_outputs(report: dict, out_dir: str | None, json_path: str | None) -> dict:
    """report.json, report.md and speedup.png in out_dir (when given)."""
    written = {}
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        json_path = json_path or os.path.join(out_dir, "report.json")
        md = os.path.join(out_dir, "report.md")
        with open(md, "w") as f:
            f.write(markdown_report(report))
        written["markdown"] = md
        if "pqdb" in report["engines"] and len(report["engines"]) > 1:
            from tpch.plots import speedup_plot
            written["speedup"] = speedup_plot(report, os.path.join(out_dir, "speedup.png"))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report, f, indent=2, default=str)
        written["json"] = json_path
    for kind, path in written.items():
        print(f"{kind}: {path}")
    return written


def _plot(args) -> int:
    from tpch.plots import layout_plot, speedup_plot
    reports = []
    for path in args.reports:
        with open(path) as f:
            reports.append(json.load(f))
    kind = args.kind if args.kind != "auto" else ("speedup" if len(reports) == 1 else "layout")
    if kind == "speedup":
        if len(reports) != 1:
            raise SystemExit("the speedup plot takes one report")
        print(speedup_plot(reports[0], args.out))
    else:
        print(layout_plot(reports, args.out, args.engine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
