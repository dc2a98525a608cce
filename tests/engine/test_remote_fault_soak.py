"""A soak: the 22 TPC-H queries at SF0.1 over http from a server that
answers a share of all range reads with a random fault, each query on a
fresh connection (so it fetches its footers and chunks while faults come:
retries, merged ranges cut into pages, read-ahead, a failed query's reads
still running).  Every query gives the local rows or a PqdbIOError naming
the URL and the range; none hangs, nothing else escapes.  With retryable
faults only (and retries enough) every query gives the local rows.  And a
file swapped between two versions while queries read it gives the rows of
one of them or the error that it changed."""

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


@pytest.fixture(scope="module")
def two_lineitems(tpch_sf01, tmp_path_factory):
    """SF0.1 lineitem and a second version of it: other quantities and
    prices, other row groups (so other byte ranges)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    a = tpch_tables(tpch_sf01)["lineitem"]
    t = pq.read_table(a)
    for name in ("l_quantity", "l_extendedprice"):
        col = t[name]
        t = t.set_column(t.schema.get_field_index(name), name,
                         pc.add(col, pa.scalar(1, pa.int64())).cast(col.type))
    b = str(tmp_path_factory.mktemp("swap") / "lineitem.parquet")
    pq.write_table(t, b, row_group_size=150_000)
    return a, b


@pytest.mark.slow
def test_a_file_swapped_while_queries_run_gives_one_versions_rows(tpch_sf01, two_lineitems):
    """The server swaps lineitem between two versions every 20-200 ms while
    Q1, Q6 and Q14 run (a new connection every third query): each gives
    the rows of one version or the error that the file changed while it
    was read, never rows mixing the two (nor another error: with the
    If-Match, the answers' ETag and size checks and the validation after
    a run all taken out, a query fails decoding pages of both)."""
    import random
    import threading
    tables = tpch_tables(tpch_sf01)
    queries = [1, 6, 14]
    want = {}
    for version, path in zip("AB", two_lineitems):
        con = pqdb_with_views({**tables, "lineitem": path}, threads=2)
        for q in queries:
            want[version, q] = [list(map(str, r)) for r in con.sql(query_text(q)).fetchall()]
        con.close()
    assert all(want["A", q] != want["B", q] for q in queries)
    versions = [open(p, "rb").read() for p in two_lineitems]
    server = HttpServer(rate=30e6).start()    # 30 MB/s: a query's reads span swaps
    rng = random.Random(5)
    stop = threading.Event()

    def swap():
        k = 0
        while not stop.wait(rng.uniform(0.02, 0.2)):
            k += 1
            server.replace("tpch/lineitem.parquet", versions[k % 2])
    swapper = threading.Thread(target=swap, daemon=True)
    seen = {"A": 0, "B": 0, "changed": 0}
    try:
        urls = {t: server.add(f"tpch/{os.path.basename(p)}", p) for t, p in tables.items()}
        con = pqdb_with_views(urls, threads=2)
        swapper.start()
        for i in range(30):
            q = queries[i % 3]
            sql = query_text(q)
            if i % 3 == 0:
                con.close()
                try:
                    con = pqdb_with_views(urls, threads=2)
                except PqdbIOError as e:
                    assert "changed" in str(e), e
                    seen["changed"] += 1
                    continue
            try:
                r = bounded(lambda: con.sql(sql), 120)
                rows = r.fetchall()
            except PqdbIOError as e:
                assert "changed" in str(e) and e.url == urls["lineitem"], e
                seen["changed"] += 1
                continue
            match = [v for v in "AB" if compare_rows(rows, want[v, q], r.columns,
                                                     ordered=True) is None]
            assert match, f"Q{q}: rows of neither version: {rows[:3]}"
            seen[match[0]] += 1
        con.close()
    finally:
        stop.set()
        server.stop()
    assert seen["A"] and seen["B"], seen
