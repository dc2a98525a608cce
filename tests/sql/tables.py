"""The tables the records of tests/sql/*.test query: the eight TPC-H SF0.01
tables (lineitem, orders, ...) and the small tables below, written as Parquet
by DuckDB.  Every record sees them as views of these names."""

from __future__ import annotations

from pathlib import Path

from tests.connections import tpch_tables

# small tables with NULLs, duplicates, strings, decimals and dates
INLINE = {
    "t1": """SELECT * FROM (VALUES
        (1, 'apple', 1.50::DECIMAL(10,2), DATE '2024-01-15', 1.5::DOUBLE, 10),
        (2, 'banana', 2.25::DECIMAL(10,2), DATE '2024-02-29', 2.5::DOUBLE, 10),
        (3, NULL, NULL, NULL, NULL, 20),
        (4, 'cherry', -3.75::DECIMAL(10,2), DATE '2023-12-31', -0.5::DOUBLE, 20),
        (5, 'apple', 1.50::DECIMAL(10,2), DATE '2024-01-15', 1.5::DOUBLE, NULL),
        (6, 'Durian%_x', 100.00::DECIMAL(10,2), DATE '2020-06-30', 1e10::DOUBLE, 30),
        (NULL, 'elder', 0.01::DECIMAL(10,2), DATE '1999-03-01', 0.0::DOUBLE, 30),
        (8, '  padded  ', 7.00::DECIMAL(10,2), DATE '2024-03-31', 7.25::DOUBLE, 30)
        ) AS t(a, s, d, dt, f, g)""",
    "t2": """SELECT * FROM (VALUES
        (1, 'apple', 10, DATE '2024-01-15'),
        (1, 'apricot', 11, DATE '2024-01-16'),
        (3, 'cherry', 30, NULL),
        (4, NULL, 40, DATE '2023-12-31'),
        (9, 'fig', 90, DATE '2025-01-01'),
        (NULL, 'grape', 100, DATE '2024-01-15')
        ) AS t(a, s, v, dt)""",
    # sums past 2^63: DECIMAL(15,2) values near 1e13 (SF10 magnitudes)
    "big": """SELECT (9999999999999.99 - (i % 7))::DECIMAL(15,2) AS x, i % 3 AS k
              FROM range(20000) r(i)""",
}


def write_tables(tpch_dir: str, folder: Path) -> dict[str, str]:
    """{view name: Parquet path}: the TPC-H tables of tpch_dir and INLINE
    written into folder."""
    import duckdb
    tables = tpch_tables(tpch_dir)
    con = duckdb.connect()
    for name, select in INLINE.items():
        path = folder / f"{name}.parquet"
        con.execute(f"COPY ({select}) TO '{path}' (FORMAT parquet)")
        tables[name] = str(path)
    con.close()
    return tables
