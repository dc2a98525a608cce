"""Connections for the fuzzer: pqdb and DuckDB over the same views."""

from __future__ import annotations

from pathlib import Path

from tests.fuzz import tables


def connect(folder: Path, tpch: bool = True, tpch_dir: str | None = None, layout: str = "one",
            server=None, **options):
    """(pqdb connection, DuckDB connection, schema).  TPC-H SF0.01 is
    generated into folder/tpch unless tpch_dir names it.  layout: one of
    tables.LAYOUTS; server: a started tests.http_server.HttpServer that
    serves pqdb's files; options go to engine.connect."""
    import duckdb

    import engine
    if tpch and tpch_dir is None:
        from tpch.generate import generate
        tpch_dir = generate(0.01, str(folder / "tpch"))
    pq, duck = engine.connect(":memory:", **options), duckdb.connect()
    schema = tables.setup(folder / "small", tpch_dir if tpch else None, pq, duck, layout,
                          server)
    return pq, duck, schema
