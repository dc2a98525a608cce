"""Released memory really goes.

A reservation given back while its arrays stay referenced is memory the
limit no longer sees: at TPC-H SF30 Q5 under memory_limit = '5GB' the
released join tables were held until the cyclic garbage collector ran (the
query's row counters kept every operator, the scan kept the context that
holds the counters), and the freed arrays sat in the allocator's
per-thread arenas; the process peaked 0.9 GB past the limit.  Now
releasing drops the arrays first, the counters hold pieces weakly, and
near the limit the tracker returns the allocator's free memory to the OS
(engine.context.MemoryTracker._watch_resident).
"""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from engine.context import MemoryTracker
from engine.memory_probe import current_rss
from engine.operators.hashjoin import JoinTable
from engine.scheduler import tune_allocator

MIB = 1 << 20


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    d = tmp_path_factory.mktemp("release")
    rng = np.random.default_rng(5)
    n = 300_000
    paths = {}
    for name, rows, keys in (("fact", n, 50_000), ("dim", 50_000, 50_000), ("sub", 5_000, 5_000)):
        paths[name] = str(d / f"{name}.parquet")
        pq.write_table(pa.table({"k": rng.integers(0, keys, rows), "j": rng.integers(0, 5_000, rows),
                                 "v": rng.random(rows)}), paths[name], row_group_size=60_000)
    return paths


QUERIES = [
    # a probe chain (two tables built together), a join built on its outer
    # rows, an outer join, a repeated subplan, HAVING
    "SELECT count(*), sum(f.v + d.v + s.v) FROM fact f JOIN dim d ON f.k = d.k "
    "JOIN sub s ON f.j = s.k",
    "SELECT count(*) FROM sub s WHERE s.k IN (SELECT k FROM fact)",
    "SELECT count(*), sum(d.v) FROM fact f RIGHT JOIN dim d ON f.k = d.k",
    "WITH g AS (SELECT k, sum(v) s FROM fact GROUP BY k HAVING count(*) > 5) "
    "SELECT count(*) FROM g a JOIN g b ON a.k = b.k",
]


@pytest.mark.parametrize("analyze", [False, True])
@pytest.mark.parametrize("sql", QUERIES)
def test_no_released_table_waits_for_the_collector(tables, sql, analyze):
    """After a query, nothing of its tables or blocks is left in reference
    cycles (gc.DEBUG_SAVEALL keeps what the collector would free)."""
    con = engine.connect(threads=2)
    for name, path in tables.items():
        con.sql(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    text = ("EXPLAIN ANALYZE " if analyze else "") + sql
    con.sql(text).fetchall()                  # statistics and feedback in place
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        con.sql(text).fetchall()
        gc.collect()
        garbage = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    tables_left = [o for o in garbage if isinstance(o, JoinTable)]
    arrays = [o for o in garbage if isinstance(o, np.ndarray) and o.nbytes >= 64 << 10]
    assert not tables_left, f"{len(tables_left)} join tables in cycles"
    assert not arrays, f"{sum(a.nbytes for a in arrays) >> 10} KiB of arrays in cycles"


def test_near_the_limit_free_allocator_memory_goes_back():
    """Freed arrays left in holes of the heap (a survivor after each few)
    stay resident until trimmed; reservations past half the limit trim
    them, and only when they are that many."""
    tune_allocator()                     # arrays up to 32 MiB from the heap, as in a query
    arrays = [np.ones(256 << 10, np.uint8) for _ in range(1600)]      # 400 MiB
    survivors = arrays[::8]
    del arrays
    gc.collect()
    before = current_rss()
    tracker = MemoryTracker(1 << 30)
    for _ in range(8):                   # 256 MiB: under half the limit, nothing trims
        tracker.reserve(32 * MIB)
    assert tracker.trims == 0
    for _ in range(12):                  # past half the limit
        tracker.reserve(32 * MIB)
    assert tracker.trims == 1, tracker.trims
    freed = before - current_rss()
    assert freed >= 200 * MIB, f"{freed >> 20} MiB given back"
    for _ in range(8):                   # nothing new freed: no second trim
        tracker.release(32 * MIB)
        tracker.reserve(32 * MIB)
    assert tracker.trims == 1, tracker.trims
    assert len(survivors) == 200
