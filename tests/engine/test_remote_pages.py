"""Remote reads of a few row ranges fetch pages, not chunks: on a sorted
file, once statistics exist, a selective filter fetches the pages of the
row ranges its synopses leave (scan/prefetch.py, ParquetFile.page_run),
and gives DuckDB's rows."""

from __future__ import annotations

import time

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from tests.http_server import bounded

ROWS = 400_000


@pytest.fixture(scope="module")
def sorted_file(tmp_path_factory):
    rng = np.random.default_rng(21)
    d = np.sort(rng.integers(0, 2000, ROWS)).astype(np.int32)
    table = pa.table({
        "d": d,
        "x": rng.integers(0, 1 << 40, ROWS),
        "s": pa.array([f"s{v % 997}" for v in range(ROWS)]),     # dictionary pages
        "f": rng.random(ROWS),
    })
    path = str(tmp_path_factory.mktemp("pages") / "sorted.parquet")
    pq.write_table(table, path, row_group_size=ROWS, write_page_index=True,
                   data_page_size=64 * 1024, compression="snappy")
    return path


# (query, most of the first run's bytes the second may fetch).  x and f
# fall back from dictionary to PLAIN pages after ~140,000 rows: rows past
# that need no dictionary page (1 MB each); rows before it do.
QUERIES = [
    ("SELECT count(*), sum(x), min(s), max(s), sum(f) FROM {t} WHERE d BETWEEN 1500 AND 1560",
     1 / 8),
    ("SELECT d, x, s FROM {t} WHERE d >= 1990 ORDER BY x", 1 / 8),
    ("SELECT s, count(*) FROM {t} WHERE d < 30 AND x % 3 = 0 GROUP BY s ORDER BY s", 1 / 2),
]


@pytest.mark.parametrize("sql,share", QUERIES)
def test_known_statistics_fetch_only_the_pages_needed(fault_server, sorted_file, sql, share):
    url = fault_server.add("sorted.parquet", sorted_file)
    want = duckdb.sql(sql.format(t=f"'{sorted_file}'")).fetchall()
    con = engine.connect(threads=2)
    first = bounded(lambda: con.sql(sql.format(t=f"'{url}'")))
    assert first.fetchall() == want              # (collects the statistics)
    con._catalog.buffer_manager.invalidate()      # the bytes go, the statistics stay
    second = bounded(lambda: con.sql(sql.format(t=f"'{url}'")))
    assert second.fetchall() == want
    assert 0 < second.io["bytes_fetched"] < first.io["bytes_fetched"] * share, \
        (first.io, second.io)
    # the same query on the local file skips the same rows
    local = engine.connect(threads=2)
    local.sql(sql.format(t=f"'{sorted_file}'")).fetchall()
    assert local.sql(sql.format(t=f"'{sorted_file}'")).fetchall() == want
    con.close()


def test_page_run_covers_the_rows(sorted_file):
    from scan import open_parquet
    from scan.io.buffer_manager import BufferManager
    pf = open_parquet(sorted_file, buffer_manager=BufferManager(1 << 28))
    for c in range(len(pf.columns)):
        oi = pf.offset_index(0, c)
        assert oi.num_pages > 4
        for start, count in [(0, 1), (123_456, 50_000), (ROWS - 10, 10), (0, ROWS)]:
            run = pf.page_run(0, c, start, count)
            assert run.first_row <= start and start + count <= run.first_row + run.num_rows
            assert run.directory[0][1] == 0
            whole = pf.read_column(0, c)
            # decoding the joined ranges alone gives the chunk's rows
            got = pf._read_pages(0, c, start, count, None, False)
            want = whole.values[start:start + count]
            assert got is not None and np.array_equal(np.asarray(got.values), np.asarray(want))
    # x falls back to PLAIN pages: rows past that need no dictionary page
    x = pf.column_index("x")
    chunk = pf.row_groups[0].columns[x]
    assert pf.page_run(0, x, 0, 10).ranges[0] == (chunk.start, int(pf.offset_index(0, x).offsets[0]) - chunk.start)
    assert len(pf.page_run(0, x, 300_000, 10).ranges) == 1


def test_cached_chunks_serve_a_partial_read(fault_server, sorted_file):
    """The first run fetched whole chunks; the second, skipping by the new
    statistics, reads pages of them: from the cached chunks, fetching nothing."""
    url = fault_server.add("sorted.parquet", sorted_file)
    sql = QUERIES[0][0].format(t=f"'{url}'")
    con = engine.connect(threads=2)
    first = bounded(lambda: con.sql(sql))
    second = bounded(lambda: con.sql(sql))
    assert second.fetchall() == first.fetchall()
    assert second.io["bytes_fetched"] == 0 and second.io["requests"] == 1


def test_page_indexes_come_in_one_request(fault_server, sorted_file):
    """The page indexes of the columns read lie among the others': they
    are fetched as one region (not one request each, nor cut by the 10%
    waste cap of chunk coalescing)."""
    from scan import open_parquet
    from scan.io.buffer_manager import BufferManager
    from scan.io.http import HttpClient, HttpSource
    url = fault_server.add("sorted.parquet", sorted_file)
    client = HttpClient()
    try:
        pf = bounded(lambda: open_parquet(HttpSource(url, client),
                                          buffer_manager=BufferManager(1 << 28)))
        chunks = pf.row_groups[0].columns
        first_index = min(c.column_index_offset for c in chunks)
        fault_server.clear_log()
        bounded(lambda: pf.will_read([(0, [0, 3], [(0, 1000)])]))   # d and f, not x, s


        def index_requests():       # (the server logs a request after its last byte)
            return [r for r in list(fault_server.log) if r.range and
                    int(r.range.split("=")[1].split("-")[0]) >= first_index]
        for _ in range(500):
            if index_requests():
                break
            time.sleep(0.01)
        time.sleep(0.2)
        assert len(index_requests()) == 1, [r.range for r in fault_server.log]
    finally:
        client.close()
