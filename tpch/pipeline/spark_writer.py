"""Spark as the writer: Spark reads the tpchgen rows and writes Parquet with
its own (parquet-mr) writer, as the user's data pipeline would."""

from __future__ import annotations

import glob
import os

from tpch.pipeline import SORT_KEYS, source_file

COMPRESSION = {"spark": "snappy", "spark-sorted": "snappy", "spark-uncompressed": "none"}


def write_spark(src: str, out: str, writer: str, *, row_group_rows: int | None, files: int,
                master: str | None, driver_memory: str | None, tables) -> None:
    """Write every table of ``src`` into DIR/table/part-*.parquet."""
    from engine.spark import spark_session
    spark = spark_session(master, driver_memory or "4g").newSession()
    for table in tables:
        df = spark.read.parquet(os.path.abspath(source_file(src, table)))
        key = SORT_KEYS.get(table) if writer == "spark-sorted" else None
        if key is not None:
            df = df.repartitionByRange(files, key).sortWithinPartitions(key)
        elif df.rdd.getNumPartitions() >= files:
            df = df.coalesce(files)        # keeps the source row order
        else:
            df = df.repartition(files)
        w = df.write.mode("overwrite").option("compression", COMPRESSION[writer])
        if row_group_rows is not None:
            # parquet-mr closes a row group at whichever limit comes first
            w = (w.option("parquet.block.row.count.limit", str(row_group_rows))
                  .option("parquet.block.size", str(1 << 40)))
        target = os.path.join(out, table)
        w.parquet(os.path.abspath(target))
        _tidy(target)


def _tidy(folder: str) -> None:
    """Drop Hadoop's side files (_SUCCESS, .crc checksums) next to the parts."""
    for path in glob.glob(os.path.join(folder, ".*.crc")) + glob.glob(os.path.join(folder, "_*")):
        if os.path.isfile(path):
            os.remove(path)
