"""Stopping a running query: Connection.interrupt() from another thread,
Ctrl-C (KeyboardInterrupt in the main thread, and SIGINT at the CLI
prompt), and query_timeout.  Every case runs a cross join that would take
minutes, at 1 and 2 threads, and checks: the query raises QueryInterrupted
(QueryTimeout) within a second of the stop, no thread keeps working for it
(the process is idle right after), its reservations are released and the
resident memory is back near where it was, and the connection answers the
next query."""

from __future__ import annotations

import _thread
import os
import select
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from engine import context
from engine.config import Config, parse_duration
from engine.errors import ConfigError, QueryInterrupted, QueryTimeout
from engine.memory_probe import current_rss
from tests.paths import REPO

# a cross join of 200k x 200k rows that reads both sides: minutes of work
LONG_QUERY = "SELECT sum(a.x + b.y) FROM t a, t b"
STOP_WITHIN = 1.0          # seconds from the stop request to the error
RSS_SLACK = 64 << 20       # resident memory after the stop, over the before


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("cancel") / "t.parquet"
    n = 200_000
    rng = np.random.default_rng(5)
    pq.write_table(pa.table({"x": rng.integers(0, 1000, n), "y": rng.random(n)}), path,
                   row_group_size=50_000)
    return str(path)


@pytest.fixture
def contexts(monkeypatch):
    """The ExecutionContext of every query run while the test runs."""
    seen = []
    original = context.ExecutionContext.__post_init__

    def capture(self):
        original(self)
        seen.append(self)

    monkeypatch.setattr(context.ExecutionContext, "__post_init__", capture)
    return seen


def _con(table, threads, **options):
    con = engine.connect(threads=threads, **options)
    con.sql(f"CREATE VIEW t AS SELECT * FROM read_parquet('{table}')")
    assert con.sql("SELECT count(*) FROM t").fetchall() == [(200_000,)]
    con.sql(LONG_QUERY.replace("t a, t b", "t a, (SELECT * FROM t LIMIT 3) b")).fetchall()
    return con


def _stopped(con, contexts, stop, expect=QueryInterrupted, delay=0.5):
    """Run LONG_QUERY, call stop() after ``delay`` seconds (None: the query
    stops itself), and check how it stopped."""
    before = current_rss()
    fired = []

    def fire():
        fired.append(time.monotonic())
        stop()

    if stop is not None:
        threading.Timer(delay, fire).start()
    start = time.monotonic()
    with pytest.raises(expect) as err:
        con.sql(LONG_QUERY).fetchall()
    ended = time.monotonic()
    asked = fired[0] if fired else start + delay
    assert ended - asked < STOP_WITHIN, f"stopped {ended - asked:.2f} s after the request"
    ctx = contexts[-1]
    assert ctx.cancel.active == 0                  # no thread works for it
    assert ctx.memory.used == 0                    # every reservation released
    cpu = time.process_time()
    time.sleep(0.5)                                # a worker left running would burn ~0.5 s
    assert time.process_time() - cpu < 0.2, "a thread kept running after the stop"
    assert current_rss() - before < RSS_SLACK
    assert con.sql("SELECT count(*), max(x) FROM t").fetchall() == [(200_000, 999)]
    return err.value, ended - asked


@pytest.mark.parametrize("threads", [1, 2])
def test_interrupt_from_another_thread(table, contexts, threads):
    con = _con(table, threads)
    err, _ = _stopped(con, contexts, con.interrupt)
    assert type(err) is QueryInterrupted and "interrupted" in str(err)
    con.interrupt()                                # nothing runs: nothing happens
    assert con.sql("SELECT 1").fetchall() == [(1,)]


@pytest.fixture
def sigint_raises():
    """Python's own SIGINT handler, as in an interactive process (a test
    run started in the background has SIGINT ignored, and interrupt_main
    then does nothing)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("threads", [1, 2])
def test_keyboard_interrupt_becomes_the_interrupted_error(table, contexts, threads,
                                                          sigint_raises):
    """Ctrl-C while the API runs a query in the main thread: the workers
    stop and the query raises QueryInterrupted (DuckDB's client raises its
    'Query interrupted' error likewise), caused by the KeyboardInterrupt."""
    con = _con(table, threads)
    err, _ = _stopped(con, contexts, _thread.interrupt_main)
    assert isinstance(err.__cause__, KeyboardInterrupt)


@pytest.mark.parametrize("threads", [1, 2])
def test_query_timeout(table, contexts, threads):
    con = _con(table, threads)
    con.sql("SET query_timeout = '400ms'")
    err, _ = _stopped(con, contexts, None, QueryTimeout, delay=0.4)
    assert "timed out" in str(err) and "query_timeout" in str(err)
    assert isinstance(err, QueryInterrupted)
    con.sql("SET query_timeout = 0")               # 0: none
    assert con.sql("SELECT count(*) FROM t").fetchall() == [(200_000,)]


def test_query_timeout_of_connect(table, contexts):
    con = _con(table, 2, query_timeout="0.3s")
    _stopped(con, contexts, None, QueryTimeout, delay=0.3)


def test_durations():
    assert parse_duration("10s") == 10 and parse_duration("500ms") == 0.5
    assert parse_duration("2 minutes") == 120 and parse_duration("1m") == 60
    assert parse_duration("1 hour 30 minutes") == 5400 and parse_duration("00:01:30") == 90
    assert parse_duration(0) == 0 and parse_duration("1.5") == 1.5
    cfg = Config()
    assert cfg.query_timeout == 0
    cfg.set("query_timeout", "1 min")
    assert cfg.query_timeout == 60
    for bad in ("-1s", "ten seconds", "5 parsecs", ""):
        with pytest.raises(ConfigError):
            cfg.set("query_timeout", bad)


def test_ctrl_c_at_the_cli_prompt(table):
    """The first Ctrl-C at the prompt stops the query (the prompt comes back
    within a second, the error says so) and the next query runs."""
    import pty
    pid, fd = pty.fork()
    if pid == 0:                                   # the child: the CLI on a terminal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.chdir(REPO)
        os.execv(sys.executable, [sys.executable, "-m", "engine.cli", "--set", "threads=2"])
    out = b""

    def read_until(marker: bytes, timeout: float) -> bool:
        nonlocal out
        end = time.monotonic() + timeout
        while marker not in out:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return False
            try:
                out += os.read(fd, 4096)
            except OSError:
                return False
        return True

    try:
        assert read_until(b"pqdb> ", 60), out
        out = b""
        os.write(fd, f"CREATE VIEW t AS SELECT * FROM read_parquet('{table}');\n".encode())
        assert read_until(b"pqdb> ", 30), out
        out = b""
        os.write(fd, (LONG_QUERY + ";\n").encode())
        time.sleep(1.5)
        sent = time.monotonic()
        os.write(fd, b"\x03")                      # Ctrl-C: SIGINT to the foreground job
        assert read_until(b"pqdb> ", 5), out
        assert time.monotonic() - sent < STOP_WITHIN + 0.5
        assert b"interrupted" in out
        out = b""
        os.write(fd, b"SELECT count(*) FROM t;\n")
        assert read_until(b"200000", 30), out
        os.write(fd, b".quit\n")
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)


def test_ctrl_c_of_a_command_exits_130(table):
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "--set", "threads=2", "-c",
         f"CREATE VIEW t AS SELECT * FROM read_parquet('{table}'); {LONG_QUERY};"],
        cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(3)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert time.monotonic() - sent < STOP_WITHIN + 0.5
    assert b"interrupted" in err
