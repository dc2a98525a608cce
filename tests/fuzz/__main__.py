"""python -m tests.fuzz --seed N --count M [--seeds K] [--no-tpch] [--layout split]
[--http | --s3] [--set option=value ...]

Runs M queries per seed (seeds N .. N+K-1) against DuckDB and prints every
failure with its seed and SQL.  TPC-H SF0.01 is generated once into
--data (default /tmp/pqdb-fuzz)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tests.fuzz.runner import Stats, run
from tests.fuzz.setup import connect


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "pqdb-fuzz"))
    p.add_argument("--no-tpch", action="store_true")
    p.add_argument("--layout", default="one", choices=["one", "split", "hive", "encrypted"],
                   help="split: files of many small row groups and pages (data skipping)")
    p.add_argument("--http", action="store_true",
                   help="pqdb reads its files over http from a server on 127.0.0.1")
    p.add_argument("--s3", action="store_true",
                   help="pqdb reads its files as s3:// URLs from moto's S3 server on 127.0.0.1")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a pqdb option for the fuzzed connection, e.g. block_rows=3")
    p.add_argument("--stop-after", type=int, default=50)
    p.add_argument("--show", type=int, default=5, help="examples of one-sided errors to print")
    args = p.parse_args(argv)
    options = {"config": dict(item.split("=", 1) for item in args.set)}
    server = None
    if args.http:
        from tests.http_server import HttpServer
        server = HttpServer().start()
    elif args.s3:
        from tests.fuzz.s3_store import S3Store
        server = S3Store().start()
    pq, duck, schema = connect(Path(args.data), tpch=not args.no_tpch, layout=args.layout,
                               server=server, **options)
    stats = Stats()
    for seed in range(args.seed, args.seed + args.seeds):
        run(pq, duck, schema, seed, args.count, stats=stats, stop_after=args.stop_after,
            log=lambda s: print(s + "\n", flush=True))
        print(f"seed {seed}: {stats.summary().splitlines()[0]}", flush=True)
    print(stats.summary())
    for title, items in (("pqdb alone raised", stats.pqdb_only_error),
                         ("DuckDB alone raised", stats.duck_only_error)):
        for detail, sql in items[:args.show]:
            print(f"{title} {detail}\n  {sql}")
    for took, sql in stats.slow[:10]:
        print(f"slow {took:.1f} s: {sql}")
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
