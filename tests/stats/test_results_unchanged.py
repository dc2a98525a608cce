"""Statistics never change a result: every TPC-H query and every record of
the SQL suite gives the same rows with statistics off, on in their first
run (collecting) and on in their second (planned and skipping with them)."""

from __future__ import annotations

import pytest

from tests.connections import pqdb_with_tpch, pqdb_with_views
from tests.sql.conftest import sql_tables  # noqa: F401  (the suite's tables, as a fixture)
from tests.sql.test_sql_suite import RECORDS
from tests.sql.test_sql_suite import test_sql as run_record
from tpch import answers
from tpch.queries import query_text

pytestmark = pytest.mark.slow

QUERIES = [r for r in RECORDS if r.kind != "statement ok"]
PASSES = ("off", "first", "second")


@pytest.mark.parametrize("q", range(1, 23), ids=lambda q: f"q{q:02d}")
def test_tpch_same_rows_with_and_without_statistics(q, duckdb_tpch, tpch_sf001):
    sql = query_text(q)
    want = duckdb_tpch.execute(sql).fetchall()
    off = pqdb_with_tpch(tpch_sf001, threads=2, statistics=False)
    on = pqdb_with_tpch(tpch_sf001, threads=2, block_rows=4096, block_bytes="256KiB")
    for name, con in (("off", off), ("first", on), ("second", on)):
        result = con.sql(sql)
        diff = answers.compare_rows(result.fetchall(), want, result.columns)
        assert diff is None, f"Q{q} statistics {name}: {diff}"


@pytest.fixture(scope="module")
def connections(sql_tables):
    import duckdb
    from tests.connections import view_statements
    duck = duckdb.connect()
    for stmt in view_statements(sql_tables):
        duck.execute(stmt)
    on = pqdb_with_views(sql_tables, threads=2)
    cons = {"off": pqdb_with_views(sql_tables, threads=2, statistics=False),
            "first": on, "second": on}
    yield cons, duck
    duck.close()


@pytest.mark.parametrize("run,record", [(p, r) for p in PASSES for r in QUERIES],
                         ids=[f"{p}-{r.id}" for p in PASSES for r in QUERIES])
def test_sql_suite_with_statistics(run, record, connections):
    """The SQL suite in three passes: statistics off; on, as the records
    first touch the tables' columns; on again, with every column known."""
    cons, duck = connections
    run_record(record, (cons[run], duck))
