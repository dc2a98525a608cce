"""The TPC-H data pipeline: rows from tpchgen-cli, Parquet from a chosen writer.

    pqdb-tpch generate --sf 1 --out data/sf1-spark --writer spark
    pqdb-tpch generate --sf 1 --out data/sf1-arrow --writer arrow

Writers (the layouts the paper compares in its Tab. 1):

    tpchgen             tpchgen-cli's own Parquet writer (the default)
    spark               Spark's default Parquet writer (parquet-mr, snappy)
    spark-uncompressed  Spark, no compression
    spark-sorted        Spark, lineitem sorted by l_shipdate and orders by
                        o_orderdate (the clustered case synopses exploit)
    arrow               pyarrow's writer, one row group per file
    duckdb              DuckDB's COPY ... (FORMAT parquet)

Every writer reads the same rows: tpchgen-cli Parquet generated once per
scale factor into a source directory (--source; default DIR.tpchgen next to
the output) and reused.  ``row_group_rows`` and ``files`` shape the output;
with one file a table is DIR/table.parquet (Spark: DIR/table/part-*.parquet),
with several DIR/table/*.parquet.
"""

from __future__ import annotations

import os
import shutil

from tpch.queries import TABLES

WRITERS = ("tpchgen", "spark", "spark-uncompressed", "spark-sorted", "arrow", "duckdb")
SORT_KEYS = {"lineitem": "l_shipdate", "orders": "o_orderdate"}


def default_source_dir(out: str, sf: float) -> str:
    parent = os.path.dirname(os.path.abspath(out.rstrip("/")))
    return os.path.join(parent, f".tpchgen-sf{sf:g}")


def generate_with_writer(sf: float, out: str, writer: str = "tpchgen", *,
                         row_group_rows: int | None = None, files: int = 1,
                         master: str | None = None, driver_memory: str | None = None,
                         source: str | None = None, force: bool = False,
                         tables=TABLES) -> str:
    """Write the TPC-H tables at scale factor ``sf`` into ``out`` with ``writer``."""
    if writer not in WRITERS:
        raise ValueError(f"unknown writer {writer!r}; known: {', '.join(WRITERS)}")
    if files < 1:
        raise ValueError("--files must be at least 1")
    if row_group_rows is not None and row_group_rows < 1:
        raise ValueError("--row-group-rows must be positive")
    if not force and _complete(out, tables):
        return out
    os.makedirs(out, exist_ok=True)
    for t in tables:
        _remove_table(out, t)
    if writer == "tpchgen":
        from tpch.pipeline.local_writers import write_tpchgen
        write_tpchgen(sf, out, row_group_rows=row_group_rows, files=files, tables=tables)
        return out
    from tpch.pipeline.source import ensure_source
    src = ensure_source(sf, source or default_source_dir(out, sf))
    if writer.startswith("spark"):
        from tpch.pipeline.spark_writer import write_spark
        write_spark(src, out, writer, row_group_rows=row_group_rows, files=files,
                    master=master, driver_memory=driver_memory, tables=tables)
    elif writer == "arrow":
        from tpch.pipeline.local_writers import write_arrow
        write_arrow(src, out, row_group_rows=row_group_rows, files=files, tables=tables)
    else:
        from tpch.pipeline.local_writers import write_duckdb
        write_duckdb(src, out, row_group_rows=row_group_rows, files=files, tables=tables)
    return out


def _complete(out: str, tables) -> bool:
    import glob
    from tpch.queries import table_path
    return all(glob.glob(table_path(out, t)) for t in tables)


def _remove_table(out: str, table: str) -> None:
    single = os.path.join(out, f"{table}.parquet")
    if os.path.exists(single):
        os.remove(single)
    folder = os.path.join(out, table)
    if os.path.isdir(folder):
        shutil.rmtree(folder)


def source_file(src: str, table: str) -> str:
    return os.path.join(src, f"{table}.parquet")
