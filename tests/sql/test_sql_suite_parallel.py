"""The SQL suite (test_sql_suite.py) again with threads=8, block_rows=1000 and
64 KiB scan blocks (morsels of a few hundred rows)
(issue 5: identical results whatever the thread count and block size)."""

from __future__ import annotations

import pytest

from tests.sql.test_sql_suite import open_engines, test_sql  # noqa: F401  (collected here)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engines(sql_tables):
    """(pqdb with 8 threads and small blocks, DuckDB) for test_sql."""
    con, duck = open_engines(sql_tables, threads=8, block_rows=1000, block_bytes="64KiB")
    yield con, duck
    con.close()
    duck.close()
