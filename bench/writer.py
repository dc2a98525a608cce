"""COPY lineitem TO a Parquet file: pqdb against DuckDB, same run, same
compression and thread count; time and output size.

    .venv/bin/python bench/writer.py --data data/sf1 [--table lineitem]
        [--compression snappy,zstd] [--threads 2] [--repeat 3] [--out /tmp]

Each engine runs ``COPY (SELECT * FROM '<file>') TO '<out>' (FORMAT
parquet, COMPRESSION c)`` ``--repeat`` times after one warm-up (numba
compiles, the page cache holds the input); printed: the best time, the
output size and pqdb / DuckDB.  The written files are checked to hold the
same rows (count and a hash sum computed by DuckDB).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def _best(fn, repeat: int) -> float:
    fn()                                     # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--table", default="lineitem")
    ap.add_argument("--compression", default="snappy,zstd")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="/tmp")
    args = ap.parse_args(argv)

    import duckdb
    import engine
    src = os.path.join(args.data, f"{args.table}.parquet")
    pq_con = engine.connect(threads=args.threads)
    dk_con = duckdb.connect()
    dk_con.execute(f"SET threads = {args.threads}")
    print(f"COPY {args.table} ({src}) TO parquet, {args.threads} threads, best of "
          f"{args.repeat} after a warm-up")
    print(f"{'codec':>8} {'pqdb s':>8} {'duckdb s':>9} {'ratio':>6} {'pqdb MB':>9} "
          f"{'duckdb MB':>10}")
    for codec in [c.strip() for c in args.compression.split(",") if c.strip()]:
        outs = {name: os.path.join(args.out, f"bench_writer_{name}_{codec}.parquet")
                for name in ("pqdb", "duckdb")}
        sql = "COPY (SELECT * FROM '{src}') TO '{out}' (FORMAT parquet, COMPRESSION {codec})"
        t_pq = _best(lambda: pq_con.sql(sql.format(src=src, out=outs["pqdb"], codec=codec)),
                     args.repeat)
        t_dk = _best(lambda: dk_con.execute(sql.format(src=src, out=outs["duckdb"],
                                                       codec=codec)), args.repeat)
        sizes = {k: os.path.getsize(v) / 1e6 for k, v in outs.items()}
        check = [dk_con.execute(f"SELECT count(*), sum(hash(COLUMNS(*))) FROM '{outs[k]}'")
                 .fetchall() for k in ("pqdb", "duckdb")]
        same = "" if check[0] == check[1] else "  (files differ!)"
        print(f"{codec:>8} {t_pq:8.2f} {t_dk:9.2f} {t_pq / t_dk:6.2f} {sizes['pqdb']:9.1f} "
              f"{sizes['duckdb']:10.1f}{same}")
        for path in outs.values():
            os.unlink(path)


if __name__ == "__main__":
    main()
