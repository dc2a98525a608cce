"""memory_limit bounds operators and caches together: the caches (buffer
manager, chunk states) count against it and are evicted first; a query whose
operators need more is a MemoryLimitError with a clear message, never a
crash; chunk states never pin compressed chunks the buffer manager evicted."""

from __future__ import annotations

import ctypes
import gc

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from engine import context
from engine.catalog import buffer_budget
from engine.config import Config
from engine.context import MemoryTracker
from engine.errors import MemoryLimitError
from scan import row_ranges
from scan.io.buffer_manager import BufferManager
from scan.reader import open_parquet
from tests.connections import pqdb_with_tpch
from tpch.queries import query_text


@pytest.fixture(autouse=True, scope="module")
def _return_memory_to_the_os():
    """These queries leave large free chunks in malloc's heap; later tests
    that measure RSS growth (the peak-memory probe) must not reuse them."""
    yield
    row_ranges.clear_chunk_states()
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


@pytest.fixture
def trackers(monkeypatch):
    """The MemoryTracker of every query run while the test runs."""
    seen = []
    original = context.ExecutionContext.__post_init__

    def capture(self):
        original(self)
        seen.append(self.memory)

    monkeypatch.setattr(context.ExecutionContext, "__post_init__", capture)
    return seen


# ------------------------------------------------------------- unit level
class _Source:
    def __init__(self, n):
        self.n = n

    def identity(self):
        return ("mem", self.n)

    def read_into(self, offset, out):
        out[:] = 7


def test_tracker_evicts_caches_before_it_fails():
    bm = BufferManager(1000)
    src = _Source(10_000)
    for off in range(0, 1000, 100):
        bm.get(src, off, 100)
    assert bm.bytes_cached == 1000
    mem = MemoryTracker(1500, caches=(bm,))
    mem.reserve(400, "a hash table")            # 400 + 1000 cached fits
    assert bm.bytes_cached == 1000
    mem.reserve(600, "a sort")                  # 1000 + 1000 > 1500: evict 500
    assert bm.bytes_cached <= 500 and mem.evicted >= 500
    assert mem.used + bm.bytes_cached <= 1500
    with pytest.raises(MemoryLimitError) as err:
        mem.reserve(501, "hash join build table")   # reservations alone pass the limit
    text = str(err.value)
    assert "memory_limit" in text and "hash join build table" in text
    assert "SET memory_limit" in text
    assert mem.used == 1000                     # the failed reservation holds nothing
    mem.release(1000)
    assert mem.used == 0


def test_evicting_many_cache_bytes_gives_them_back(monkeypatch):
    """Evicted chunks are freed, but glibc keeps them in the freeing
    thread's arena: a second Q18 at SF10 under 1500MB peaked 600 MiB above
    the first.  A reservation that evicts TRIM_AFTER_EVICTING bytes or more
    returns the free heap (malloc_trim); smaller evictions do not pay it."""
    import engine.scheduler as scheduler
    calls = []
    monkeypatch.setattr(scheduler, "release_free_memory", lambda: calls.append(1))
    monkeypatch.setattr(context, "TRIM_AFTER_EVICTING", 300)
    bm = BufferManager(1000)
    src = _Source(10_000)
    for off in range(0, 1000, 100):
        bm.get(src, off, 100)
    mem = MemoryTracker(1200, caches=(bm,))
    mem.reserve(300)                            # evicts 100: no trim
    assert mem.evicted == 100 and calls == []
    mem.reserve(400)                            # evicts 400 more: trimmed once
    assert mem.evicted == 500 and calls == [1]


def test_buffer_budget_is_bounded_by_memory_limit():
    assert buffer_budget(Config()) == 1 << 30                   # default: 1 GiB
    assert buffer_budget(Config(memory_limit=100 << 20)) == 50 << 20
    assert buffer_budget(Config(memory_limit=8 << 30, buffer_memory=64 << 20)) == 64 << 20
    con = engine.connect(memory_limit="64MB")
    assert con.catalog.buffer_manager.memory_budget_bytes == 32 << 20
    con.sql("SET memory_limit = '16MB'")
    assert con.catalog.buffer_manager.memory_budget_bytes == 8 << 20
    con.sql("SET buffer_memory = '1MB'")
    assert con.catalog.buffer_manager.memory_budget_bytes == 1 << 20


def _ranged_file(tmp_path):
    n = 50_000
    rng = np.random.default_rng(1)
    table = pa.table({"a": pa.array(rng.integers(0, 1 << 40, n)),
                      "s": pa.array([f"value-{x % 977}-{x}" for x in range(n)])})
    path = tmp_path / "ranged.parquet"
    pq.write_table(table, path, row_group_size=n, data_page_size=4096, compression="zstd")
    return str(path), table


def test_chunk_states_do_not_pin_evicted_chunks(tmp_path):
    path, table = _ranged_file(tmp_path)
    bm = BufferManager(64 << 20)
    pf = open_parquet(path, bm)
    row_ranges.clear_chunk_states()
    got = [pf.read_column(0, 1, row_start=s, row_count=10_000).to_pylist()
           for s in range(0, 50_000, 10_000)]
    assert [v.decode() for v in sum(got, [])] == table.column("s").to_pylist()
    ident = pf.source.identity()
    mine = [k for k in row_ranges._STATES if k[0] == ident]
    assert mine, "ranged reads keep a chunk state"
    bm.invalidate()                              # the chunk leaves the buffer manager ...
    assert not [k for k in row_ranges._STATES if k[0] == ident]    # ... and its states go
    again = pf.read_column(0, 0, row_start=123, row_count=4567).to_pylist()
    assert again == table.column("a").to_pylist()[123:123 + 4567]
    bm.shrink(1 << 40)                           # eviction under memory pressure, too
    assert bm.bytes_cached == 0
    assert not [k for k in row_ranges._STATES if k[0] == ident]


def test_chunk_state_budget_counts_the_compressed_chunks(tmp_path):
    path, _ = _ranged_file(tmp_path)
    pf = open_parquet(path, BufferManager(64 << 20))
    old = row_ranges.chunk_cache_budget()
    try:
        row_ranges.clear_chunk_states()
        row_ranges.set_chunk_cache_budget(1)     # nothing fits: only the state in use stays
        for c in (0, 1):
            pf.read_column(0, c, row_start=0, row_count=1000)
        assert len(row_ranges._STATES) == 1
    finally:
        row_ranges.set_chunk_cache_budget(old)


# ---------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def sf01_answers(tpch_sf01):
    con = pqdb_with_tpch(tpch_sf01, threads=2)
    return {q: con.sql(query_text(q)).fetchall() for q in (1, 18)}


def test_small_memory_limit_is_a_clear_error(tpch_sf01):
    con = pqdb_with_tpch(tpch_sf01, threads=2)
    con.sql("SET memory_limit = '50MB'")
    with pytest.raises(MemoryLimitError) as err:
        con.sql("SELECT * FROM lineitem ORDER BY l_comment, l_orderkey, l_linenumber").fetchall()
    text = str(err.value)
    assert "memory_limit of 50.0 MiB" in text and "SET memory_limit" in text
    assert con.catalog.buffer_manager.bytes_cached <= 25 << 20
    con.sql("SET memory_limit = '1GB'")        # the connection is still usable
    assert con.sql("SELECT count(*) FROM lineitem").fetchone()[0] > 0


def test_moderate_memory_limit_answers_by_evicting_caches(tpch_sf01, sf01_answers, trackers):
    """Operators need P bytes; the limit is 1.6 P, so the cache may hold
    0.8 P: filled first, it must give way while the query runs."""
    con = pqdb_with_tpch(tpch_sf01, threads=1)
    con.sql(query_text(18)).fetchall()      # statistics and feedback: the plan that runs below
    con.sql(query_text(18)).fetchall()
    need = trackers[-1].peak
    limit = int(need * 1.6)
    con.sql(f"SET memory_limit = {limit}")
    # fill the cache up to its budget (limit / 2) with every table's chunks
    for table in ("lineitem", "orders", "partsupp", "part", "customer"):
        columns = con.sql(f"SELECT * FROM {table} LIMIT 0").columns
        con.sql("SELECT " + ", ".join(f"max({c})" for c in columns) + f" FROM {table}").fetchall()
    bm = con.catalog.buffer_manager
    assert bm.bytes_cached > limit - need, "the cache must not leave room for the query"
    trackers.clear()
    assert con.sql(query_text(18)).fetchall() == sf01_answers[18]
    tracker = trackers[-1]
    assert tracker.evicted > 0
    assert bm.bytes_cached + row_ranges.chunk_cache.bytes_cached <= limit


def test_every_tpch_query_answers_or_fails_cleanly_under_a_small_limit(tpch_sf001):
    full = pqdb_with_tpch(tpch_sf001, threads=2)
    tight = pqdb_with_tpch(tpch_sf001, threads=2, memory_limit="1MB", block_rows=4096)
    failed = 0
    for q in range(1, 23):
        sql = query_text(q)
        try:
            got = tight.sql(sql).fetchall()
        except MemoryLimitError as e:
            assert "memory_limit" in str(e)
            failed += 1
            continue
        assert got == full.sql(sql).fetchall(), f"Q{q}"
    assert 0 < failed < 22


# --------------------------------------------------- the fair measurement
def test_runner_measures_every_engine_in_its_own_process(tpch_sf001):
    import io

    from tpch.benchmark import markdown_report, peak_in_subprocess, run_benchmark
    m = peak_in_subprocess("pqdb", tpch_sf001, 2, 6)
    assert "error" not in m, m
    assert m["peak_bytes"] >= m["rss_before_bytes"] > 0 and m["rows"] == 1
    report = run_benchmark(0.01, tpch_sf001, ["pqdb", "duckdb"], [6], 1, 2, cold="none",
                           memory=True, out=io.StringIO())
    entry = report["queries"][6]
    assert entry["pqdb"]["peak_mib"] > 0 and entry["duckdb"]["peak_mib"] > 0
    md = markdown_report(report)
    assert "duckdb peak MiB" in md and "pqdb/duckdb peak" in md


# ------------------------------------------- the aggregation's partitioned merge
def _aggregation_locals(having=False, blocks=8, rows=50_000):
    """An AggregateSink (2 threads) and its two thread-local states over
    ``blocks * rows`` distinct keys, allocated while tracemalloc traces."""
    import tracemalloc

    from engine.block import Block, Vector
    from engine.operators.aggregate import AggregateSink
    from planner import logical as L
    from planner import types as T
    from planner.expressions import Call, ColumnRef, Literal
    from tests.engine.test_executor_helpers import agg

    key, val = ColumnRef(0, T.BIGINT), ColumnRef(1, T.BIGINT)
    node = L.Aggregate(None, [key], [agg("count_star"), agg("min", val), agg("max", val)])
    predicate = None                            # max(v) > 48: about 1 group in 25
    if having:
        predicate = Call("gt", [ColumnRef(3, T.BIGINT), Literal(48, T.BIGINT)], T.BOOLEAN)
    sink = AggregateSink(node, MemoryTracker(1 << 40), having=predicate)
    sink.threads = 2
    rng = np.random.default_rng(3)
    tracemalloc.start()
    locals_ = [sink.make_local() for _ in range(2)]
    for b in range(blocks):
        keys = np.arange(b * rows, (b + 1) * rows, dtype=np.int64)
        sink.consume(locals_[b % 2], Block([Vector(T.BIGINT, keys),
                                            Vector(T.BIGINT, rng.integers(0, 50, rows))], rows),
                     (b,))
    return sink, locals_


def _traced_merge(sink, locals_):
    """(result, bytes the locals hold, traced peak growth during the merge)."""
    import tracemalloc
    held = sum(t.nbytes() + sum(getattr(a, s).nbytes for a in loc.accs for s in a.STATE)
               for loc in locals_ for t in [loc.table])
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        out = sink.merge(locals_)
        return out, held, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


@pytest.fixture
def partitioned_two_locals(monkeypatch):
    """Two locals merge by lookup by default; these tests are about the
    partitioned merge (three threads and more), so they force it."""
    from engine.operators import aggregate
    monkeypatch.setattr(aggregate, "LOOKUP_MERGE_GROUPS", 1 << 62)


def test_partitioned_merge_never_holds_a_local_twice(partitioned_two_locals):
    """The merge moves each local's keys and states into partition order
    array by array, dropping the local's lookup slots first and each array
    once moved: its traced peak stays well below the locals' bytes (copying
    them whole, with the partitions' results, took 1.2x)."""
    sink, locals_ = _aggregation_locals()
    out, held, growth = _traced_merge(sink, locals_)
    assert out.n == 400_000
    assert growth < 0.75 * held, (growth, held)


def test_having_is_applied_to_each_partition(partitioned_two_locals):
    """HAVING filters every merged partition, so the groups that fail it are
    never concatenated: the merge's traced peak is far below the one without."""
    sink, locals_ = _aggregation_locals()
    plain, _, plain_growth = _traced_merge(sink, locals_)
    sink, locals_ = _aggregation_locals(having=True)
    out, _, growth = _traced_merge(sink, locals_)
    want = plain.columns[3].data > 48
    assert out.n == int(want.sum()) > 0
    assert sorted(out.columns[0].data.tolist()) == sorted(plain.columns[0].data[want].tolist())
    assert growth < 0.7 * plain_growth, (growth, plain_growth)
