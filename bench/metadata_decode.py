"""What opening a big file's metadata costs in Python: the footer of TPC-H
SF10 lineitem (524 row groups, 1 MB of thrift), then the page index (column
and offset index) of the four columns Q6 reads, one thread (printed, not
asserted).

    pqdb-tpch generate --sf 10 --out data/sf10
    .venv/bin/python bench/metadata_decode.py [--file data/sf10/lineitem.parquet] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from scan import open_parquet

Q6_COLUMNS = ("l_shipdate", "l_discount", "l_quantity", "l_extendedprice")


def measure(path: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    pf = open_parquet(path)
    t1 = time.perf_counter()
    cols = [pf.column_index(c) for c in Q6_COLUMNS]
    for rg in range(len(pf.metadata.row_groups)):
        for c in cols:
            pf.column_index(rg, c)
            pf.offset_index(rg, c)
    return t1 - t0, time.perf_counter() - t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default="data/sf10/lineitem.parquet")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    runs = [measure(args.file) for _ in range(args.repeat)]
    print(f"{args.file}: open (footer) {min(r[0] for r in runs):.3f} s, page index of "
          f"{len(Q6_COLUMNS)} columns {min(r[1] for r in runs):.3f} s (best of {args.repeat})")


if __name__ == "__main__":
    main()
