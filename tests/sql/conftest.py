"""The SQL suite's tables (tests/sql/tables.py), written once per session."""

from __future__ import annotations

import pytest

from .tables import write_tables


@pytest.fixture(scope="session")
def sql_tables(tpch_sf001, tmp_path_factory) -> dict[str, str]:
    """{view name: Parquet path} of every table the records query."""
    return write_tables(tpch_sf001, tmp_path_factory.mktemp("sql_tables"))

