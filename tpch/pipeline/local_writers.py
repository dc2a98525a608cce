"""Writers that run in this process: tpchgen-cli's own, pyarrow's and DuckDB's.

pyarrow and DuckDB are pipeline and benchmark tools here, never part of the
engine."""

from __future__ import annotations

import os
import subprocess

from tpch.generate import tpchgen_executable
from tpch.pipeline import source_file


def _targets(out: str, table: str, files: int) -> list[str]:
    if files == 1:
        return [os.path.join(out, f"{table}.parquet")]
    folder = os.path.join(out, table)
    os.makedirs(folder, exist_ok=True)
    return [os.path.join(folder, f"{table}.{i + 1}.parquet") for i in range(files)]


def _slices(num_rows: int, files: int) -> list[tuple[int, int]]:
    """(offset, length) of each file's contiguous share of the rows."""
    bounds = [num_rows * i // files for i in range(files + 1)]
    return [(bounds[i], bounds[i + 1] - bounds[i]) for i in range(files)]


def write_tpchgen(sf: float, out: str, *, row_group_rows: int | None, files: int, tables) -> None:
    """tpchgen-cli writes the Parquet itself.  It sizes row groups in bytes,
    so a row count is turned into bytes with the table's average row width
    (measured on a default-layout copy): the row groups come out close to,
    not exactly at, the requested row count."""
    base = [tpchgen_executable(), "parquet", "-s", f"{sf:g}", "--output-dir", out,
            "--overwrite", "--quiet"]
    if files > 1:
        base += ["--parts", str(files)]
    if row_group_rows is None:
        subprocess.run(base + ["--tables", ",".join(tables)], check=True, stdout=subprocess.DEVNULL)
        return
    from tpch.pipeline import default_source_dir
    from tpch.pipeline.source import average_row_bytes, ensure_source
    src = ensure_source(sf, default_source_dir(out, sf))
    for table in tables:
        width = average_row_bytes(source_file(src, table))
        size = max(int(width * row_group_rows), 1024)
        subprocess.run(base + ["--tables", table, "--row-group-bytes", str(size)],
                       check=True, stdout=subprocess.DEVNULL)


def write_arrow(src: str, out: str, *, row_group_rows: int | None, files: int, tables) -> None:
    """pyarrow's writer with its defaults (snappy, dictionary, statistics, no
    page index) and, unless told otherwise, one row group per file: the
    paper's Arrow case."""
    import pyarrow.parquet as pq
    for table in tables:
        data = pq.read_table(source_file(src, table))
        for target, (offset, length) in zip(_targets(out, table, files),
                                            _slices(data.num_rows, files)):
            part = data.slice(offset, length)
            pq.write_table(part, target, row_group_size=row_group_rows or max(part.num_rows, 1))


def write_duckdb(src: str, out: str, *, row_group_rows: int | None, files: int, tables) -> None:
    """DuckDB's COPY ... (FORMAT parquet) with its defaults (snappy, row
    groups of 122,880 rows) unless a row-group size is given; DuckDB treats
    that size as a target and cuts at its 2,048-row vector boundaries."""
    import duckdb
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = true")
    options = "FORMAT parquet" + (f", ROW_GROUP_SIZE {int(row_group_rows)}" if row_group_rows else "")
    for table in tables:
        path = source_file(src, table).replace("'", "''")
        num_rows = con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchone()[0]
        for target, (offset, length) in zip(_targets(out, table, files), _slices(num_rows, files)):
            query = f"SELECT * FROM read_parquet('{path}')"
            if files > 1:
                query += f" LIMIT {length} OFFSET {offset}"
            con.execute(f"COPY ({query}) TO '{target.replace(chr(39), chr(39) * 2)}' ({options})")
    con.close()
