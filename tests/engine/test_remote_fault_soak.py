"""A soak: the 22 TPC-H queries at SF0.1 over http from a server that
answers a share of all range reads with a random fault, each query on a
fresh connection (so it fetches its footers and chunks while faults come:
retries, merged ranges cut into pages, read-ahead, a failed query's reads
still running).  Every query gives the local rows or a PqdbIOError naming
the URL and the range; none hangs, nothing else escapes.  With retryable
faults only (and retries enough) every query gives the local rows."""

from __future__ import annotations

import os

import pytest

from scan.errors import PqdbIOError
from tests.connections import pqdb_with_views, tpch_tables
from tests.http_server import HttpServer, bounded
from tpch.answers import compare_rows
from tpch.queries import query_numbers, query_text

RETRYABLE = ["503", "429", "500", "reset", "truncate", "slow"]
ANY = RETRYABLE + ["404", "403", "bad_range", "ignore_range"]


@pytest.fixture(scope="module")
def local_answers(tpch_sf01):
    con = pqdb_with_views(tpch_tables(tpch_sf01), threads=2)
    out = {}
    for q in query_numbers():
        r = con.sql(query_text(q))
        out[q] = (r.columns, [list(map(str, row)) for row in r.fetchall()])
    con.close()
    return out


def soak(tpch_sf01, local_answers, kinds, share, seed, retries):
    server = HttpServer().start()
    server.slow_seconds = 1.5           # past the 0.4 s timeout below
    try:
        urls = {t: server.add(f"tpch/{os.path.basename(p)}", p)
                for t, p in tpch_tables(tpch_sf01).items()}
        server.fail_randomly(share, kinds, seed)
        outcomes = {}
        for q in query_numbers():
            sql = query_text(q)

            def run():
                con = pqdb_with_views(urls, threads=2, http_timeout=0.4, http_retries=retries)
                try:
                    r = con.sql(sql)
                    return r.columns, r.fetchall()
                finally:
                    con.close()
            try:
                columns, rows = bounded(run, 120)
            except PqdbIOError as e:
                assert e.url in urls.values() and e.byte_range is not None, f"Q{q}: {e}"
                outcomes[q] = "error"
                continue
            want_columns, want_rows = local_answers[q]
            assert columns == want_columns, q
            problem = compare_rows(rows, want_rows, columns, ordered="order by" in sql.lower())
            assert problem is None, f"Q{q} with faults {server.injected}: {problem}"
            outcomes[q] = "rows"
        return outcomes, list(server.injected)
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_random_faults_give_the_rows_or_a_clear_error(tpch_sf01, local_answers, seed):
    outcomes, injected = soak(tpch_sf01, local_answers, ANY, 0.2, seed, retries=2)
    assert len(injected) >= 20 and set(injected) - set(RETRYABLE), injected
    assert "rows" in outcomes.values(), outcomes


@pytest.mark.slow
def test_retried_faults_give_every_querys_rows(tpch_sf01, local_answers):
    # a read fails only after 6 faults in a row: about 1e-6 per read at 10%
    outcomes, injected = soak(tpch_sf01, local_answers, RETRYABLE, 0.1, 3, retries=5)
    assert len(injected) >= 20, injected
    assert set(outcomes.values()) == {"rows"}, outcomes
