"""Stability across writer layouts (issue 5): TPC-H lineitem and orders
rewritten in three layouts, and the same queries timed on each in one run.

    .venv/bin/python bench/layouts.py --data data/sf1 --out data/layouts [--repeat 3]

Layouts (pyarrow writer, snappy):
  one-rowgroup   every row in one row group (the paper's Arrow case)
  duckdb-like    ~100k-row row groups, one page per column chunk
  spark-like     ~3M-row row groups cut into many small (64 KiB) pages
Queries: a full scan (every lineitem column aggregated), Q1, Q6 and Q12.
Prints a table of times and the slowest/fastest ratio per query.  A query's
runs on the three layouts are taken in turn (bench/timing.py
best_times_paired), as bench/scaling.py does with its thread counts.
"""

from __future__ import annotations

import argparse
import os

from timing import best_times_paired  # bench/timing.py, next to this script

LAYOUTS = {
    "one-rowgroup": dict(row_group_size=1 << 40, data_page_size=1 << 20),
    "duckdb-like": dict(row_group_size=100_000, data_page_size=1 << 30),
    "spark-like": dict(row_group_size=3_000_000, data_page_size=64 << 10),
}

FULL_SCAN = """SELECT count(*), max(l_orderkey), max(l_partkey), max(l_suppkey), max(l_linenumber),
 sum(l_quantity), sum(l_extendedprice), sum(l_discount), sum(l_tax), max(l_returnflag),
 max(l_linestatus), max(l_shipdate), max(l_commitdate), max(l_receiptdate),
 max(l_shipinstruct), max(l_shipmode), max(l_comment) FROM lineitem"""


def write_layouts(data: str, out: str) -> None:
    import pyarrow.parquet as pq          # benchmark tooling only, never the product
    for name, opts in LAYOUTS.items():
        target = os.path.join(out, name)
        os.makedirs(target, exist_ok=True)
        for table in ("lineitem", "orders"):
            path = os.path.join(target, f"{table}.parquet")
            if not os.path.exists(path):
                t = pq.read_table(os.path.join(data, f"{table}.parquet"))
                rgs = min(opts["row_group_size"], max(t.num_rows, 1))
                pq.write_table(t, path, row_group_size=rgs, data_page_size=opts["data_page_size"],
                               compression="snappy")
        for table in ("customer", "nation", "part", "partsupp", "region", "supplier"):
            link = os.path.join(target, f"{table}.parquet")
            if not os.path.exists(link):
                os.symlink(os.path.abspath(os.path.join(data, f"{table}.parquet")), link)




def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--whole-row-groups", action="store_true",
                    help="one morsel per row group (the scan before issue 5), for comparison")
    args = ap.parse_args(argv)
    if args.whole_row_groups:
        from engine.operators.scan import ScanSource
        ScanSource._cut = lambda self, path, rg, cols, n: [(path, rg, cols, 0, n, n)]
    write_layouts(args.data, args.out)
    import engine
    from tpch.queries import query_text, view_statements
    queries = {"scan": FULL_SCAN, "Q1": query_text(1), "Q6": query_text(6), "Q12": query_text(12)}
    cons = []
    for layout in LAYOUTS:
        con = engine.connect(threads=args.threads)
        for stmt in view_statements(os.path.join(args.out, layout)):
            con.sql(stmt)
        cons.append(con)
    # a query's runs on the three layouts are taken in turn, so a slow
    # stretch of a noisy host falls on every layout alike
    times = {layout: {} for layout in LAYOUTS}
    for q, sql in queries.items():
        for layout, t in zip(LAYOUTS, best_times_paired(cons, sql, args.repeat)):
            times[layout][q] = t
    print(f"{'layout':>14} " + " ".join(f"{q:>8}" for q in queries))
    for layout, row in times.items():
        print(f"{layout:>14} " + " ".join(f"{row[q]:8.3f}" for q in queries))
    ratios = [max(times[l][q] for l in times) / min(times[l][q] for l in times) for q in queries]
    print(f"{'slowest/fast':>14} " + " ".join(f"{r:7.2f}x" for r in ratios))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
