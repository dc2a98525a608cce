"""Tables over URLs: http(s) through the test server on 127.0.0.1, fsspec's
memory://; the cache across queries, the memory budget, the disk cache
(also from a new process), Result.io, and the options."""

from __future__ import annotations

import os
import subprocess
import time
import sys

import pytest

import engine
from tests.http_server import bounded, sample_parquet
from tests.paths import REPO


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return sample_parquet(str(tmp_path_factory.mktemp("remote") / "sample.parquet"))


Q = "SELECT count(*), sum(id), min(s), max(d), max(x) FROM {}"


def local_answer(path, q=Q):
    return engine.connect().sql(q.format(f"'{path}'")).fetchall()


def test_url_table_gives_the_local_rows(fault_server, sample):
    url = fault_server.add("t.parquet", sample)
    con = engine.connect(threads=2)
    assert bounded(lambda: con.sql(Q.format(f"'{url}'")).fetchall()) == local_answer(sample)
    assert bounded(lambda: con.sql(Q.format(f"read_parquet('{url}')")).fetchall()) == \
        local_answer(sample)
    con.close()


def test_list_of_urls(fault_server, sample):
    a = fault_server.add("a.parquet", sample)
    b = fault_server.add("b.parquet", sample)
    con = engine.connect()
    got = bounded(lambda: con.sql(f"SELECT count(*), sum(id) FROM read_parquet(['{a}', '{b}'])")
                  .fetchall())
    n = 200_000
    assert got == [(2 * n, n * (n - 1))]


def test_list_of_urls_opens_its_files_at_once(fault_server, tmp_path):
    small = sample_parquet(str(tmp_path / "s.parquet"), rows=1000, row_group_size=500)
    urls = [fault_server.add(f"l/{i}.parquet", small) for i in range(8)]
    fault_server.latency = 0.2          # each answer waits: serial opening takes 8 rounds
    con = engine.connect(threads=2)
    q = "SELECT count(*), sum(id) FROM read_parquet([" + ", ".join(f"'{u}'" for u in urls) + "])"
    assert bounded(lambda: con.sql(q).fetchall()) == [(8000, 8 * 999 * 1000 // 2)]
    assert fault_server.max_in_flight == 8
    fault_server.max_in_flight = 0
    fault_server.clear_log()            # next query: every file validated again, at once
    assert bounded(lambda: con.sql(q).fetchall()) == [(8000, 8 * 999 * 1000 // 2)]
    assert fault_server.max_in_flight == 8
    assert sorted(r.path for r in fault_server.log if r.method == "HEAD") == \
        sorted(f"/l/{i}.parquet" for i in range(8))
    con.close()
    con = engine.connect(http_concurrency=3)
    fault_server.max_in_flight = 0
    assert bounded(lambda: con.sql(q).fetchall()) == [(8000, 8 * 999 * 1000 // 2)]
    assert fault_server.max_in_flight <= 3
    con.close()


def test_list_of_urls_names_the_file_that_fails(fault_server, sample):
    a = fault_server.add("a.parquet", sample)
    b = fault_server.add("b.parquet", sample)
    missing = fault_server.url("missing.parquet")
    con = engine.connect(http_retries=0)
    with pytest.raises(engine.PqdbIOError, match="404") as e:
        bounded(lambda: con.sql(f"SELECT count(*) FROM read_parquet(['{a}', '{missing}', '{b}'])"))
    assert missing in str(e.value)
    assert bounded(lambda: con.sql(f"SELECT count(*) FROM read_parquet(['{a}', '{b}'])")
                   .fetchall()) == [(400_000,)]


def test_known_files_of_a_statement_are_validated_together(fault_server, tmp_path):
    small = sample_parquet(str(tmp_path / "s.parquet"), rows=1000, row_group_size=500)
    a, b = fault_server.add("a.parquet", small), fault_server.add("b.parquet", small)
    con = engine.connect(threads=2)
    q = f"SELECT count(*) FROM '{a}' AS a JOIN '{b}' AS b ON a.id = b.id"
    assert bounded(lambda: con.sql(q).fetchall()) == [(1000,)]
    fault_server.latency = 0.2          # the next statement: two validations, no data
    fault_server.max_in_flight = 0
    fault_server.clear_log()
    assert bounded(lambda: con.sql(q).fetchall()) == [(1000,)]
    assert [r.method for r in fault_server.log] == ["HEAD", "HEAD"]
    assert fault_server.max_in_flight == 2      # (1 when validated while binding: checked)
    con.close()


def test_file_changed_between_statements_is_planned_on_its_new_footer(fault_server, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    first, second = str(tmp_path / "1.parquet"), str(tmp_path / "2.parquet")
    pq.write_table(pa.table({"id": [1, 2, 3]}), first)
    pq.write_table(pa.table({"id": [4, 5], "name": ["x", "y"]}), second)
    url = fault_server.add("t.parquet", first)
    con = engine.connect()
    assert bounded(lambda: con.sql(f"SELECT * FROM '{url}'").fetchall()) == [(1,), (2,), (3,)]
    fault_server.replace("t.parquet", open(second, "rb").read())
    # the column only the new file has: bound on the old footer it is missing
    got = bounded(lambda: con.sql(f"SELECT name, id FROM '{url}' ORDER BY id"))
    assert got.fetchall() == [("x", 4), ("y", 5)]
    fault_server.replace("t.parquet", open(first, "rb").read())
    got = bounded(lambda: con.sql(f"SELECT * FROM '{url}' ORDER BY id"))
    assert got.columns == ["id"] and got.fetchall() == [(1,), (2,), (3,)]
    fault_server.remove("t.parquet")
    with pytest.raises(engine.PqdbIOError, match="404") as e:
        bounded(lambda: con.sql(f"SELECT * FROM '{url}'"))
    assert url in str(e.value)


def test_a_query_reads_while_its_files_are_validated(fault_server, sample):
    """A statement on known files sends its first data request with the
    validations (HEAD), not after their answers: on an object store one
    round trip sooner."""
    url = fault_server.add("a.parquet", sample)
    con = engine.connect(threads=2)
    assert bounded(lambda: con.sql(f"SELECT count(*) FROM '{url}'").fetchall()) == [(200_000,)]
    fault_server.latency = 1.0          # planning's time stays well inside it
    fault_server.together.clear()
    fault_server.clear_log()
    got = bounded(lambda: con.sql(f"SELECT sum(id) FROM '{url}'").fetchall())
    assert got == local_answer(sample, "SELECT sum(id) FROM {}")
    assert [r.method for r in fault_server.log].count("HEAD") == 1
    # a data read and the validation were in flight together
    assert {("GET", "HEAD"), ("HEAD", "GET")} & fault_server.together
    con.close()


def test_a_replaced_file_never_gives_its_old_rows(fault_server, tmp_path):
    """A file replaced (same schema) after its pages were cached: the run
    started on the old footer and cached pages is discarded once the
    validation reports the change, and the statement runs on the new
    file; also when the old run fails (If-Match: 412) and when the file is
    gone."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    old, new = str(tmp_path / "old.parquet"), str(tmp_path / "new.parquet")
    pq.write_table(pa.table({"id": list(range(100)), "v": [1.5] * 100}), old)
    pq.write_table(pa.table({"id": list(range(100, 300)), "v": [2.5] * 200}), new)
    url = fault_server.add("t.parquet", old)
    con = engine.connect(threads=2)
    q = f"SELECT count(*), sum(id), sum(v) FROM '{url}'"
    assert bounded(lambda: con.sql(q).fetchall()) == [(100, 4950, 150.0)]
    assert bounded(lambda: con.sql(q).fetchall()) == [(100, 4950, 150.0)]  # cached
    fault_server.replace("t.parquet", open(new, "rb").read())
    assert bounded(lambda: con.sql(q).fetchall()) == [(200, 39900, 500.0)]
    # not cached: the old footer's ranges are read with If-Match, 412
    fault_server.replace("t.parquet", open(old, "rb").read())
    q2 = f"SELECT max(v), min(id) FROM '{url}'"
    assert bounded(lambda: con.sql(q2).fetchall()) == [(1.5, 0)]
    fault_server.latency = 0.2       # the data reads answered before the validation
    fault_server.replace("t.parquet", open(new, "rb").read())
    assert bounded(lambda: con.sql(f"SELECT min(v), max(id) FROM '{url}'").fetchall()) == \
        [(2.5, 299)]
    fault_server.remove("t.parquet")
    with pytest.raises(engine.PqdbIOError, match="404") as e:
        bounded(lambda: con.sql(q))
    assert url in str(e.value)
    con.close()


def test_http_glob_is_an_error(fault_server):
    con = engine.connect()
    with pytest.raises(engine.NotSupportedError, match="globs are not supported over http"):
        con.sql(f"SELECT * FROM '{fault_server.url('dir/*.parquet')}'")


def test_missing_url_names_it(fault_server):
    con = engine.connect(http_retries=0)
    url = fault_server.url("missing.parquet")
    with pytest.raises(engine.PqdbIOError, match="404") as e:
        bounded(lambda: con.sql(f"SELECT * FROM '{url}'"))
    assert url in str(e.value)


def test_second_run_fetches_no_chunk_bytes(fault_server, sample):
    url = fault_server.add("t.parquet", sample)
    con = engine.connect(threads=2)
    first = bounded(lambda: con.sql(Q.format(f"'{url}'")))
    assert first.io["requests"] >= 2 and first.io["bytes_fetched"] > 0
    fault_server.clear_log()
    second = bounded(lambda: con.sql(Q.format(f"'{url}'")))
    assert second.fetchall() == first.fetchall()
    assert second.io["bytes_fetched"] == 0 and second.io["requests"] == 1   # one validation
    assert second.io["bytes_from_cache"] >= first.io["bytes_fetched"] - 70_000
    assert [r.method for r in fault_server.log] == ["HEAD"]


def test_changed_file_is_read_again(fault_server, sample, tmp_path):
    url = fault_server.add("t.parquet", sample)
    con = engine.connect()
    assert con.sql(f"SELECT count(*) FROM '{url}'").fetchall() == [(200_000,)]
    other = sample_parquet(str(tmp_path / "o.parquet"), rows=1000, row_group_size=500)
    fault_server.replace("t.parquet", other)
    assert bounded(lambda: con.sql(f"SELECT count(*), sum(id) FROM '{url}'").fetchall()) == \
        [(1000, 499500)]


def test_scan_larger_than_the_budget(fault_server, sample):
    url = fault_server.add("t.parquet", sample)
    size = len(fault_server.files["t.parquet"])
    budget = 1 << 20
    assert size > 3 * budget
    con = engine.connect(threads=2, buffer_memory=budget)
    assert bounded(lambda: con.sql(Q.format(f"'{url}'")).fetchall()) == local_answer(sample)
    bm = con._catalog.buffer_manager
    assert bm.peak_bytes <= budget


def test_disk_cache_serves_a_new_process(fault_server, sample, tmp_path):
    url = fault_server.add("t.parquet", sample)
    cache = str(tmp_path / "cache")
    con = engine.connect(threads=2)
    con.sql(f"SET remote_cache_dir = '{cache}'")
    first = bounded(lambda: con.sql(Q.format(f"'{url}'")))
    assert first.io["bytes_fetched"] > 0 and os.listdir(cache)
    code = f"""
import datetime
import engine
con = engine.connect(remote_cache_dir={cache!r})
r = con.sql({Q.format("'" + url + "'")!r})
print(r.io["bytes_fetched"], r.io["bytes_from_cache"], repr(r.fetchall()) == {repr(first.fetchall())!r})
"""
    fault_server.clear_log()
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    fetched, cached, same = out.stdout.split()
    assert fetched == "0" and int(cached) > 0 and same == "True"
    assert [r.method for r in fault_server.log] == ["HEAD"]


def test_disk_cache_corrupt_entry_is_refetched(fault_server, sample, tmp_path):
    url = fault_server.add("t.parquet", sample)
    cache = str(tmp_path / "cache")
    con = engine.connect(remote_cache_dir=cache)
    expect = bounded(lambda: con.sql(Q.format(f"'{url}'")).fetchall())
    entries = [os.path.join(r, f) for r, _, fs in os.walk(cache) for f in fs]
    for i, p in enumerate(entries):             # flip a byte / cut short
        with open(p, "r+b") as f:
            if i % 2:
                f.seek(40)
                b = f.read(1)
                f.seek(40)
                f.write(bytes([b[0] ^ 0xFF]))
            else:
                f.truncate(os.path.getsize(p) - 1)
    con2 = engine.connect(remote_cache_dir=cache)
    r = bounded(lambda: con2.sql(Q.format(f"'{url}'")))
    assert r.fetchall() == expect and r.io["bytes_fetched"] > 0


def test_disk_cache_changed_etag_invalidates(fault_server, sample, tmp_path):
    url = fault_server.add("t.parquet", sample)
    cache = str(tmp_path / "cache")
    bounded(lambda: engine.connect(remote_cache_dir=cache).sql(Q.format(f"'{url}'")).fetchall())
    other = sample_parquet(str(tmp_path / "o.parquet"), rows=100_000, row_group_size=30_000)
    fault_server.replace("t.parquet", other)
    r = bounded(lambda: engine.connect(remote_cache_dir=cache).sql(Q.format(f"'{url}'")))
    assert r.fetchall() == local_answer(other) and r.io["bytes_fetched"] > 0


def test_disk_cache_is_bounded(tmp_path):
    from scan.io.disk_cache import DiskCache
    c = DiskCache(str(tmp_path / "c"), 10_000)
    for i in range(20):
        c.put("u", "v", i * 1000, bytes([i]) * 1000)
    c.trim()
    assert c.total_bytes() <= 10_000
    assert c.get("u", "v", 19_000, 1000) == bytes([19]) * 1000


def test_options_reach_the_requests(fault_server, sample, monkeypatch):
    url = fault_server.add("t.parquet", sample)
    monkeypatch.setenv("PQDB_HTTP_HEADERS", "Authorization: Bearer from-env")
    con = engine.connect()
    con.sql(f"SELECT count(*) FROM '{url}'")
    assert fault_server.log[-1].headers.get("Authorization") == "Bearer from-env"
    con.sql("SET http_headers = 'Authorization: Bearer from-set'")
    con.sql(f"SELECT count(*) FROM '{url}'")
    assert fault_server.log[-1].headers.get("Authorization") == "Bearer from-set"
    con2 = engine.connect(http_headers={"X-Test": "1"}, http_footer_prefetch="16KiB",
                          http_coalesce_gap=0, http_concurrency=2, http_timeout=5)
    fault_server.clear_log()
    con2.sql(f"SELECT count(*) FROM '{url}'")
    tail = fault_server.log[0]              # the opening: the footer's tail, by suffix
    assert tail.headers.get("X-Test") == "1" and tail.method == "GET"
    assert tail.range == f"bytes=-{16 << 10}" and tail.sent == 16 << 10


def test_retries_surface_through_sql(fault_server, sample):
    url = fault_server.add("t.parquet", sample)
    con = engine.connect(http_retries=1, http_timeout=2)
    con.sql(f"SELECT count(*) FROM '{url}'")
    fault_server.fail("t.parquet", "503", "503", "503", "503", "503", "503", "503", "503")
    with pytest.raises(engine.PqdbIOError, match="503") as e:
        bounded(lambda: con.sql(f"SELECT sum(x) FROM '{url}'").fetchall())
    assert url in str(e.value) and "range=" in str(e.value)


def test_fsspec_memory_urls(sample):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    with open(sample, "rb") as f:
        data = f.read()
    for name in ("a", "b"):
        with fs.open(f"/pqdb-test/dir/{name}.parquet", "wb") as f:
            f.write(data)
    con = engine.connect()
    one = con.sql(Q.format("'memory://pqdb-test/dir/a.parquet'"))
    assert one.fetchall() == local_answer(sample) and one.io["bytes_fetched"] > 0
    both = con.sql("SELECT count(*) FROM read_parquet('memory://pqdb-test/dir/*.parquet')")
    assert both.fetchall() == [(400_000,)]
    again = con.sql(Q.format("'memory://pqdb-test/dir/a.parquet'"))
    assert again.io["bytes_fetched"] == 0
    with pytest.raises(engine.PqdbIOError, match="No files found"):
        con.sql("SELECT * FROM 'memory://pqdb-test/none/*.parquet'")


class BackendError(Exception):
    """What a cloud SDK raises (azure's HttpResponseError, gcsfs's
    HttpError, ...): not an OSError."""


@pytest.fixture
def failing_fs(sample):
    """An fsspec memory filesystem under the scheme pqdbfail:// whose info,
    cat_file and glob fail as ``failing_fs.fail`` says, with sample.parquet
    at pqdbfail://d/s.parquet."""
    fsspec = pytest.importorskip("fsspec")
    from fsspec.implementations.memory import MemoryFileSystem

    class FailingFS(MemoryFileSystem):
        protocol = "pqdbfail"
        fail: dict = {}
        store: dict = {}        # (its own, not memory://'s)
        pseudo_dirs = [""]

        @classmethod
        def _strip_protocol(cls, path):
            return MemoryFileSystem._strip_protocol(path.removeprefix("pqdbfail://"))

        def _maybe_fail(self, what):
            error = FailingFS.fail.get(what)
            if error is not None:
                raise error

        def info(self, path, **kw):
            self._maybe_fail("info")
            return super().info(path, **kw)

        def cat_file(self, path, start=None, end=None, **kw):
            self._maybe_fail("cat_file")
            return super().cat_file(path, start=start, end=end, **kw)

        def glob(self, path, **kw):
            self._maybe_fail("glob")
            return super().glob(path, **kw)
    fsspec.register_implementation("pqdbfail", FailingFS, clobber=True)
    fs = FailingFS()
    with open(sample, "rb") as f:
        fs.pipe_file("/d/s.parquet", f.read())
    return FailingFS


@pytest.mark.parametrize("where,message", [("cat_file", "read failed"),
                                           ("info", "cannot (open|list)"),
                                           ("glob", "cannot list")])
def test_fsspec_backend_errors_of_any_type_are_io_errors(failing_fs, sample, where, message):
    """A backend's own exception type is a PqdbIOError naming the URL and
    what was raised (it was an InternalError, 'a bug in pqdb')."""
    url = "pqdbfail://d/s.parquet"
    assert engine.connect().sql(Q.format(f"'{url}'")).fetchall() == local_answer(sample)
    failing_fs.fail[where] = BackendError("service unavailable")
    spec = "'pqdbfail://d/*.parquet'" if where == "glob" else f"'{url}'"
    try:
        with pytest.raises(engine.PqdbIOError,
                           match=f"{message}: BackendError: service unavailable") as e:
            engine.connect().sql(Q.format(spec)).fetchall()
    finally:
        failing_fs.fail.clear()
    assert "pqdbfail://" in str(e.value)
    if where == "cat_file":
        assert "range=" in str(e.value)


def test_missing_fsspec_backend_names_the_package(monkeypatch):
    """A scheme fsspec knows whose package is not installed (s3fs is, for
    tests/engine/test_remote_s3.py: a made-up scheme in fsspec's registry
    stands for it, the way gcsfs's and adlfs's entries look)."""
    from fsspec.registry import known_implementations
    monkeypatch.setitem(known_implementations, "pqdbtest",
                        {"class": "pqdb_absent_fs.PqdbTestFileSystem",
                         "err": "Install pqdb_absent_fs to access pqdbtest://"})
    con = engine.connect()
    with pytest.raises(engine.NotSupportedError, match="pqdb_absent_fs"):
        con.sql("SELECT * FROM 'pqdbtest://bucket/x.parquet'")


def test_coalesce_waste_trades_bytes_for_requests(fault_server, sample):
    """http_coalesce_waste: with a larger share, the chunks of id and d
    (x and s lie between) come in one request per row group instead of
    two, at more bytes; the rows are the same."""
    url = fault_server.add("t.parquet", sample)
    q = f"SELECT sum(id), count(d), min(d) FROM '{url}'"
    got = {}
    for waste in (0.1, 10):
        con = engine.connect(threads=2)
        con.sql(f"SET http_coalesce_waste = {waste}")
        r = bounded(lambda: con.sql(q))
        got[waste] = (r.fetchall(), r.io["requests"], r.io["bytes_fetched"])
        con.close()
    assert got[0.1][0] == got[10][0] == local_answer(sample, q.replace(f"'{url}'", "{}"))
    assert got[10][1] <= got[0.1][1] - 4            # one request fewer per row group
    assert got[10][2] > 1.2 * got[0.1][2]


@pytest.mark.parametrize("name, value, message", [
    ("http_coalesce_waste", "-0.5", ">= 0"),
    ("http_coalesce_waste", "lots", "not a number"),
    ("http_headers", "no colon here", "Name: value"),
    ("http_headers", "{\"a\": ", "JSON"),
    ("http_headers", "{\"X-\u00e9\": \"v\"}", "bad header name"),     # not a token: a 400
    ("http_headers", "X(1): v", "bad header name"),
    ("http_concurrency", "0", "positive"),
    ("http_coalesce_gap", "-1", "byte size"),
    ("remote_cache_size", "lots", "byte size"),
])
def test_bad_remote_options_are_errors(name, value, message):
    con = engine.connect()
    with pytest.raises(engine.ProgrammingError, match=message):
        con.sql(f"SET {name} = '{value}'")


def test_dropped_connections_leave_no_opener_threads(fault_server, tmp_path):
    import gc
    import threading
    small = sample_parquet(str(tmp_path / "s.parquet"), rows=1000, row_group_size=500)
    urls = [fault_server.add(f"d/{i}.parquet", small) for i in range(4)]
    q = "SELECT count(*) FROM read_parquet([" + ", ".join(f"'{u}'" for u in urls) + "])"

    def opener_threads():
        return [t for t in threading.enumerate() if t.name.startswith("pqdb-open")]

    def run():
        con = engine.connect()              # dropped, never closed
        for _ in range(2):                  # opened, then validated in the background
            assert bounded(lambda: con.sql(q).fetchall()) == [(4000,)]
        assert opener_threads()
    run()
    gc.collect()
    deadline = time.time() + 10
    while opener_threads() and time.time() < deadline:
        time.sleep(0.05)
    assert opener_threads() == []


def test_remote_scan_larger_than_the_cache_keeps_part_of_it(fault_server, tmp_path):
    """A second run refetched every chunk: its read-ahead evicted, least
    recently used first, the chunks it was about to read.  Now pages the
    run has read go first, then those it needs furthest ahead."""
    path = sample_parquet(str(tmp_path / "big.parquet"), rows=400_000, row_group_size=25_000)
    url = fault_server.add("big.parquet", path)
    con = engine.connect(threads=2, buffer_memory=3 << 20)
    q = Q.format(f"'{url}'")
    first = bounded(lambda: con.sql(q))
    assert first.fetchall() == local_answer(path)
    assert first.io["bytes_fetched"] > (4 << 20)         # more than the cache holds
    fetched = []
    for _ in range(2):
        again = bounded(lambda: con.sql(q))
        assert again.fetchall() == local_answer(path)
        fetched.append(again.io["bytes_fetched"])
    assert max(fetched) < 0.8 * first.io["bytes_fetched"]
    assert con._catalog.buffer_manager.peak_bytes <= 3 << 20
    con.close()


# ---- opening: one suffix read for a new file, HEAD for a known one (scan/io/http.py)

PREFETCH = 64 << 10


def test_validation_of_a_known_file_is_a_head(fault_server, sample):
    url = fault_server.add("t.parquet", sample)
    con = engine.connect()
    q = f"SELECT count(*) FROM '{url}'"
    assert bounded(lambda: con.sql(q).fetchall()) == [(200_000,)]
    assert [r.method for r in fault_server.log] == ["GET"]
    fault_server.clear_log()
    assert bounded(lambda: con.sql(q).fetchall()) == [(200_000,)]
    assert [r.method for r in fault_server.log] == ["HEAD"]


def test_disk_cache_opens_with_head(fault_server, sample, tmp_path):
    """With remote_cache_dir the footer may be on disk: HEAD gives the
    ETag its key needs, and the footer read comes after it."""
    url = fault_server.add("t.parquet", sample)
    con = engine.connect(remote_cache_dir=str(tmp_path / "cache"))
    assert bounded(lambda: con.sql(f"SELECT count(*) FROM '{url}'").fetchall()) == [(200_000,)]
    assert [r.method for r in fault_server.log][:2] == ["HEAD", "GET"]


def test_a_table_of_new_files_over_sql(fault_server, sample):
    """A fresh connection's query over a file it has not seen: one request
    opens it, the footer is not read again."""
    url = fault_server.add("t.parquet", sample)
    con = engine.connect(threads=2)
    r = bounded(lambda: con.sql(f"SELECT count(*), sum(id) FROM '{url}' WHERE id < 1000"))
    assert r.fetchall() == [(1000, 999 * 1000 // 2)]
    tails = [x for x in fault_server.log if x.range == f"bytes=-{PREFETCH}"]
    assert len(tails) == 1 and not [x for x in fault_server.log if x.method == "HEAD"]


def test_server_refusing_head_across_statements(fault_server, sample, tmp_path):
    """HEAD answered 405: the first statement opens by the suffix read, the
    next ones validate with GET bytes=0-0, and a replaced file is seen."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    url = fault_server.add("t.parquet", sample)
    fault_server.refuse_head = True
    con = engine.connect()
    for _ in range(2):
        assert bounded(lambda: con.sql(Q.format(f"'{url}'")).fetchall()) == local_answer(sample)
    ranges = [r.range for r in fault_server.log if r.method == "GET"]
    assert ranges[0] == f"bytes=-{PREFETCH}" and "bytes=0-0" in ranges
    other = str(tmp_path / "other.parquet")
    pq.write_table(pa.table({"id": [5, 6]}), other)
    fault_server.replace("t.parquet", other)
    got = bounded(lambda: con.sql(f"SELECT count(*), sum(id) FROM '{url}'").fetchall())
    assert got == [(2, 11)]
