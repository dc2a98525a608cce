"""Full-decode benchmark: pqdb's Parquet reader vs pyarrow, single-threaded.

Decodes every column of every row group of each file into engine storage
(pqdb: scan.open_parquet(...).read_column; pyarrow:
pyarrow.parquet.read_table(use_threads=False)), timed in the same run, and
prints the minimum of --repeat runs of each (wall and process CPU time: the
CPU time is the steadier number on a shared machine) and the ratios.  Both read the
file bytes from the OS page cache on every run (pqdb gets a fresh buffer
manager per run, so its chunk cache does not carry over).

    .venv/bin/python bench/decode.py                       # SF1 in data/sf1
    .venv/bin/python bench/decode.py --data /tmp/tpch01 --repeat 5

Default files: lineitem (all 16 columns: ints, decimals, dates, short and
long strings) and a string-heavy set (lineitem.l_comment, orders.o_comment,
partsupp.ps_comment).  pyarrow is a benchmark peer only; the product never
imports it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from engine.scheduler import tune_allocator  # noqa: E402
from scan import open_parquet  # noqa: E402
from scan.io.buffer_manager import BufferManager  # noqa: E402

# (label, file stem, columns or None for all)
CASES = [
    ("lineitem (all columns)", "lineitem", None),
    ("lineitem.l_comment", "lineitem", ["l_comment"]),
    ("orders.o_comment", "orders", ["o_comment"]),
    ("partsupp.ps_comment", "partsupp", ["ps_comment"]),
]


def decode_pqdb(path: str, columns) -> int:
    """Decode the columns of every row group; returns the number of values."""
    pf = open_parquet(path, buffer_manager=BufferManager(1 << 34))
    idx = range(len(pf.columns)) if columns is None else [pf.column_index(c) for c in columns]
    n = 0
    for rg in range(len(pf.row_groups)):
        for c in idx:
            n += len(pf.read_column(rg, c).values)
    pf.close()
    return n


def decode_pyarrow(path: str, columns) -> int:
    import pyarrow.parquet as pq
    table = pq.read_table(path, columns=columns, use_threads=False)
    return table.num_rows * table.num_columns


def best_time(fn, repeat: int) -> tuple[float, float]:
    """(min wall seconds, min process CPU seconds) over ``repeat`` runs."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - t)
        cpu = min(cpu, time.process_time() - c)
    return wall, cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_ROOT, "data", "sf1"),
                    help="directory with the TPC-H parquet files")
    ap.add_argument("--repeat", type=int, default=3, help="runs per engine (min is reported)")
    args = ap.parse_args(argv)
    print(f"full decode, single thread, min of {args.repeat} (after one warm-up run), "
          f"{args.data}")
    tune_allocator()        # what the engine does before running a pipeline
    print(f"{'case':24s} {'values':>10s} {'pqdb wall':>9s} {'pa wall':>8s} {'ratio':>6s}"
          f" {'pqdb cpu':>9s} {'pa cpu':>7s} {'ratio':>6s}")
    for label, stem, cols in CASES:
        path = os.path.join(args.data, f"{stem}.parquet")
        if not os.path.exists(path):
            print(f"{label:24s} (missing {path})")
            continue
        n = decode_pqdb(path, cols)                    # warm-up: numba cache, page cache
        n_pa = decode_pyarrow(path, cols)
        if n != n_pa:
            print(f"{label:24s} value counts differ: pqdb {n}, pyarrow {n_pa}")
            return 1
        tp, cp = best_time(lambda: decode_pqdb(path, cols), args.repeat)
        ta, ca = best_time(lambda: decode_pyarrow(path, cols), args.repeat)
        print(f"{label:24s} {n:10d} {tp:9.3f} {ta:8.3f} {tp / ta:5.2f}x"
              f" {cp:9.3f} {ca:7.3f} {cp / ca:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
