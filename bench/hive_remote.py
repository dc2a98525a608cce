"""Hive partitions over http: what a filter on a partition column saves.

Writes ``--partitions`` small files (``part=000/data.parquet`` ...,
1,000 rows each, with pyarrow) to a temporary directory, serves it with
the byte-counting test server (``--latency`` before every answer: an
object store's time to first byte), and times on fresh connections, best
of ``--repeat``:

- ``filtered``: ``WHERE part = '<one>'`` over a read_parquet list of every
  URL with ``hive_partitioning = true`` (pruned files get no request);
- ``all``: the same list without a filter;
- ``local``: both over the directory's glob.

Per run it prints seconds, requests and bytes the query sent (Result.io)
and the files the server was asked about.  Nothing is asserted.

    .venv/bin/python bench/hive_remote.py                      # 100 partitions, 20 ms
    .venv/bin/python bench/hive_remote.py --partitions 1000 --latency 0
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import engine  # noqa: E402
from bench.remote import parse_seconds, settle  # noqa: E402
from tests.http_server import ServerProcess  # noqa: E402


def write_partitions(root: str, n: int) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    names = []
    for p in range(n):
        rel = f"part={p:03d}/data.parquet"
        os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        rows = range(p * 1000, p * 1000 + 1000)
        pq.write_table(pa.table({"id": list(rows), "v": [float(i % 1000) for i in rows]}),
                       os.path.join(root, rel))
        names.append(rel)
    return names


def best_run(sql: str, repeat: int):
    """(seconds, io, rows) of the best of ``repeat`` runs, each on a fresh connection."""
    best = None
    for _ in range(repeat):
        con = engine.connect()
        settle()
        t = time.perf_counter()
        result = con.sql(sql)
        rows = result.fetchall()
        secs = time.perf_counter() - t
        if best is None or secs < best[0]:
            best = (secs, result.io, rows)
        con.close()
    return best


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--latency", default="20ms")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as root:
        names = write_partitions(root, args.partitions)
        server = ServerProcess(root, latency=parse_seconds(args.latency))
        try:
            listed = ", ".join(f"'{server.url(n)}'" for n in names)
            one = f"{args.partitions // 2:03d}"
            remote = f"read_parquet([{listed}], hive_partitioning = true)"
            local = f"read_parquet('{root}/*/*.parquet')"
            print(f"{args.partitions} partitions of 1,000 rows; latency {args.latency}; "
                  f"best of {args.repeat}, fresh connections")
            print(f"{'run':>16} {'secs':>7} {'requests':>8} {'bytes':>10} {'rows':>8}")
            for name, table, where in (("http filtered", remote, f"WHERE part = '{one}'"),
                                       ("http all", remote, ""),
                                       ("local filtered", local, f"WHERE part = '{one}'"),
                                       ("local all", local, "")):
                secs, io, rows = best_run(f"SELECT count(*), sum(v) FROM {table} {where}",
                                          args.repeat)
                print(f"{name:>16} {secs:7.3f} {io['requests']:>8} {io['bytes_fetched']:>10} "
                      f"{rows[0][0]:>8}", flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
