"""What a hash aggregation allocates is reserved first: the group table's
and the accumulators' growth (old and new arrays side by side while they
are copied) and the result block while it is finished.  With a HAVING over
many groups the result is finished a slice of groups at a time, so only
the groups that pass are held whole.  Traced with tracemalloc (numpy's
allocations): before, a growth from 512k to 1M groups held ~24 MB nobody
had reserved, and finishing Q18's 15M groups at SF10 ~400 MiB."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from engine.block import Block, Vector
from engine.context import MemoryTracker
from engine.kernels.hashing import normalize_keys
from engine.kernels.hashtable import GroupTable
from engine.operators import group_results
from engine.operators.aggregate import AggregateSink
from planner import logical as L
from planner import types as T
from planner.expressions import Call, ColumnRef, Literal
from tests.engine.test_executor_helpers import agg

ROWS = 16_384
# what consume() allocates per block and does not keep (hashes, group ids,
# normalized keys of one block), and tracemalloc's own bookkeeping
SLACK = 2 << 20


def _sink(having=False):
    key, val = ColumnRef(0, T.BIGINT), ColumnRef(1, T.BIGINT)
    node = L.Aggregate(None, [key], [agg("sum", val), agg("count_star")])
    predicate = None                            # count(*) > 1: 1 group in 16 (below)
    if having:
        predicate = Call("gt", [ColumnRef(2, T.BIGINT), Literal(1, T.BIGINT)], T.BOOLEAN)
    memory = MemoryTracker(1 << 40)
    sink = AggregateSink(node, memory, having=predicate)
    sink.threads = 1
    return sink, memory


def _blocks(groups: int):
    """Blocks over ``groups`` keys, every 16th key twice."""
    keys = np.arange(groups, dtype=np.int64)
    keys = np.concatenate([keys, keys[::16]])
    vals = np.arange(len(keys), dtype=np.int64)
    return [Block([Vector(T.BIGINT, keys[i:i + ROWS]), Vector(T.BIGINT, vals[i:i + ROWS])],
                  len(keys[i:i + ROWS])) for i in range(0, len(keys), ROWS)]


@pytest.fixture(scope="module", autouse=True)
def kernels_loaded():
    """Load the kernels first: loading them allocates Python objects that
    tracemalloc would count against the first traced step."""
    sink, _ = _sink(having=True)
    local = sink.make_local()
    for b, block in enumerate(_blocks(1 << 12)):
        sink.consume(local, block, (b,))
    sink.merge([local])


def _traced(step):
    """(step's result, traced peak growth while it ran)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = step()
        return out, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_group_table_growth_is_reserved():
    memory = MemoryTracker(1 << 40)
    table = GroupTable(2, 0, memory)
    keys = [normalize_keys([b.columns[0]], b.n, null_word=True) for b in _blocks(1 << 20)]

    def insert():
        for k in keys:
            table.insert(k)
    _, traced = _traced(insert)
    assert table.n_groups == 1 << 20
    assert traced <= memory.peak + SLACK, (traced >> 20, memory.peak >> 20)
    table.release()
    assert memory.used == 0


def test_table_and_accumulator_growth_is_reserved():
    sink, memory = _sink()
    blocks = _blocks(1 << 20)
    local = sink.make_local()

    def consume():
        for b, block in enumerate(blocks):
            sink.consume(local, block, (b,))
    _, traced = _traced(consume)
    assert local.n_groups == 1 << 20
    assert traced <= memory.peak + SLACK, (traced >> 20, memory.peak >> 20)
    local.release()
    assert memory.used == 0


@pytest.mark.parametrize("having", [False, True])
def test_finishing_the_result_is_reserved(having):
    sink, memory = _sink(having)
    local = sink.make_local()
    for b, block in enumerate(_blocks(1 << 19)):
        sink.consume(local, block, (b,))
    held = memory.used
    memory.peak = held
    out, traced = _traced(lambda: sink.merge([local]))
    assert out.n == (1 << 15 if having else 1 << 19)
    assert traced <= memory.peak - held + SLACK, (traced >> 20, (memory.peak - held) >> 20)
    assert memory.used == 0


def test_having_over_many_groups_is_finished_in_slices(monkeypatch):
    """The same rows as one finish, while the traced peak is a fraction."""
    results = {}
    for slice_groups in (1 << 30, 1 << 14):
        monkeypatch.setattr(group_results, "FINISH_SLICE_GROUPS", slice_groups)
        sink, memory = _sink(having=True)
        local = sink.make_local()
        for b, block in enumerate(_blocks(1 << 19)):
            sink.consume(local, block, (b,))
        out, traced = _traced(lambda: sink.merge([local]))
        results[slice_groups] = (sorted(zip(*(c.data.tolist() for c in out.columns))), traced)
        assert sink.groups_made == [1 << 19]
        assert memory.used == 0
    (whole, whole_peak), (sliced, sliced_peak) = results[1 << 30], results[1 << 14]
    assert sliced == whole and len(whole) == 1 << 15
    assert sliced_peak < 0.5 * whole_peak, (sliced_peak, whole_peak)
