"""scan/io/http.py against a real HTTP server on 127.0.0.1 (tests/http_server.py):
range reads, the footer's one tail read, and every injected fault giving the
file's rows or a clear PqdbIOError naming URL and range -- never a hang,
never wrong rows."""

from __future__ import annotations

import time

import pytest

from scan import open_parquet
from scan.errors import PqdbIOError
from scan.io.buffer_manager import BufferManager
from scan.io.http import HttpClient, HttpSource
from scan.io.remote import RemoteSettings, coalesce
from tests.http_server import bounded, sample_parquet


def read_ids(url, client, bm=None):
    """Every row group's id column, as one list (and the file)."""
    pf = open_parquet(HttpSource(url, client), buffer_manager=bm or BufferManager(1 << 30))
    ids = []
    for rg in range(len(pf.row_groups)):
        ids.extend(pf.read_column(rg, 0).values.tolist())
    return ids


def expected(sample):
    pf = open_parquet(sample, buffer_manager=BufferManager(1 << 30))
    return [v for rg in range(len(pf.row_groups)) for v in pf.read_column(rg, 0).values.tolist()]


def test_coalesce_merges_close_ranges():
    assert coalesce([(0, 10), (15, 5), (100, 10)], 5, max_waste=1.0) == \
        [(0, 20, [0, 1]), (100, 110, [2])]
    assert coalesce([(100, 10), (0, 10)], 0) == [(0, 10, [1]), (100, 110, [0])]
    # overlapping and touching ranges merge whatever the gap option
    assert coalesce([(0, 10), (5, 10), (15, 5)], 0) == [(0, 20, [0, 1, 2])]


def test_coalesce_shares_the_waste_allowance_of_one_call():
    ranges = [(0, 1000), (5000, 500), (5600, 400)]
    # 100 wasted of 900 asked: over 10% for that request alone
    assert coalesce(ranges, 1000) == [(0, 1000, [0]), (5000, 5500, [1]), (5600, 6000, [2])]
    history = [0, 0]
    # within 10% of the 1,900 bytes the call asks for
    assert coalesce(ranges, 1000, history=history) == [(0, 1000, [0]), (5000, 6000, [1, 2])]
    assert history == [1900, 100]
    # the allowance spent, the next such gap stays apart
    assert coalesce([(0, 500), (600, 400)], 1000, history=[1000, 100]) == \
        [(0, 500, [0]), (600, 1000, [1])]


def test_coalesce_caps_the_wasted_bytes():
    # a 5-byte gap is 25% of a 20-byte request: over the 10% cap, not merged
    assert coalesce([(0, 10), (15, 5)], 100) == [(0, 10, [0]), (15, 20, [1])]
    # 270 KB chunks with an unneeded one between them stay apart at a 1 MiB gap
    k = 270_000
    assert len(coalesce([(0, k), (2 * k, k), (4 * k, k)], 1 << 20)) == 3
    # small gaps merge while their sum stays <= 10% of the request
    got = coalesce([(0, 1000), (1050, 1000), (2100, 1000), (3150, 1000)], 1 << 20)
    assert got == [(0, 4150, [0, 1, 2, 3])]
    # never beyond the gap option, however small the share
    assert len(coalesce([(0, 10 << 20), ((10 << 20) + 100, 10 << 20)], 50)) == 2
    # the bytes requested never exceed 1.1x those asked for
    import random
    rnd = random.Random(7)
    for _ in range(200):
        rs = [(rnd.randrange(0, 10 << 20), rnd.randrange(1, 300_000)) for _ in range(20)]
        need, reach = 0, 0
        for o, n in sorted(rs):
            need += max(o + n - max(o, reach), 0)
            reach = max(reach, o + n)
        asked = sum(e - s for s, e, _ in coalesce(rs, 1 << 20))
        assert asked <= 1.1 * need


def test_range_reads_and_one_footer_read(fault_server, client, sample):
    url = fault_server.add("a.parquet", sample)
    assert bounded(lambda: read_ids(url, client)) == expected(sample)
    log = fault_server.log
    assert log[0].method == "HEAD"
    assert log[1].range is not None and log[1].range.endswith(f"-{len(fault_server.files['a.parquet']) - 1}")
    assert all(r.status in (200, 206) for r in log)
    # a footer of < 64 KiB comes in the one tail read; then one read per chunk
    assert len([r for r in log if r.method == "GET"]) == 1 + 4


def test_small_file_fetched_whole(fault_server, client, tmp_path):
    path = sample_parquet(str(tmp_path / "small.parquet"), rows=100, row_group_size=50)
    url = fault_server.add("small.parquet", path)
    assert bounded(lambda: read_ids(url, client)) == list(range(100))
    gets = fault_server.data_requests()
    assert len(gets) == 1 and gets[0].range is None


@pytest.mark.parametrize("faults", [["503"], ["503", "503"], ["429"], ["408"], ["500"],
                                    ["reset"], ["truncate"], ["slow"]])
def test_transient_faults_are_retried(fault_server, client, sample, faults):
    url = fault_server.add("a.parquet", sample)
    fault_server.slow_seconds = 2.0          # past http_timeout (1 s)
    fault_server.fail("a.parquet", *faults)
    assert bounded(lambda: read_ids(url, client)) == expected(sample)
    statuses = [r.status for r in fault_server.log]
    assert len(fault_server.data_requests()) >= 5 + len(faults) - (faults == ["slow"])
    assert statuses.count(206) >= 5 or faults == ["slow"]


def test_a_server_that_is_not_there_is_an_error_after_retries():
    """Connection refused (nothing listens on the port): retried, then a
    PqdbIOError naming the URL."""
    import socket
    with socket.socket() as s:          # a port nothing listens on (once closed)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/a.parquet"
    c = HttpClient(RemoteSettings(timeout=1.0, retries=2))
    try:
        with pytest.raises(PqdbIOError, match="after 3 attempts") as e:
            bounded(lambda: HttpSource(url, c), 20)
        assert e.value.url == url
    finally:
        c.close()


def test_retries_exhausted_is_an_error(fault_server, client, sample):
    url = fault_server.add("a.parquet", sample)
    source = HttpSource(url, client)
    fault_server.fail("a.parquet", "503", "503", "503")
    with pytest.raises(PqdbIOError) as e:
        bounded(lambda: source.read(100, 10))
    assert url in str(e.value) and "range=100-110" in str(e.value) and "503" in str(e.value)
    assert "3 attempts" in str(e.value)


def test_slow_server_times_out(fault_server, sample):
    url = fault_server.add("a.parquet", sample)
    fault_server.slow_seconds = 1.5
    c = HttpClient(RemoteSettings(timeout=0.3, retries=1))
    try:
        source = HttpSource(url, c)
        fault_server.fail("a.parquet", "slow", "slow")
        with pytest.raises(PqdbIOError, match="timed out"):
            bounded(lambda: source.read(0, 100), 20)
    finally:
        c.close()


@pytest.mark.parametrize("status", ["404", "403", "416"])
def test_other_status_is_an_error_naming_url_status_range(fault_server, client, sample, status):
    url = fault_server.add("a.parquet", sample)
    source = HttpSource(url, client)
    fault_server.fail("a.parquet", status)
    with pytest.raises(PqdbIOError) as e:
        bounded(lambda: source.read(1000, 24))
    text = str(e.value)
    assert f"HTTP {status}" in text and url in text and "range=1000-1024" in text
    assert len(fault_server.data_requests()) == 1         # not retried


def test_missing_file_on_open(fault_server, client):
    with pytest.raises(PqdbIOError, match="404"):
        bounded(lambda: HttpSource(fault_server.url("nope.parquet"), client))


def test_head_refused_falls_back_to_ranged_get(fault_server, client, sample):
    url = fault_server.add("a.parquet", sample)
    fault_server.refuse_head = True
    source = bounded(lambda: HttpSource(url, client))
    assert source.size() == len(fault_server.files["a.parquet"])
    for _ in range(500):        # the server logs a GET after its last byte went out
        if len(fault_server.log) >= 2:
            break
        time.sleep(0.01)
    assert [r.method for r in fault_server.log] == ["HEAD", "GET"]
    assert fault_server.log[1].range == "bytes=0-0"
    assert bounded(lambda: read_ids(url, client)) == expected(sample)


def test_server_ignoring_range_is_accepted_and_kept_whole(fault_server, client, sample):
    url = fault_server.add("a.parquet", sample)
    fault_server.fail("a.parquet", "ignore_range")
    assert bounded(lambda: read_ids(url, client)) == expected(sample)
    assert len(fault_server.data_requests()) == 1         # the whole body served the rest


def test_bad_content_range_is_refused(fault_server, client, sample):
    url = fault_server.add("a.parquet", sample)
    source = HttpSource(url, client)
    fault_server.fail("a.parquet", "bad_range")
    with pytest.raises(PqdbIOError, match="Content-Range") as e:
        bounded(lambda: source.read(1000, 24))
    assert url in str(e.value)


def test_file_replaced_while_reading_fails_clearly(fault_server, client, sample, tmp_path):
    url = fault_server.add("a.parquet", sample)
    pf = bounded(lambda: open_parquet(HttpSource(url, client), buffer_manager=BufferManager(1 << 30)))
    pf.read_column(0, 0)
    other = sample_parquet(str(tmp_path / "other.parquet"), rows=200_000, row_group_size=40_000)
    fault_server.replace("a.parquet", other)
    with pytest.raises(PqdbIOError, match="changed while being read") as e:
        bounded(lambda: pf.read_column(1, 0))
    assert url in str(e.value) and "range=" in str(e.value)
    assert any(r.status == 412 for r in fault_server.log)


def test_changed_etag_without_if_match_support(fault_server, client, sample, tmp_path):
    """A server that ignores If-Match but sends the new ETag is caught too."""
    url = fault_server.add("a.parquet", sample)
    source = HttpSource(url, client)
    fault_server.etags["a.parquet"] = '"other"'
    original = fault_server.etags.copy()
    fault_server.etags = type("E", (dict,), {"get": lambda self, k: '"other"'})(original)
    with pytest.raises(PqdbIOError, match="changed while being read"):
        bounded(lambda: source.read(1000, 24))


def test_redirect_is_followed(fault_server, client, sample):
    fault_server.add("a.parquet", sample)
    url = fault_server.url("redirect/a.parquet")
    assert bounded(lambda: read_ids(url, client)) == expected(sample)
    assert any(r.status == 302 for r in fault_server.log)


def test_headers_are_sent(fault_server, sample):
    url = fault_server.add("a.parquet", sample)
    c = HttpClient(RemoteSettings(headers={"Authorization": "Bearer t0k"}))
    try:
        source = HttpSource(url, c)
        source.read(0, 10)
    finally:
        c.close()
    assert [r.headers.get("Authorization") for r in fault_server.log] == ["Bearer t0k"] * 2
    assert fault_server.log[1].headers.get("If-Match") == fault_server.etags["a.parquet"]


def test_concurrent_prefetch_coalesces_and_fills_the_cache(fault_server, sample):
    url = fault_server.add("a.parquet", sample)
    c = HttpClient(RemoteSettings(coalesce_gap=1 << 20, concurrency=4))
    try:
        bm = BufferManager(1 << 30)
        pf = open_parquet(HttpSource(url, c), buffer_manager=bm)
        fault_server.clear_log()
        pf.will_read([(rg, [0, 1, 2, 3]) for rg in range(len(pf.row_groups))])
        for rg in range(len(pf.row_groups)):
            for col in range(4):
                pf.read_column(rg, col)
        # one request per row group (its four chunks are adjacent)
        assert len(fault_server.data_requests()) == len(pf.row_groups)
    finally:
        c.close()


def test_large_footer_takes_a_second_read(fault_server, sample):
    url = fault_server.add("a.parquet", sample)
    c = HttpClient(RemoteSettings(footer_prefetch=256))
    try:
        pf = bounded(lambda: open_parquet(HttpSource(url, c), buffer_manager=BufferManager(1 << 30)))
    finally:
        c.close()
    gets = fault_server.data_requests()
    size = len(fault_server.files["a.parquet"])
    assert gets[0].range == f"bytes={size - 256}-{size - 1}" and len(gets) == 2
    assert len(pf.row_groups) == 4


def test_concurrency_is_bounded(fault_server, sample):
    url = fault_server.add("a.parquet", sample)
    fault_server.slow_seconds = 0.2
    c = HttpClient(RemoteSettings(concurrency=2, coalesce_gap=0))
    try:
        bm = BufferManager(1 << 30)
        pf = bounded(lambda: open_parquet(HttpSource(url, c), buffer_manager=bm))
        fault_server.fail("a.parquet", *["slow"] * 8)
        fault_server.max_in_flight = 0
        ranges = [pf.chunk_extent(rg, col)[2:] for rg in range(4) for col in (0, 2)]   # gaps
        bm.prefetch(pf.source, [(chunk.start, n) for chunk, n in ranges])
        bounded(lambda: [bm.get(pf.source, chunk.start, n) for chunk, n in ranges], 30)
    finally:
        c.close()
    assert fault_server.max_in_flight == 2


def test_a_range_response_becomes_the_page_and_slices_are_copied(fault_server, client, sample):
    """A range fetched by one request is kept as the response's own array
    (no copy); a range cut from a coalesced response is a copy of its bytes,
    so no page keeps a larger response alive; bytes equal the file's."""
    import threading

    import numpy as np
    url = fault_server.add("a.parquet", sample)
    data = fault_server.files["a.parquet"]
    src = HttpSource(url, client)
    got, done_all = {}, threading.Event()

    def done(i, piece, error):
        got[i] = (piece, error)
        if len(got) == 3:
            done_all.set()
    # range 0 alone; ranges 1 and 2 close enough to share one request
    ranges = [(4, 3000), (20_000, 1000), (21_100, 900)]
    src.fetch_ranges(ranges, done, max_waste=1.0)
    assert done_all.wait(10)
    for i, (off, n) in enumerate(ranges):
        piece, error = got[i]
        assert error is None
        assert bytes(piece) == data[off:off + n]
    whole = got[0][0]
    assert isinstance(whole, np.ndarray) and whole.base is None and len(whole) == 3000
    bm = BufferManager(1 << 30)
    assert bm.prefetch(src, [(40_000, 2000)]) == 2000
    page = bm.get(src, 40_000, 2000)
    assert bytes(page) == data[40_000:42_000]
    assert isinstance(page, np.ndarray) and page.base is None       # the response itself
    requests = len(fault_server.data_requests())
    assert bm.prefetch(src, [(50_000, 1000), (51_010, 1000)], max_waste=1.0) == 2000
    a, b = bm.get(src, 50_000, 1000), bm.get(src, 51_010, 1000)
    assert len(fault_server.data_requests()) == requests + 1          # one coalesced request
    assert bytes(a) == data[50_000:51_000] and bytes(b) == data[51_010:52_010]
    assert a.base is None and len(a) == 1000 and b.base is None       # copies, not views


def test_a_merged_request_reads_each_range_into_its_own_array(fault_server, client, sample):
    """Ranges merged into one request come back as arrays of their own
    (no array of the whole request, no second copy), overlapping ranges
    included; a truncated merged response is retried; a server ignoring
    Range still gives every range's bytes."""
    import threading

    import numpy as np
    data = fault_server.files.get("a.parquet") or open(sample, "rb").read()
    ranges = [(20_000, 1000), (21_100, 900), (21_500, 300), (23_000, 2500)]

    def fetch(faults):
        url = fault_server.add("a.parquet", sample)
        if faults:
            fault_server.fail("a.parquet", *faults)
        src = HttpSource(url, client)
        got, done_all = {}, threading.Event()

        def done(i, piece, error):
            got[i] = (piece, error)
            if len(got) == len(ranges):
                done_all.set()
        fault_server.clear_log()
        src.fetch_ranges(ranges, done, max_waste=1.0)
        assert done_all.wait(10)
        for i, (off, n) in enumerate(ranges):
            piece, error = got[i]
            assert error is None
            assert bytes(piece) == data[off:off + n], (faults, i)
        return got
    got = fetch([])
    assert len(fault_server.data_requests()) == 1
    for piece, _ in got.values():
        assert isinstance(piece, np.ndarray) and piece.base is None and piece.flags.writeable
    fetch(["truncate"])
    assert len(fault_server.data_requests()) == 2                   # the retry
    fetch(["ignore_range"])


def test_cut_body_copies_blocks_across_cut_boundaries():
    """read_cut_body with blocks of every small size: each cut gets exactly
    its bytes, gaps are dropped, a short body reports what it received."""
    import asyncio

    import numpy as np

    from scan.io.http import read_cut_body
    body = bytes(range(256)) * 4

    class Content:
        def __init__(self, step, upto):
            self.blocks = [body[i:min(i + step, upto)] for i in range(0, upto, step)]

        async def readany(self):
            return self.blocks.pop(0) if self.blocks else b""

    class Resp:
        def __init__(self, step, upto):
            self.content = Content(step, upto)
    cuts = [(0, 10), (5, 40), (100, 101), (300, 700), (1000, 1024)]

    def arrays():
        return [np.empty(hi - lo, np.uint8) for lo, hi in cuts]
    for step in (1, 3, 7, 64, 333, 1024):
        got = asyncio.run(read_cut_body(Resp(step, len(body)), len(body), cuts, arrays()))
        assert len(got) == len(body)
        assert [bytes(p) for p in got.parts] == [body[lo:hi] for lo, hi in cuts]
        assert all(isinstance(p, np.ndarray) for p in got.parts)
    short = asyncio.run(read_cut_body(Resp(50, 600), len(body), cuts, arrays()))
    assert len(short) == 600


def test_a_batch_starts_its_requests_when_it_ends(fault_server, client, sample):
    url = fault_server.add("a.parquet", sample)
    source = bounded(lambda: HttpSource(url, client))
    fault_server.clear_log()
    with source.batch():
        first = source.submit(0, 100)
        with source.batch():                    # nested: joins the outer batch
            second = source.submit(100, 200)
        time.sleep(0.2)
        assert fault_server.log == [] and not first.done() and not second.done()
    data = open(sample, "rb").read()
    assert bytes(bounded(first.result)) == data[:100]
    assert bytes(bounded(second.result)) == data[100:200]
    assert len(fault_server.data_requests()) == 2


def test_a_batch_of_a_closed_client_fails_its_requests(fault_server, sample):
    url = fault_server.add("a.parquet", sample)
    c = HttpClient(RemoteSettings(timeout=1.0, retries=0))
    source = bounded(lambda: HttpSource(url, c))
    with source.batch():
        fut = source.submit(0, 100)
        c.close()
    with pytest.raises(PqdbIOError, match="closed"):
        bounded(fut.result)


@pytest.mark.parametrize("faults", [("503", "503", "503"), ("slow",)],
                         ids=["waiting-to-retry", "in-flight"])
def test_closing_the_client_fails_the_requests_it_has(fault_server, sample, faults, caplog):
    """A request waiting for its next attempt (or for its answer) when the
    client closes ends with an error at once; the closed loop's tasks had
    left its future unsettled (a waiter hung) and asyncio printed 'Task was
    destroyed but it is pending!' (found by a random-fault soak)."""
    import gc
    url = fault_server.add("a.parquet", sample)
    fault_server.slow_seconds = 1.0         # (the server's stop waits for it)
    c = HttpClient(RemoteSettings(timeout=5.0, retries=3))
    source = bounded(lambda: HttpSource(url, c))
    fault_server.fail("a.parquet", *faults)
    fut = source.submit(0, 100_000)
    time.sleep(0.1)                 # (after the first 503: in the 50 ms backoff, or later)
    assert not fut.done()
    c.close()
    with pytest.raises(PqdbIOError, match="closed") as err:
        fut.result(timeout=2)
    assert err.value.url == url
    del source, fut, c, err
    gc.collect()
    assert "destroyed but it is pending" not in caplog.text
