"""Shared fixtures: TPC-H data generated on the fly (tpchgen-cli), cached for
the session, DuckDB (the oracle) over it, and paths to the shared conformance
corpus and answers.  Helpers to connect either engine to other files:
tests/connections.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.connections import duckdb_with_tpch
from tests.paths import SHARED


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"shared/ not found at {SHARED} (set PQDB_SHARED)")
    return SHARED


def _tpch(tmp_path_factory, sf: float) -> str:
    from tpch.generate import generate
    out = tmp_path_factory.getbasetemp() / f"tpch_sf{sf:g}"
    return generate(sf, str(out))


@pytest.fixture(scope="session")
def tpch_sf001(tmp_path_factory) -> str:
    """Directory with the eight TPC-H tables at scale factor 0.01."""
    return _tpch(tmp_path_factory, 0.01)


@pytest.fixture(scope="session")
def tpch_sf01(tmp_path_factory) -> str:
    """Directory with the eight TPC-H tables at scale factor 0.1."""
    return _tpch(tmp_path_factory, 0.1)


@pytest.fixture(scope="session")
def duckdb_tpch(tpch_sf001):
    """A DuckDB connection with a view per TPC-H SF0.01 table (read only:
    tests share it)."""
    con = duckdb_with_tpch(tpch_sf001)
    yield con
    con.close()


@pytest.fixture(scope="session")
def http_server():
    """A shared HTTP server on 127.0.0.1 (tests/http_server.py); tests add
    files under names of their own and must not inject faults here."""
    from tests.http_server import HttpServer
    server = HttpServer().start()
    yield server
    server.stop()


@pytest.fixture
def fault_server():
    """A fresh HTTP server per test, for fault injection and request logs."""
    from tests.http_server import HttpServer
    server = HttpServer().start()
    yield server
    server.stop()
