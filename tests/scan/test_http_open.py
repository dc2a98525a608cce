"""Opening an http file for the first time: one suffix range read
(``Range: bytes=-N``) gives its size, ETag and the footer's speculative
tail read; HEAD validates a known file and is the fallback for servers
that answer the suffix read otherwise.  Every case gives the file's rows
or a PqdbIOError naming URL and range.  Fixtures ``sample`` and ``client``:
conftest.py."""

from __future__ import annotations

import pytest

from scan import open_parquet
from scan.errors import PqdbIOError
from scan.io.buffer_manager import BufferManager
from scan.io.http import HttpSource
from tests.http_server import bounded, sample_parquet

PREFETCH = 64 << 10


def footer_rows(url, client) -> int:
    pf = open_parquet(HttpSource(url, client, tail=True), buffer_manager=BufferManager(1 << 30))
    return pf.num_rows


def test_first_open_is_one_request(fault_server, sample, client):
    url = fault_server.add("t.parquet", sample)
    assert bounded(lambda: footer_rows(url, client)) == 200_000
    log = fault_server.log
    assert [(r.method, r.range, r.status) for r in log] == [("GET", f"bytes=-{PREFETCH}", 206)]
    assert client.io.snapshot()["requests"] == 1


def test_open_parquet_of_a_url_is_one_request(fault_server, sample):
    url = fault_server.add("t.parquet", sample)
    pf = bounded(lambda: open_parquet(url, buffer_manager=BufferManager(1 << 30)))
    assert pf.num_rows == 200_000
    assert [(r.method, r.range) for r in fault_server.log] == [("GET", f"bytes=-{PREFETCH}")]


def test_small_file_is_one_request_in_all(fault_server, tmp_path, client):
    small = sample_parquet(str(tmp_path / "small.parquet"), rows=500, row_group_size=100)
    url = fault_server.add("small.parquet", small)
    pf = open_parquet(HttpSource(url, client, tail=True), buffer_manager=BufferManager(1 << 30))
    ids = [v for rg in range(len(pf.row_groups)) for v in pf.read_column(rg, 0).values.tolist()]
    assert ids == list(range(500))
    assert [r.range for r in fault_server.log] == [f"bytes=-{PREFETCH}"]


@pytest.mark.parametrize("status", ["400", "404", "403"])
def test_other_answers_fall_back_to_head(fault_server, sample, client, status):
    """A server that refuses the suffix read (a status the opening does
    not expect) is asked with HEAD, as before (a missing file's 404 then
    comes from HEAD too: test_missing_file_names_it)."""
    url = fault_server.add("t.parquet", sample)
    fault_server.fail("t.parquet", status)
    assert bounded(lambda: footer_rows(url, client)) == 200_000
    methods = [(r.method, r.status) for r in fault_server.log]
    assert methods[:2] == [("GET", int(status)), ("HEAD", 200)]


def test_missing_file_names_it(fault_server, client):
    url = fault_server.url("nope.parquet")
    with pytest.raises(PqdbIOError, match="404") as e:
        bounded(lambda: footer_rows(url, client))
    assert e.value.url == url


def test_range_ignored_keeps_the_whole_file(fault_server, sample, client):
    url = fault_server.add("t.parquet", sample)
    fault_server.fail("t.parquet", "ignore_range")
    pf = open_parquet(HttpSource(url, client, tail=True), buffer_manager=BufferManager(1 << 30))
    assert sum(len(pf.read_column(rg, 0).values) for rg in range(len(pf.row_groups))) == 200_000
    assert len(fault_server.log) == 1            # every read from the body kept


@pytest.mark.parametrize("fault", ["503", "truncate", "reset"])
def test_transient_faults_are_retried(fault_server, sample, client, fault):
    url = fault_server.add("t.parquet", sample)
    fault_server.fail("t.parquet", fault)
    assert bounded(lambda: footer_rows(url, client)) == 200_000
    assert [r.range for r in fault_server.log][:2] == [f"bytes=-{PREFETCH}"] * 2


def test_wrong_content_range_names_url_and_range(fault_server, sample, client):
    url = fault_server.add("t.parquet", sample)
    fault_server.fail("t.parquet", "bad_range")
    with pytest.raises(PqdbIOError, match=f"range=last {PREFETCH} bytes") as e:
        bounded(lambda: footer_rows(url, client))
    assert e.value.url == url and e.value.byte_range == (-PREFETCH, None)


def test_failing_open_names_url_and_range(fault_server, sample, client):
    url = fault_server.add("t.parquet", sample)
    fault_server.fail("t.parquet", "503", "503", "503")      # retries=2: three attempts
    with pytest.raises(PqdbIOError, match="after 3 attempts") as e:
        bounded(lambda: footer_rows(url, client))
    assert e.value.url == url and e.value.byte_range == (-PREFETCH, None)
