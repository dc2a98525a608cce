"""Connections with one view per Parquet file, the way most tests put the
same query to pqdb and to DuckDB (the oracle): ``tables`` maps a view name
to a file path or glob, and both engines get the same CREATE VIEW text."""

from __future__ import annotations


def view_statements(tables: dict[str, str]) -> list[str]:
    """CREATE VIEW name AS SELECT * FROM read_parquet(path), one per table;
    the same text works in pqdb and DuckDB."""
    return [f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{path}')"
            for name, path in tables.items()]


def tpch_tables(data_dir: str) -> dict[str, str]:
    """The eight TPC-H tables of a data directory, for the functions below."""
    from tpch.queries import TABLES, table_path
    return {t: table_path(data_dir, t) for t in TABLES}


def pqdb_with_views(tables: dict[str, str], **options):
    """A pqdb connection (``options`` as for engine.connect) with the views."""
    import engine
    con = engine.connect(":memory:", **options)
    for stmt in view_statements(tables):
        con.sql(stmt)
    return con


def duckdb_with_views(tables: dict[str, str]):
    """A DuckDB connection with the views."""
    import duckdb
    con = duckdb.connect()
    for stmt in view_statements(tables):
        con.execute(stmt)
    return con


def pqdb_with_tpch(data_dir: str, **options):
    """A pqdb connection with a view per TPC-H table of data_dir."""
    return pqdb_with_views(tpch_tables(data_dir), **options)


def duckdb_with_tpch(data_dir: str):
    """A DuckDB connection with a view per TPC-H table of data_dir."""
    return duckdb_with_views(tpch_tables(data_dir))


def duckdb_rows(sql: str, tables: dict[str, str]) -> list[tuple]:
    """DuckDB's rows for sql over the views (a connection of its own)."""
    con = duckdb_with_views(tables)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
