"""The SQL suite (test_sql_suite.py) again with threads=8, block_rows=1000 and
64 KiB scan blocks (morsels of a few hundred rows)
(issue 5: identical results whatever the thread count and block size)."""

from __future__ import annotations

import pytest

from tests.sql import test_sql_suite as suite
from tests.sql.test_sql_suite import test_sql  # noqa: F401  (collected here with our fixture)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engines(tpch_sf001, tmp_path_factory):
    """(pqdb connection with 8 threads and 1000-row blocks, duckdb connection)."""
    import duckdb

    import engine
    from tpch.queries import view_statements
    folder = tmp_path_factory.mktemp("sql_inline_parallel")
    duck = duckdb.connect()
    statements = list(view_statements(tpch_sf001))
    for name, select in suite._INLINE.items():
        path = folder / f"{name}.parquet"
        duck.execute(f"COPY ({select}) TO '{path}' (FORMAT parquet)")
        statements.append(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    con = engine.connect(":memory:", threads=8, block_rows=1000, block_bytes="64KiB")
    for s in statements:
        con.sql(s)
        duck.execute(s)
    yield con, duck
    con.close()
    duck.close()
