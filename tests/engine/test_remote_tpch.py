"""All 22 TPC-H queries at SF0.1 over http (the test server on 127.0.0.1)
give the local files' results; the second run of each fetches no chunk
bytes."""

from __future__ import annotations

import os

import pytest

from tests.connections import pqdb_with_views, tpch_tables
from tests.http_server import bounded
from tpch.answers import compare_rows
from tpch.queries import query_numbers, query_text


@pytest.fixture(scope="module")
def remote_tpch(http_server, tpch_sf01):
    urls = {}
    for table, path in tpch_tables(tpch_sf01).items():
        urls[table] = http_server.add(f"tpch_sf01/{os.path.basename(path)}", path)
    local = pqdb_with_views(tpch_tables(tpch_sf01), threads=2)
    remote = pqdb_with_views(urls, threads=2)
    yield local, remote
    remote.close()
    local.close()


def test_tpch_sf01_over_http_gives_the_local_results(remote_tpch):
    local, remote = remote_tpch
    for q in query_numbers():
        sql = query_text(q)
        want = local.sql(sql)
        got = bounded(lambda: remote.sql(sql), 120)
        assert got.columns == want.columns, q
        problem = compare_rows(got.fetchall(), [list(map(str, r)) for r in want.fetchall()],
                               got.columns, ordered="order by" in sql.lower())
        assert problem is None, f"Q{q}: {problem}"
        assert got.io["bytes_fetched"] > 0 or q > 1     # (later queries find chunks cached)
        again = bounded(lambda: remote.sql(sql), 120)
        assert again.io["bytes_fetched"] == 0, f"Q{q} fetched again: {again.io}"
        assert again.io["requests"] <= len(tpch_tables("x")), again.io
